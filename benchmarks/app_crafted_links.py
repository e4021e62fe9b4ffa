"""What a crafted link costs a hosted server: peak memory (RSS) and CPU seconds of `streamlit run app.py`.

    python benchmarks/app_crafted_links.py                  # the three crafted links of the hosted-mode tests
    python benchmarks/app_crafted_links.py --window 60 --after 30 "/encryption?seed=12&dim=256"

For each link: a fresh server on a free loopback port with an empty result cache, one Chromium page (the system
Chromium at /usr/bin/chromium) opens the link; the server process is sampled every 0.25 s (its resident memory
and the CPU time of all its threads, from /proc) for `--window` seconds after the page was opened, then the page
is closed and the server is sampled `--after` seconds more (a run nobody watches should stop). Printed per link:
the server's RSS before the link, its peak, the CPU seconds spent while the page was open and after it closed, and
the warnings the page showed. The server's own start (imports, first page) is measured apart, on the bare
Explorer page of a server that trains nothing (`_idle` row).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

APP = Path(__file__).resolve().parents[1] / "app.py"
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
LINKS = (
    "/encryption?seed=12&synthetic_size=ml1m&dim=256&clients_per_round=500&method=fedmf",
    "/encryption?seed=11&num_negatives=1000&local_epochs=200&batch_size=1",
    "/?num_negatives=1000&local_epochs=10&clients_per_round=50&synthetic_size=ml1m&rounds=1000",
)
TICK = os.sysconf("SC_CLK_TCK")


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime of every thread


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def _start(port: int, cache: str) -> subprocess.Popen:
    log = open(Path(tempfile.mkdtemp(prefix="labcore-app-log-")) / "streamlit.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(APP), "--server.headless", "true", "--server.port", str(port),
         "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
        cwd=APP.parent, env={**os.environ, "LABCORE_CACHE": cache}, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 90
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2)
            return proc
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"streamlit did not start (log: {log.name})")
            time.sleep(0.3)


def _sample(pid: int, seconds: float, peak: int) -> int:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        peak = max(peak, _rss(pid))
        time.sleep(0.25)
    return peak


def measure(browser, link: str, window: float, after: float) -> dict:
    from labcore.app.server import free_port

    port = free_port()
    proc = _start(port, tempfile.mkdtemp(prefix="labcore-app-cache-"))
    try:
        url = f"http://127.0.0.1:{port}"
        # warm the server (imports, the first script run) on a page that trains nothing: a finished run of the tiny set
        warm = browser.new_page()
        warm.goto(url + "/figures")
        warm.wait_for_selector("h1", timeout=120_000)
        time.sleep(3)
        warm.close()
        time.sleep(1)
        rss0, cpu0 = _rss(proc.pid), _cpu_s(proc.pid)
        page = browser.new_page(viewport={"width": 1400, "height": 1600})
        t0 = time.monotonic()
        page.goto(url + link)
        peak = _sample(proc.pid, window, rss0)
        text = page.inner_text("body")
        warnings = [w.strip().splitlines()[0] for w in page.locator("[data-testid=stAlert]").all_inner_texts()]
        cpu_open = _cpu_s(proc.pid) - cpu0
        page.close()
        cpu1 = _cpu_s(proc.pid)
        peak = _sample(proc.pid, after, peak)
        return {"link": link, "rss_before_gb": rss0 / 2**30, "rss_peak_gb": peak / 2**30, "cpu_open_s": cpu_open,
                "cpu_after_close_s": _cpu_s(proc.pid) - cpu1, "window_s": time.monotonic() - t0 - after,
                "alerts": warnings, "budget": "work budget" in text or any("work budget" in w for w in warnings)}
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("links", nargs="*", default=list(LINKS))
    ap.add_argument("--window", type=float, default=90.0, help="seconds the page stays open (default 90)")
    ap.add_argument("--after", type=float, default=30.0, help="seconds sampled after the page closed (default 30)")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    print(f"load average before: {os.getloadavg()}")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        for link in args.links:
            r = measure(browser, link, args.window, args.after)
            print(f"{r['link']}\n  RSS {r['rss_before_gb']:.2f} -> peak {r['rss_peak_gb']:.2f} GiB; CPU "
                  f"{r['cpu_open_s']:.1f} s in {r['window_s']:.0f} s open, {r['cpu_after_close_s']:.1f} s in the "
                  f"{args.after:.0f} s after the page closed; budget message: {r['budget']}")
            for a in r["alerts"]:
                print(f"    alert: {a[:200]}")
            sys.stdout.flush()
        browser.close()
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()

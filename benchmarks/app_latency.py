"""Latency of the Streamlit lab: analytic views and the default Explorer run.

    python benchmarks/app_latency.py            # everything (the browser part needs /usr/bin/chromium)
    python benchmarks/app_latency.py --no-browser

Prints, on this machine:
1. analytic views, warm (what a page computes when a setting changes, without training):
   payload sizes per message part, the round-time model, CKKS sizes (the Encryption page's
   staircase, after the one-time key generation and calibration, which is reported apart);
   target < 100 ms each;
2. the default Explorer run (synthetic small, CoLR@4, d=64, 60 clients, 100 rounds) through the
   app's run hub: time to the first published round (drawing starts) and to the end;
   targets < 1 s and < 10 s on 2 cores;
3. with Chromium: a real `streamlit run app.py` on 127.0.0.1, the Explorer loaded once, then the
   seed changed (a new default-size run each time): time from the change to the first redrawn
   chart and to "finished", as the class sees it.
The machine's load average is printed next to the numbers: other processes slow everything down.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _ms(samples: list[float]) -> str:
    return f"median {statistics.median(samples) * 1e3:7.2f} ms, max {max(samples) * 1e3:7.2f} ms"


def _timeit(fn, reps: int = 30) -> list[float]:
    fn()  # warm
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def analytic() -> None:
    import numpy as np

    from labcore.app.analytic import payload_summary, payload_table
    from labcore.app.state import EXPLORER_BASE
    from labcore.net.wallclock import RoundTimeModel
    from labcore.privacy.ckks import CkksParams
    from labcore.privacy.costs import ckks_costs

    print("1. analytic views (warm; target < 100 ms)")
    cfgs = [EXPLORER_BASE.replace(method=m, up_bits=b) for m in ("fedmf", "colr", "scolr", "svd", "topk")
            for b in (0, 8)]

    def payload():
        for c in cfgs:
            payload_table(c, 3706)
            payload_summary(c, 3706)

    s = _timeit(payload)
    print(f"   payload sizes, {len(cfgs)} configs x (table + summary), N=3706: {_ms(s)} "
          f"({statistics.median(s) / len(cfgs) * 1e3:.2f} ms per config)")

    rng = np.random.default_rng(0)
    model = RoundTimeModel(0.75, 0.25, 7.0, 10.0, ((0.5, 1.0, 1.0), (0.5, 0.25, 0.25)))
    tier = model.assign_tiers(6040, rng)
    up, t_sim = rng.integers(1e4, 1e6, 60).astype(float), rng.random(60)

    def round_time():
        for _ in range(100):
            model.round_time(np.full(60, 5e5), up, t_sim, tier[:60], 0.01)

    s = _timeit(round_time)
    print(f"   round-time model, 100 rounds of 60 clients (two bandwidth tiers): {_ms(s)}")

    params = CkksParams(8192, (60, 40, 40, 60), 40)
    t0 = time.perf_counter()
    ckks_costs(4 * 3706, params)
    cold = time.perf_counter() - t0
    sizes = [r * 3706 for r in (1, 2, 4, 8, 16, 32, 64)] + [64 * 3706]
    t0 = time.perf_counter()
    for n in sizes:
        ckks_costs(n, params)
    first = time.perf_counter() - t0

    def ckks_page():
        for n in sizes:
            ckks_costs(n, params)

    s = _timeit(ckks_page)
    print(f"   CKKS sizes, the Encryption page's 8 uploads (N=8192): {_ms(s)}")
    print(f"      one-time per parameter set: key generation + calibration {cold:.2f} s, "
          f"first serialized sizes of 7 fills {first:.2f} s (cached afterwards; the app keeps them in "
          "st.cache_resource / st.cache_data)")


def explorer_core(reps: int) -> None:
    from labcore.app import jobs
    from labcore.app.state import EXPLORER_BASE
    from labcore.data import load_dataset

    print("2. default Explorer run through the app's run hub (no browser; targets: first round < 1 s, "
          "end < 10 s on 2 cores)")
    data = load_dataset("synthetic", size="small")
    with tempfile.TemporaryDirectory() as tmp:
        hub = jobs.JobHub()
        firsts, ends = [], []
        for seed in range(reps):
            cfg = EXPLORER_BASE.replace(seed=1000 + seed)
            t0 = time.perf_counter()
            job = hub.follow(cfg, data, "bench", tmp)
            first = None
            while not job.done:
                v = job.wait(job.version, 0.05)
                job.touch("bench")
                if first is None and v and job.round >= 1:
                    first = time.perf_counter() - t0
            ends.append(time.perf_counter() - t0)
            firsts.append(first)
            assert job.error is None and job.snapshot.complete, job.error
        print(f"   {EXPLORER_BASE.describe()}, {EXPLORER_BASE.rounds} rounds, {EXPLORER_BASE.clients_per_round} "
              f"clients, synthetic small, {reps} seeds:")
        print(f"   first round published: median {statistics.median(firsts):.3f} s, max {max(firsts):.3f} s")
        print(f"   run finished:          median {statistics.median(ends):.2f} s, max {max(ends):.2f} s")


def explorer_browser(reps: int) -> None:
    from benchmarks.app_load import CHROMIUM, chromium_args, serve

    if not Path(CHROMIUM).exists():
        print("3. browser: skipped (no /usr/bin/chromium; see DEVELOPERS.md)")
        return
    from playwright.sync_api import sync_playwright

    print("3. browser: change the seed on a loaded Explorer (a new default-size run each time)")
    with serve() as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=chromium_args())
        page = browser.new_page(viewport={"width": 1500, "height": 1500})
        page.set_default_timeout(120_000)
        t0 = time.perf_counter()
        page.goto(url + "/")
        page.wait_for_selector(".js-plotly-plot")
        cold_chart = time.perf_counter() - t0
        page.wait_for_function("() => document.body.innerText.includes('round 100 / 100: finished')")
        cold_end = time.perf_counter() - t0
        print(f"   cold page load (browser boots the frontend, server starts the run): first chart "
              f"{cold_chart:.2f} s, finished {cold_end:.2f} s")
        seed = page.locator('input[aria-label="seed"]')
        charts, ends = [], []
        sig = ("() => { const g = document.querySelector('.js-plotly-plot');"
               " return g && g._fullData ? JSON.stringify(g._fullData.map(t => Array.from(t.y || []))) : ''; }")
        page.evaluate("() => new MutationObserver(() => { if (document.body.innerText.includes(': training'))"
                      " window.__trained = true; }).observe(document.body, {subtree: true, childList: true,"
                      " characterData: true})")
        for i in range(reps):
            page.evaluate(f"() => {{ window.__sig = ({sig})(); window.__trained = false; }}")
            seed.fill(str(100 + i))
            t0 = time.perf_counter()
            seed.press("Enter")
            page.wait_for_function(f"() => ({sig})() !== window.__sig", polling=20)  # the chart shows the new run
            charts.append(time.perf_counter() - t0)
            page.wait_for_function("() => window.__trained && document.body.innerText.includes("
                                   "'round 100 / 100: finished')", polling=50)
            ends.append(time.perf_counter() - t0)
        browser.close()
    print(f"   change -> first redrawn chart: median {statistics.median(charts):.2f} s, max {max(charts):.2f} s")
    print(f"   change -> run finished:       median {statistics.median(ends):.2f} s, max {max(ends):.2f} s")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--no-browser", action="store_true")
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args(argv)
    os.environ.setdefault("LABCORE_CACHE", tempfile.mkdtemp(prefix="labcore-latency-"))
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} (1 min) at start")
    analytic()
    explorer_core(a.reps)
    if not a.no_browser:
        explorer_browser(a.reps)
    print(f"load average {os.getloadavg()[0]:.2f} (1 min) at the end")


if __name__ == "__main__":
    main()

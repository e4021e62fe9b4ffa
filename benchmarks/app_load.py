"""Load test: concurrent sessions on one `streamlit run app.py` server (loopback only).

    python benchmarks/app_load.py                      # 20 sessions, both scenarios, websocket clients
    python benchmarks/app_load.py --client browser --sessions 5 --scenario shared

Starts the app on a free port of 127.0.0.1 with an empty result cache, opens N sessions at the
same time and lets each run the default Explorer scenario to the end. A session is either

  ws       (default) a client of Streamlit's own websocket protocol, doing what the browser does
           for this page: ask for the page, apply the server's messages, fire the live part's
           fragment reruns on the server's timers (`auto_rerun`). It measures the server: 20 of
           them cost the machine almost nothing;
  browser  a Chromium page (its own browser context). Each page boots ~10 MB of JavaScript and
           renders plotly charts, so on a 2-core machine 20 of them measure Chromium far more
           than the server.

Two scenarios:

  shared    every session opens the default link (a class opening the lab): the server trains the
            default run once and streams it to everyone;
  distinct  session i opens the default scenario with seed=i: N independent runs training at
            once on the same cores (the worst case).

Reported per scenario: errors (exceptions or error boxes on a page, timeouts, dropped
connections; must be 0), median and 95th-percentile time from opening the page to the first chart
(the first plotly chart the server sends / the browser attaches), and to "finished".
Bounded: at most 40 sessions, a time limit per session, loopback only.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

from labcore.app.server import serve

CHROMIUM = "/usr/bin/chromium"
MAX_SESSIONS = 40


def chromium_args() -> list[str]:
    return ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"]


async def _session(browser, url: str, timeout_s: float) -> dict:
    ctx = await browser.new_context(viewport={"width": 1400, "height": 1200})
    page = await ctx.new_page()
    page.set_default_timeout(timeout_s * 1000)
    console_errors: list[str] = []
    page.on("pageerror", lambda e: console_errors.append(str(e)))
    out = {"url": url, "first_chart": None, "finished": None, "error": None}
    t0 = time.perf_counter()
    try:
        await page.goto(url)
        await page.wait_for_selector(".js-plotly-plot")
        out["first_chart"] = time.perf_counter() - t0
        await page.wait_for_function("() => /round (\\d+) \\/ \\1: finished/.test(document.body.innerText)",
                                     polling=200)
        out["finished"] = time.perf_counter() - t0
        bad = await page.locator("[data-testid=stException], [data-testid=stAlertContentError]").all_inner_texts()
        if bad:
            out["error"] = "page shows: " + " | ".join(b[:200] for b in bad)
        elif console_errors:
            out["error"] = "browser errors: " + " | ".join(console_errors[:3])
    except Exception as e:  # a timeout or a crashed page
        out["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
    finally:
        await ctx.close()
    return out


async def _ws_session(base: str, query: str, timeout_s: float) -> dict:
    """One Streamlit session over the websocket protocol, as the browser runs the Explorer page."""
    import websockets
    from streamlit.proto.Alert_pb2 import Alert
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    out = {"url": base + "/" + (("?" + query) if query else ""), "first_status": None, "first_chart": None,
           "finished": None, "error": None}
    ws_url = base.replace("http://", "ws://") + "/_stcore/stream"
    cache: dict[str, ForwardMsg] = {}
    timers: dict[str, asyncio.Task] = {}
    state = {"page": "", "query": query}
    t0 = time.perf_counter()

    def rerun(fragment_id: str = "") -> bytes:
        msg = BackMsg()
        cs = msg.rerun_script
        cs.query_string, cs.page_script_hash = state["query"], state["page"]
        if fragment_id:
            cs.fragment_id, cs.is_auto_rerun = fragment_id, True
        return msg.SerializeToString()

    async def auto(ws, fragment_id: str, interval: float):  # the browser's timer for a fragment's run_every
        while True:
            await asyncio.sleep(interval)
            await ws.send(rerun(fragment_id))

    try:
        async with websockets.connect(ws_url, subprotocols=["streamlit"], origin=base, max_size=None,
                                      open_timeout=60) as ws:
            await ws.send(rerun())
            async with asyncio.timeout(timeout_s):
                while out["finished"] is None:
                    msg = ForwardMsg()
                    msg.ParseFromString(await ws.recv())
                    kind = msg.WhichOneof("type")
                    if kind == "ref_hash":
                        msg, kind = cache[msg.ref_hash], cache[msg.ref_hash].WhichOneof("type")
                    elif msg.hash and msg.metadata.cacheable:
                        cache[msg.hash] = msg
                    if kind == "new_session":
                        state["page"] = msg.new_session.page_script_hash
                    elif kind == "navigation":
                        state["page"] = msg.navigation.page_script_hash or state["page"]
                    elif kind == "page_info_changed":
                        state["query"] = msg.page_info_changed.query_string
                    elif kind == "auto_rerun":
                        fid = msg.auto_rerun.fragment_id
                        if fid in timers:
                            timers[fid].cancel()
                        timers[fid] = asyncio.create_task(auto(ws, fid, msg.auto_rerun.interval))
                    elif kind == "stop_auto_rerun":
                        for f in (list(msg.stop_auto_rerun.fragment_ids) or list(timers)):
                            if f in timers:
                                timers.pop(f).cancel()
                    elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
                        el = msg.delta.new_element
                        which = el.WhichOneof("type")
                        if out["first_status"] is None and (
                                which == "progress" or (which == "alert" and "training slot" in el.alert.body)):
                            out["first_status"] = time.perf_counter() - t0  # the run's progress or its place in line
                        if which == "plotly_chart" and out["first_chart"] is None:
                            out["first_chart"] = time.perf_counter() - t0
                        elif which == "progress" and ": finished" in el.progress.text:
                            out["finished"] = time.perf_counter() - t0
                        elif which == "exception":
                            raise RuntimeError(f"exception on the page: {el.exception.message[:200]}")
                        elif which == "alert" and el.alert.format == Alert.ERROR:
                            raise RuntimeError(f"error box on the page: {el.alert.body[:200]}")
    except Exception as e:
        out["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    finally:
        for t in timers.values():
            t.cancel()
    return out


async def _scenario(base: str, n: int, distinct: bool, timeout_s: float, client: str) -> list[dict]:
    queries = [f"seed={i + 1}" if distinct else "" for i in range(n)]
    if client == "ws":
        return list(await asyncio.gather(*[_ws_session(base, q, timeout_s) for q in queries]))
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=chromium_args())
        urls = [base + "/" + (f"?{q}" if q else "") for q in queries]
        res = await asyncio.gather(*[_session(browser, u, timeout_s) for u in urls])
        await browser.close()
    return res


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    k = (len(xs) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def report(name: str, res: list[dict], wall: float) -> int:
    errors = [r for r in res if r["error"]]
    status = [r["first_status"] for r in res if r.get("first_status") is not None]
    first = [r["first_chart"] for r in res if r["first_chart"] is not None]
    done = [r["finished"] for r in res if r["finished"] is not None]
    print(f"{name}: {len(res)} sessions, errors {len(errors)}, wall {wall:.1f} s")
    if status:
        print(f"   time to first status (progress or place in line): median {statistics.median(status):.2f} s, "
              f"p95 {_pct(status, 0.95):.2f} s")
    if first:
        print(f"   time to first chart: median {statistics.median(first):.2f} s, p95 {_pct(first, 0.95):.2f} s, "
              f"max {max(first):.2f} s")
    if done:
        print(f"   time to finished:    median {statistics.median(done):.2f} s, p95 {_pct(done, 0.95):.2f} s, "
              f"max {max(done):.2f} s")
    for r in errors:
        print(f"   error at {r['url']}: {r['error']}")
    return len(errors)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--scenario", choices=("shared", "distinct", "both"), default="both")
    ap.add_argument("--timeout", type=float, default=600, help="per session, seconds")
    ap.add_argument("--client", choices=("ws", "browser"), default="ws")
    ap.add_argument("--cold", dest="warm", action="store_false",
                    help="no warm-up session: the first sessions also pay the server's imports")
    a = ap.parse_args(argv)
    if not 1 <= a.sessions <= MAX_SESSIONS:
        ap.error(f"--sessions must be in 1..{MAX_SESSIONS}")
    if a.client == "browser" and not Path(CHROMIUM).exists():
        print(f"needs Chromium at {CHROMIUM} (see DEVELOPERS.md)")
        return 2
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} (1 min) at start; "
          f"{a.sessions} {'websocket' if a.client == 'ws' else 'Chromium'} sessions per scenario")
    errors = 0
    for name in (("shared", "distinct") if a.scenario == "both" else (a.scenario,)):
        with serve() as url:  # a fresh server and an empty cache per scenario
            if a.warm:  # the instructor opened the lab first: imports done, dataset loaded (the run is not cached)
                w = asyncio.run(_ws_session(url, "rounds=2&seed=987654", a.timeout))
                print(f"   warm-up session (cold server, a 2-round run): first chart {w['first_chart']}, error {w['error']}")
            t0 = time.perf_counter()
            res = asyncio.run(_scenario(url, a.sessions, name == "distinct", a.timeout, a.client))
            errors += report(f"{name} ({'seed=i per session' if name == 'distinct' else 'the default link'})",
                             res, time.perf_counter() - t0)
    print(f"load average {os.getloadavg()[0]:.2f} (1 min) at the end")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

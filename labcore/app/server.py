"""Start the lab's Streamlit app on a free loopback port (the browser test and the load benchmark use it)."""
from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "app.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve(cache_dir: str | Path | None = None, start_timeout_s: float = 60):
    """`streamlit run app.py` on 127.0.0.1:<free port> with its own result cache; yields the base URL.

    Raises RuntimeError with the server's log if it does not answer its health check in time.
    """
    port = free_port()
    cache = str(cache_dir or tempfile.mkdtemp(prefix="labcore-app-cache-"))
    log_path = Path(tempfile.mkdtemp(prefix="labcore-app-log-")) / "streamlit.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(APP), "--server.headless", "true",
             "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
             "--server.fileWatcherType", "none"],
            cwd=APP.parent, env={**os.environ, "LABCORE_CACHE": cache}, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + start_timeout_s
        while True:
            try:
                urllib.request.urlopen(url + "/_stcore/health", timeout=2)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"streamlit did not start:\n{log_path.read_text()}")
                time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()

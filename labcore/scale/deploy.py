"""Flower's deployment mode on one machine: a SuperLink and SuperNodes as separate processes, then `flwr run`.

    with LocalFederation(nodes=3) as fed:          # every process is stopped on exit, none left behind
        fed.run(cfg, out="runs/flower")             # flwr run labcore/scale/app --run-config ...

On several machines the same commands are run by hand (docs/scale-out.md): `flower-superlink --insecure`
on the server, `flower-supernode --insecure --superlink <server>:<port> --node-config
"partition-id=<k> num-partitions=<n>"` on each node, then `flwr run` with the app in labcore/scale/app.
Everything here listens on 127.0.0.1 only.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..config import RunConfig
from .federation import check_supported, config_to_text

APP_DIR = Path(__file__).parent / "app"
HOST = "127.0.0.1"
CONNECTION = "labcore-local"


def _bin(name: str) -> str:
    here = Path(sys.executable).parent / name
    return str(here) if here.exists() else name


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _wait_port(port: int, timeout: float, proc: subprocess.Popen, log: Path) -> None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited with {proc.returncode}: {log.read_text()[-2000:]}")
        with socket.socket() as s:
            s.settimeout(0.5)
            if s.connect_ex((HOST, port)) == 0:
                return
        time.sleep(0.3)
    raise TimeoutError(f"nothing listens on {HOST}:{port} after {timeout:.0f} s ({log})")


def flower_env(home: Path) -> dict:
    env = dict(os.environ)
    env.update({"FLWR_HOME": str(home), "FLWR_TELEMETRY_ENABLED": "0", "FLWR_DISABLE_UPDATE_CHECK": "1",
                "FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION": "1", "PYTHONUNBUFFERED": "1",
                # the SuperLink and SuperNodes start flower-superexec / flwr-serverapp / flwr-clientapp by name
                "PATH": os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])})
    return env


class LocalFederation:
    """A SuperLink and `nodes` SuperNodes on 127.0.0.1, each a process (group) of ours, stopped on exit."""

    def __init__(self, nodes: int = 3, workdir: Path | str | None = None, startup_timeout: float = 120.0):
        self.nodes, self.startup_timeout = nodes, startup_timeout
        self._tmp = None if workdir else tempfile.TemporaryDirectory(prefix="labcore-flower-")
        self.workdir = Path(workdir or self._tmp.name)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.env = flower_env(self.workdir / "flwr-home")
        self.procs: list[subprocess.Popen] = []
        self.port = 0

    # --- processes ------------------------------------------------------------------------------
    def _start(self, name: str, args: list[str]) -> tuple[subprocess.Popen, Path]:
        log = self.workdir / f"{name}.log"
        # a session of its own: the SuperLink's ServerApp and a SuperNode's ClientApp processes join it,
        # so stopping the group stops them too
        proc = subprocess.Popen(args, stdout=open(log, "wb"), stderr=subprocess.STDOUT, env=self.env,
                                cwd=self.workdir, start_new_session=True)
        self.procs.append(proc)
        return proc, log

    def start(self) -> "LocalFederation":
        self.port = free_port()
        proc, log = self._start("superlink", [_bin("flower-superlink"), "--insecure", "--host", HOST,
                                              "--port", str(self.port), "--isolation", "subprocess",
                                              "--health-server-address", f"{HOST}:{free_port()}"])
        _wait_port(self.port, self.startup_timeout, proc, log)
        for k in range(self.nodes):
            self._start(f"supernode-{k}", [_bin("flower-supernode"), "--insecure", "--superlink", f"{HOST}:{self.port}",
                                           "--host", HOST, "--port", str(free_port()), "--isolation", "subprocess",
                                           "--node-config", f"partition-id={k} num-partitions={self.nodes}"])
        home = Path(self.env["FLWR_HOME"])
        home.mkdir(parents=True, exist_ok=True)
        (home / "config.toml").write_text(f'[superlink]\ndefault = "{CONNECTION}"\n\n[superlink.{CONNECTION}]\n'
                                          f'address = "{HOST}:{self.port}"\ninsecure = true\n')
        return self

    def pids(self) -> set[int]:
        """Every live process of ours: the ones started here and all their descendants."""
        import psutil

        out = set()
        for p in self.procs:
            try:
                root = psutil.Process(p.pid)
                out |= {root.pid} | {c.pid for c in root.children(recursive=True)}
            except psutil.NoSuchProcess:
                pass
            try:  # processes that left the tree but stayed in the group (e.g. a ClientApp re-parented)
                out |= {q.pid for q in psutil.process_iter() if os.getpgid(q.pid) == p.pid}
            except (ProcessLookupError, psutil.Error):
                pass
        return out

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM to each of our process groups, SIGKILL to what is left after `grace` seconds."""
        import psutil

        seen = self.pids()  # while the SuperLink lives: its detached SuperExec is still its child
        for sig in (signal.SIGTERM, signal.SIGKILL):
            seen |= self.pids()
            pids = {pid for pid in seen if psutil.pid_exists(pid)}
            for p in self.procs:
                try:
                    os.killpg(p.pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass
            for pid in pids:
                try:
                    os.kill(pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass
            _, alive = psutil.wait_procs([psutil.Process(pid) for pid in pids if psutil.pid_exists(pid)],
                                         timeout=grace)
            if not alive:
                break
        for p in self.procs:
            try:
                p.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                pass

    def __enter__(self) -> "LocalFederation":
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()
        if self._tmp is not None:
            self._tmp.cleanup()

    # --- a run ----------------------------------------------------------------------------------
    def run(self, cfg: RunConfig, out: Path | str, draws: str = "engine", timeout: float = 600.0) -> Path:
        """`flwr run` the lab's app on this federation; the ServerApp writes its CSVs to `out`."""
        check_supported(cfg)  # here, not first in the ServerApp, whose error would reach the user inside flwr's log
        out = Path(out).resolve()
        overrides = {"config": config_to_text(cfg), "nodes": self.nodes, "draws": draws, "out": str(out),
                     "timeout": float(timeout)}
        if cfg.encryption == "ckks":  # the nodes read secret.ctx from here, the server only public.ctx
            from .encrypted import write_keys

            overrides["keys"] = str(write_keys(cfg, self.workdir / "ckks-keys").resolve())
        cfg_file = self.workdir / "run-config.toml"
        cfg_file.write_text("".join(f"{k} = {_toml(v)}\n" for k, v in overrides.items()))
        log = self.workdir / "flwr-run.log"
        with open(log, "wb") as fh:
            done = subprocess.run([_bin("flwr"), "run", str(APP_DIR), CONNECTION, "--run-config", str(cfg_file),
                                   "--stream"], stdout=fh, stderr=subprocess.STDOUT, env=self.env, cwd=self.workdir,
                                  timeout=timeout)
        if done.returncode != 0 or not (out / "table.csv").exists():
            raise RuntimeError(f"flwr run failed ({done.returncode}); its log:\n{log.read_text()[-3000:]}\n"
                               f"superlink log:\n{(self.workdir / 'superlink.log').read_text()[-3000:]}")
        return out


def _toml(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'

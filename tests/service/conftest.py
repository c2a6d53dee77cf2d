"""Fixtures of the service tests: deployments, a collector as a real process, a real PostgreSQL 15 server.

Every server listens on 127.0.0.1 on a free port; every wait is bounded; every process started
here is stopped at teardown.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("fastapi", reason="the service extra is not installed: pip install 'dpcloak[service]'")

from dpcloak.service import _network
from dpcloak.service.config import Deployment, analyst_token, load_master_key, write_deployment

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import _collector_load  # the PostgreSQL server the benchmarks start too

START_TIMEOUT = 90.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def make_deployment(directory: Path, *, sensor_rows: int = 5, sensor_cols: int = 10, window_seconds: float = 1.0,
                    past_windows: int = 40, grace_seconds: float = 3600.0, budget: tuple[float, float] = (50.0, 1e-5),
                    period_windows: int = 800, width: float = 12.0, height: float = 8.0) -> Deployment:
    """A floor-plan deployment (12 m x 8 m by default) whose window 0 started ``past_windows`` windows ago.

    The long grace period means windows close only when every sensor reported or when the analyst
    closes them, so a test decides when recovery happens (no race with the wall clock).
    """
    net = _network.floor_plan_network(width=width, height=height, sensor_cols=sensor_cols, sensor_rows=sensor_rows,
                                      epsilon=1.0, delta=1e-6, budget=budget, reading_high=100.0)
    dep = Deployment.create(network=net, window_seconds=window_seconds, period_windows=period_windows,
                            start=time.time() - past_windows * window_seconds,
                            grace_seconds=grace_seconds)
    write_deployment(directory, dep)
    return dep


@pytest.fixture(scope="session")
def deployment_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Deployment]:
    """A 50-sensor deployment shared by the tests that only read its configuration."""
    directory = tmp_path_factory.mktemp("deployment")
    return directory, make_deployment(directory)


class CollectorProcess:
    """``dpcloak serve`` as a real process on 127.0.0.1, forked from the pre-imported zygote (:mod:`._zygote`)
    unless ``fork=False`` or another ``cmd`` is given."""

    def __init__(self, directory: Path, db_url: str, log_path: Path, *, port: int | None = None,
                 extra: tuple[str, ...] = (), file_limit: int | None = None, cmd: list[str] | None = None,
                 fork: bool = True) -> None:
        self.directory = directory
        self.port = free_port() if port is None else port
        self.url = f"http://127.0.0.1:{self.port}"
        key = load_master_key(directory)
        from dpcloak.service.config import load_deployment

        self.deployment = load_deployment(directory)
        self.token = analyst_token(key, deployment_id=self.deployment.deployment_id)
        self.log_path = log_path
        self._log = log_path.open("w")
        fork = fork and cmd is None
        if cmd is None:
            cmd = [sys.executable, "-m", "dpcloak", "serve", "--deployment", str(directory), "--db", db_url,
                   "--host", "127.0.0.1", "--port", str(self.port), *extra]

        def limit_files() -> None:  # the process's soft and hard limit on open files (a common default: 1024)
            import resource

            resource.setrlimit(resource.RLIMIT_NOFILE, (file_limit, file_limit))

        if fork:  # from the pre-imported zygote: the same entry point without ~2 s CPU of imports
            from ._zygote import zygote

            self.proc: Any = zygote().popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=dict(os.environ),
                                            file_limit=file_limit)
        else:
            self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=dict(os.environ),
                                         preexec_fn=None if file_limit is None else limit_files)
        self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"collector exited with {self.proc.returncode}: {self.log_path.read_text()}")
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(self.url + "/api/v1/health", timeout=2.0).status_code == 200:
                    return
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"collector not ready after {START_TIMEOUT} s: {self.log_path.read_text()}")

    def analyst(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {self.token}"}, timeout=60.0)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self._log.close()

    def log(self) -> str:
        return self.log_path.read_text()


@contextlib.contextmanager
def running_collector(directory: Path, db_url: str, log_path: Path) -> Iterator[CollectorProcess]:
    proc = CollectorProcess(directory, db_url, log_path)
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """A real PostgreSQL 15 server (initdb in a temporary directory, 127.0.0.1, free port); yields its base URL."""
    for tool in ("initdb", "pg_ctl", "postgres"):
        if not (_collector_load.PG_BIN / tool).exists():
            pytest.skip(f"PostgreSQL 15 binaries are absent ({_collector_load.PG_BIN / tool} not found); .ci/run "
                        "installs postgresql-15")
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        pytest.skip("running as root without runuser: cannot start PostgreSQL as the postgres user")
    base = Path(tempfile.mkdtemp(prefix="dpcloak-pg-"))
    try:
        with _collector_load.postgres_server(base) as url:
            yield url
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres_server: str) -> str:
    """A fresh, empty database on the test server."""
    import psycopg

    name = "t" + uuid.uuid4().hex[:12]
    with psycopg.connect(postgres_server.replace("postgresql+psycopg", "postgresql") + "/postgres",
                         autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return f"{postgres_server}/{name}"

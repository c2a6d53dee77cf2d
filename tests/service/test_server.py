"""A collector's history across stops: backups (``dpcloak backup``) and the refusal of an empty database.

Against real ``dpcloak serve`` processes on 127.0.0.1. Oracles: the original database's rows read after
the clean stop (reports, closed windows with their maps), the copy's rows, the exit status and stderr of
the refused start.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dpcloak.cli import app
from dpcloak.service.config import load_credential, load_deployment
from dpcloak.service.node import SensorNode
from dpcloak.service.server import HISTORY_FILE
from dpcloak.service.store import Store, sqlite_url

from .conftest import free_port, make_deployment, running_collector

runner = CliRunner()


def _history(url: str, deployment_id: str) -> tuple[dict[int, int], list[tuple[int, list[float]]]]:
    store = Store(url)
    try:
        return (store.report_counts(deployment_id),
                [(r.window, r.source_map) for r in store.windows(deployment_id)])
    finally:
        store.dispose()


@pytest.mark.slow
def test_backup_after_a_clean_stop_holds_everything_and_an_empty_database_is_refused(tmp_path: Path) -> None:
    """Issue 33 item 5: ``dpcloak backup`` after a clean stop holds every report and window; a start on an empty
    ``collector.db`` is refused (one line, status 2) until the backup is restored, which then serves the
    history (or ``--new-history`` is given)."""
    make_deployment(tmp_path, sensor_rows=1, sensor_cols=3, window_seconds=2.0)
    dep = load_deployment(tmp_path)
    db = tmp_path / "collector.db"
    with running_collector(tmp_path, sqlite_url(db), tmp_path / "log") as collector:
        for j in range(3):
            node = SensorNode(deployment=dep, credential=load_credential(tmp_path / "sensors" / f"sensor-{j}.json"),
                              ledger=tmp_path / f"ledger-{j}.db", url=collector.url, attempts=3)
            try:
                w = dep.window_at(time.time())
                assert node.submit(5.0 + j, window=w).outcome == "stored"
            finally:
                node.close()
        with collector.analyst() as client:
            assert client.post(f"/api/v1/windows/{w}/close").status_code == 200
    assert (tmp_path / HISTORY_FILE).stat().st_mode & 0o777 == 0o600
    original = _history(sqlite_url(db), dep.deployment_id)
    assert sum(original[0].values()) == 3 and len(original[1]) == 1
    result = runner.invoke(app, ["backup", str(tmp_path / "backup.db"), "--deployment", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "1 closed window(s), 3 report(s)" in result.stdout
    assert (tmp_path / "backup.db").stat().st_mode & 0o777 == 0o600
    assert _history(sqlite_url(tmp_path / "backup.db"), dep.deployment_id) == original
    again = runner.invoke(app, ["backup", str(tmp_path / "backup.db"), "--deployment", str(tmp_path)])
    assert again.exit_code == 2 and "already exists" in again.stderr

    for suffix in ("", "-wal", "-shm"):  # the database is lost: an empty one in its place
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "dpcloak", "serve", "--deployment", str(tmp_path), "--port", str(free_port())]
    refused = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert refused.returncode == 2, refused.stderr
    assert "holds no history of deployment" in refused.stderr and "--new-history" in refused.stderr
    assert "Traceback" not in refused.stderr + refused.stdout and len(refused.stderr.strip().splitlines()) <= 3
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    os.replace(tmp_path / "backup.db", db)  # restored: the collector starts and serves the history
    with running_collector(tmp_path, sqlite_url(db), tmp_path / "log2") as collector, collector.analyst() as client:
        listing = client.get("/api/v1/windows").json()
        assert [r["window"] for r in listing["windows"]] == [w]
    assert _history(sqlite_url(db), dep.deployment_id) == original


def test_new_history_starts_a_new_one_on_purpose(tmp_path: Path) -> None:
    from dpcloak.errors import InvalidParameterError
    from dpcloak.service.server import build_app
    from dpcloak.service.settings import Settings

    make_deployment(tmp_path, sensor_rows=1, sensor_cols=2)
    other = sqlite_url(tmp_path / "other.db")
    build_app(Settings(directory=tmp_path, check_database=True))
    first = (tmp_path / HISTORY_FILE).read_text()
    with pytest.raises(InvalidParameterError, match="holds no history"):
        build_app(Settings(directory=tmp_path, db_url=other, check_database=True))
    build_app(Settings(directory=tmp_path, db_url=other, check_database=True, new_history=True))
    assert (tmp_path / HISTORY_FILE).read_text() != first and "other.db" in (tmp_path / HISTORY_FILE).read_text()
    build_app(Settings(directory=tmp_path, db_url=other, check_database=True))  # its history now


def test_the_serve_path_imports_no_recovery_metrics_or_numba() -> None:
    """Issue 33 (restart-to-ready): the collector's ingest process imports the web stack, the store and the
    deployment's network, not the map recovery (the solvers, EMD's compiled flow, the local diffusion kernel,
    numba); the recovery process imports them. Oracle: the fresh interpreter's ``sys.modules``."""
    import subprocess
    import sys

    listed = ("print(sorted(m for m in sys.modules if m.split('.')[0] == 'numba' or m.startswith(("
              "'dpcloak.metrics', 'dpcloak.recovery', 'dpcloak.models.graph_local'))))\n")
    code = f"import sys, dpcloak.service.server\n{listed}import dpcloak.recovery\n{listed}"
    served, then = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                  check=True).stdout.strip().splitlines()[-2:]
    assert served == "[]"
    assert "'dpcloak.recovery'" in then  # the listing sees an import when there is one

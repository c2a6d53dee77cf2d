"""``benchmarks/bench_soak.py``: its default rate comes from the collector benchmark's results, and a short
soak against a real collector acknowledges every report, each stored once (checked in the database)."""

from __future__ import annotations

import importlib.util
import json
import os
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "bench_soak.py"


def _module():
    spec = importlib.util.spec_from_file_location("bench_soak", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_default_rate_is_the_collector_benchmarks_rate_per_mode_else_a_one_line_error(tmp_path: Path) -> None:
    soak = _module()
    results = tmp_path / "bench_collector.json"
    results.write_text(json.dumps({"rows": [{"readings_s": 5123.5}, {"readings_s": 19876.0}]}))
    assert soak.default_rate("single", results) == 5123.5
    assert soak.default_rate("batch", results) == 19876.0
    for text in (None, "{}", json.dumps({"rows": [{"readings_s": 0.0}, {"readings_s": -1}]})):
        path = tmp_path / "absent.json" if text is None else results
        if text is not None:
            path.write_text(text)
        with pytest.raises(SystemExit) as info:
            soak.default_rate("batch", path)
        message = str(info.value.code)
        assert message.startswith("bench_soak: ") and "--rate" in message and "\n" not in message


@pytest.mark.slow
def test_short_batch_soak_acknowledges_and_stores_every_report_once(tmp_path: Path) -> None:
    work, out = tmp_path / "work", tmp_path / "soak.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.run([sys.executable, str(SCRIPT), "--mode", "batch", "--rate", "2000", "--seconds", "2",
                           "--warmup", "0", "--json", str(out), "--workdir", str(work)],
                          capture_output=True, text=True, timeout=240, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert doc["windows"] == 4 and doc["window_seconds"] == pytest.approx(0.5)
    assert doc["offered_rate"] == 2000.0 and doc["achieved_rate"] > 0
    assert doc["statuses"] == {"200": 40} and doc["report_statuses"] == {"201": 4000}
    assert doc["errors"] == doc["unanswered_requests"] == doc["lost_acknowledged"] == 0
    assert doc["acknowledged"] == 4000
    assert "PASS: no error responses" in proc.stdout
    assert "PASS: no acknowledged report lost, collector alive" in proc.stdout
    with closing(sqlite3.connect(work / "collector.db")) as db:  # the database itself, not the script's count
        n, slots = db.execute('SELECT COUNT(*), COUNT(DISTINCT sensor_id || \'/\' || "window") FROM reports').fetchone()
    assert n == slots == 4000
    assert set(doc["rows"][0]) >= {"size", "n", "ours_s", "peer_s", "peer_finished", "ratio", "peak_rss_mb"}

"""Progress bars: drawn on a terminal, never with --quiet or when stderr is not a terminal; --json stays pure."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest


def _run(args: list[str], tmp_path: Path, *, terminal: bool) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p), "COLUMNS": "120"}
    env.pop("TTY_COMPATIBLE", None)
    if terminal:
        env["TTY_COMPATIBLE"] = "1"  # rich then draws as on a terminal although stderr is a pipe
    return subprocess.run([sys.executable, "-m", "dpcloak", *args], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=120)


@pytest.mark.parametrize(("terminal", "quiet", "drawn"), [(True, False, True), (True, True, False),
                                                          (False, False, False)])
def test_demo_draws_a_bar_only_on_a_terminal_without_quiet(tmp_path, terminal, quiet, drawn):
    result = _run(["demo", "--out", str(tmp_path), "--json", *(["--quiet"] if quiet else [])], tmp_path,
                  terminal=terminal)
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)  # the bar never mixes into the JSON on stdout
    assert np.isfinite(payload["emd"]) and Path(payload["plot"]).is_file()
    assert ("demo" in result.stderr and "━" in result.stderr) is drawn


def test_heatmap_shows_its_steps_on_a_terminal(tmp_path):
    rng = np.random.default_rng(1)
    points = tmp_path / "p.csv"
    with points.open("w", newline="") as fh:
        csv.writer(fh).writerows([["user", "x", "y"], *[[k % 30, *rng.random(2) * 0.99] for k in range(300)]])
    result = _run(["heatmap", str(points), "--xy", "x,y", "--epsilon", "1", "--resolution", "64", "--json"],
                  tmp_path, terminal=True)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["resolution"] == 64
    assert "heatmap" in result.stderr and "releasing (pyramid)" in result.stderr


def test_quick_reproduce_in_json_says_too_small_to_judge(tmp_path):
    """Off a terminal (in this process: no new interpreter to start), --json is pure and names the quick verdict."""
    from typer.testing import CliRunner

    from dpcloak.cli import app

    result = CliRunner().invoke(app, ["reproduce", "sensor-fig3", "--quick", "--workers", "1", "--out",
                                      str(tmp_path / "r"), "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["quick"] is True and payload["claims"]
    assert {c["verdict"] for c in payload["claims"]} == {"too small to judge (--quick)"}
    assert "nan" not in result.stdout.lower()

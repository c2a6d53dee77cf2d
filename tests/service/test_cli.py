"""``dpcloak deploy init|show``, ``dpcloak sensor run`` and ``dpcloak serve --demo`` as a user runs them.

Oracles: the files written (modes, credentials that verify), the network's own guarantee, the
collector's database after the run; user mistakes give one line on stderr and exit status 2.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dpcloak.cli import app
from dpcloak.service import _network
from dpcloak.service.config import load_deployment
from dpcloak.service.store import sqlite_url

from .conftest import free_port, running_collector

runner = CliRunner()


def test_deploy_init_and_show(tmp_path: Path) -> None:
    site = tmp_path / "site"
    result = runner.invoke(app, ["deploy", "init", str(site), "--width", "6", "--height", "4", "--sensor-cols", "3",
                                 "--sensor-rows", "2", "--window-seconds", "30", "--period-windows", "48"])
    assert result.exit_code == 0, result.output
    dep = load_deployment(site)
    assert dep.n_sensors == 6 and dep.window_seconds == 30.0
    for name in ("collector.key", "analyst.token", "sensors/sensor-5.json"):
        assert (site / name).stat().st_mode & 0o077 == 0, name
    shown = runner.invoke(app, ["deploy", "show", str(site), "--json"])
    assert shown.exit_code == 0, shown.output
    view = json.loads(shown.stdout)
    k = view["releases_per_period"]
    assert k == min(48, dep.sensor_network.max_releases())
    g = dep.sensor_network.guarantee(k)
    assert (view["guarantee_period"]["epsilon"], view["guarantee_period"]["delta"]) == (g.epsilon, g.delta)
    text = runner.invoke(app, ["deploy", "show", str(site)])
    assert "differentially private" in text.stdout and dep.fingerprint in text.stdout
    assert view["policy"]["fills_up"] is False and "skipped for budget" not in text.stdout
    # a declared stride that fills the sliding window: every 2nd window until 12 fill any 48, then a budget skip
    burst = tmp_path / "burst"
    made = runner.invoke(app, ["deploy", "init", str(burst), "--sensor-cols", "2", "--sensor-rows", "2",
                               "--period-windows", "48", "--policy-releases", "12", "--stride", "2"])
    assert made.exit_code == 0, made.output
    dep = load_deployment(burst)
    assert (dep.stride, dep.release_stride, dep.releases_per_period, dep.fills_up) == (2, 2, 12, True)
    shown = runner.invoke(app, ["deploy", "show", str(burst)])
    assert "every 2nd window until 12 fill the sliding window, then none (skipped for budget)" in " ".join(
        shown.stdout.split())
    assert json.loads(runner.invoke(app, ["deploy", "show", str(burst), "--json"]).stdout)["policy"]["fills_up"]
    refused = runner.invoke(app, ["deploy", "init", str(tmp_path / "s0"), "--stride", "0"])
    assert refused.exit_code == 2 and "stride must" in refused.stderr


def test_deploy_init_declares_a_reading_range_by_default(tmp_path: Path) -> None:
    """Issue 33 item 1: no deployment without an upper reading limit. Oracle: the floor's occupancy (one person
    per m²) all at the source location the counter weighs most, recomputed from the model's matrix."""
    site = tmp_path / "site"
    args = ["--width", "6", "--height", "4", "--sensor-cols", "3", "--sensor-rows", "2"]
    result = runner.invoke(app, ["deploy", "init", str(site), *args])
    assert result.exit_code == 0, result.output
    net = load_deployment(site).sensor_network
    assert net.reading_range == (0.0, pytest.approx(24 * float(net.dense_model().max())))
    assert f"readings declared in [0, {net.reading_range[1]:g}] people" in result.stdout
    chosen = runner.invoke(app, ["deploy", "init", str(tmp_path / "b"), *args, "--max-occupancy", "10"])
    assert chosen.exit_code == 0 and load_deployment(tmp_path / "b").sensor_network.reading_range[1] == pytest.approx(
        10 * float(net.dense_model().max()))
    assert runner.invoke(app, ["deploy", "init", str(tmp_path / "c"), *args, "--reading-max", "37.5"]).exit_code == 0
    assert load_deployment(tmp_path / "c").sensor_network.reading_range == (0.0, 37.5)
    unbounded = tmp_path / "net.toml"
    _network.floor_plan_network(width=6.0, height=4.0, sensor_cols=3, sensor_rows=2, epsilon=1.0, delta=1e-6,
                                budget=(20.0, 1e-5)).save(unbounded)
    for extra, words in ((["--network", str(unbounded)], "declares no upper reading limit"),
                         (["--reading-max", "-3"], "--reading-max must be a positive number"),
                         (["--max-occupancy", "0"], "--max-occupancy must be a positive integer")):
        refused = runner.invoke(app, ["deploy", "init", str(tmp_path / "d"), *extra])
        assert refused.exit_code == 2 and words in refused.stderr and "Traceback" not in refused.output, refused.output
    given = runner.invoke(app, ["deploy", "init", str(tmp_path / "e"), "--network", str(unbounded),
                                "--reading-max", "80"])
    assert given.exit_code == 0, given.output
    assert load_deployment(tmp_path / "e").sensor_network.reading_range == (0.0, 80.0)


def test_user_mistakes_are_one_line_errors(tmp_path: Path) -> None:
    site = tmp_path / "site"
    assert runner.invoke(app, ["deploy", "init", str(site), "--sensor-cols", "2", "--sensor-rows", "2"]).exit_code == 0
    for args, words in (
        (["deploy", "init", str(site)], "already holds a deployment"),
        (["deploy", "show", str(tmp_path / "nowhere")], "not found"),
        (["serve"], "exactly one of --deployment"),
        (["serve", "--deployment", str(site), "--port", "0"], "--port"),
        (["deploy", "init", str(tmp_path / "tiny"), "--window-seconds", "1e-300"], "--window-seconds"),
        (["serve", "--deployment", str(site), "--db", "sqlite://", "--port", str(free_port())], "--db"),
        (["serve", "--deployment", str(site), "--db", "sqlite:///:memory:", "--port", str(free_port())], "in memory"),
        (["sensor", "run", "--config", str(site / "deployment.json"), "--deployment", str(site),
          "--url", "http://127.0.0.1:9", "--ledger", str(tmp_path / "l.db")], "credential"),
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert words in result.stderr and "Traceback" not in result.output, (args, result.stderr)


@pytest.mark.slow
def test_sensor_run_reads_stdin(tmp_path: Path) -> None:
    from .conftest import make_deployment

    make_deployment(tmp_path, sensor_rows=1, sensor_cols=3)
    with running_collector(tmp_path, sqlite_url(tmp_path / "c.db"), tmp_path / "log") as collector:
        cmd = [sys.executable, "-m", "dpcloak", "sensor", "run", "--config", str(tmp_path / "sensors/sensor-1.json"),
               "--deployment", str(tmp_path / "deployment.json"), "--url", collector.url, "--ledger",
               str(tmp_path / "s1.db")]
        out = subprocess.run(cmd, input="reading\n4.5\n5.0\nnan\nmany\n", capture_output=True, text=True,
                             timeout=120, env=dict(os.environ))
        assert out.returncode == 0, out.stderr
        assert "stored (HTTP 201)" in out.stdout
        sent = out.stdout.count("stored (HTTP 201)")  # one per window: 2 if a window boundary fell between
        assert sent in (1, 2) and f"{sent} report(s) sent" in out.stdout
        # issue 31 item 4 / issue 28 defect 10: every reading not sent is named, with why; the node goes on
        text = " ".join(out.stdout.split())
        assert "line 4: reading nan is not a finite number; skipped" in text
        assert "line 5: reading must be a number, got 'many'; skipped" in text
        if sent == 1:
            assert re.search(r"line 3: window \d+ already has a reading; skipped", text), text
        # issue 33 item 7: a wrong key (401) or URL path (404) ends the run with status 2 and one line
        cred = json.loads((tmp_path / "sensors/sensor-2.json").read_text())
        (tmp_path / "forged.json").write_text(json.dumps({**cred, "key": "ab" * 32}))
        for config, url, needle in ((tmp_path / "forged.json", collector.url, "HTTP 401"),
                                    (tmp_path / "sensors/sensor-2.json", collector.url + "/wrong", "HTTP 404")):
            bad = subprocess.run([*cmd[:6], str(config), *cmd[7:10], url, "--ledger", str(tmp_path / f"{needle}.db")],
                                 input="3\n", capture_output=True, text=True, timeout=120, env=dict(os.environ))
            assert bad.returncode == 2 and needle in bad.stderr and "Traceback" not in bad.stderr, bad
    with sqlite3.connect(tmp_path / "c.db") as db:
        assert db.execute("SELECT sensor_id FROM reports").fetchall() == [(1,)] * sent


@pytest.mark.slow
def test_serve_demo_runs_and_stops(tmp_path: Path) -> None:
    port = free_port()
    # six windows hold a release window of the demo's policy (every 4th until the hour is full; it starts empty)
    cmd = [sys.executable, "-m", "dpcloak", "serve", "--demo", "--port", str(port), "--windows", "6"]
    out = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    assert f"http://127.0.0.1:{port}/dashboard/" in out.stdout
    token_file = tmp_path / "dpcloak-demo" / "analyst.token"
    assert token_file.read_text().strip() not in out.stdout + out.stderr and str(token_file) in out.stdout
    assert token_file.stat().st_mode & 0o777 == 0o600
    assert "Traceback" not in out.stderr
    with sqlite3.connect(tmp_path / "dpcloak-demo" / "collector.db") as db:
        reports = db.execute("SELECT COUNT(*) FROM reports").fetchone()[0]
        windows = db.execute("SELECT COUNT(*) FROM windows").fetchone()[0]
        reported = db.execute("SELECT COUNT(DISTINCT window) FROM reports").fetchone()[0]
    assert reports >= 40 and windows == reported >= 1  # the demo stops once every window it sent has its map


def test_deploy_init_declares_a_continual_counter_and_areas_and_show_states_them(tmp_path: Path) -> None:
    """``--continual-horizon`` / ``--areas`` on a counts network: written, validated, and ``deploy show`` states the
    counters' guarantee (one window, the sliding window, the horizon) in words; a field network is refused."""
    from dpcloak.sensors import SensorNetwork

    counts = tmp_path / "counts.toml"
    SensorNetwork.from_coordinates(sensors=[[0.0, 0.0], [10.0, 0.0], [20.0, 0.0]], measurement="counts", epsilon=1.0,
                                   delta=1e-6, budget=(10.0, 1e-5), reading_range=(0, 500)).save(counts)
    made = runner.invoke(app, ["deploy", "init", str(tmp_path / "site"), "--network", str(counts), "--period-windows",
                               "24", "--window-seconds", "3600", "--continual-horizon", "8760", "--continual-epsilon",
                               "0.5", "--areas", "hall=0,1;door=2"])
    assert made.exit_code == 0, made.output
    dep = load_deployment(tmp_path / "site")
    assert dep.continual == {"horizon": 8760, "epsilon": 0.5, "delta": 1e-6} and dep.areas == {"hall": [0, 1],
                                                                                                "door": [2]}
    shown = runner.invoke(app, ["deploy", "show", str(tmp_path / "site")])
    text = " ".join(shown.stdout.split())
    assert shown.exit_code == 0 and "continual counter" in text and "not as 24 separate events" in text
    assert f"({dep.counter_guarantee(24)[0]:.3g}, 1e-06)" in text
    field = tmp_path / "field.toml"
    _network.floor_plan_network(width=6.0, height=4.0, sensor_cols=3, sensor_rows=2, epsilon=1.0, delta=1e-6,
                                budget=(20.0, 1e-5)).save(field)
    refused = runner.invoke(app, ["deploy", "init", str(tmp_path / "f"), "--network", str(field), "--reading-max",
                                  "80", "--continual-horizon", "100"])
    assert refused.exit_code == 2 and "counts network" in refused.stderr, refused.output

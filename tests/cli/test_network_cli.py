"""CLI on a sensor network: sensitivity / calibrate / recover with --sensors or --config, and ``network run``.

Oracles: the library objects built directly (SensorNetwork, relation_sensitivity) and a brute-force numpy
maximum over the dense model; user mistakes give one line on stderr, exit status 2, no traceback.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from dpcloak.cli import app
from dpcloak.geo import LocalProjection
from dpcloak.sensors import Relation, SensorNetwork, read_sensors_csv

runner = CliRunner()
sys.path.insert(0, str(Path(__file__).parents[1] / "privacy"))
from _ledger_oracle import budget_total  # noqa: E402

XY = np.array([[0.0, 0.0], [80.0, 10.0], [170.0, 0.0], [260.0, 15.0], [20.0, 120.0], [110.0, 130.0],
               [200.0, 115.0], [280.0, 125.0]])
NAMES = [f"street {k}" for k in range(8)]
NET_ARGS = ["--network-model", "heat", "--diffusion", "2500", "--alpha", "100"]
PRIVACY = ["--epsilon", "1", "--delta", "1e-6", "--budget-epsilon", "8", "--budget-delta", "1e-5"]


def _sensors_csv(path: Path, *, lonlat: bool = True, duplicate: bool = False) -> Path:
    proj = LocalProjection(lon0=174.765, lat0=-36.848)
    lon, lat = proj.inverse(XY[:, 0], XY[:, 1])
    first, second = (lon, lat) if lonlat else (XY[:, 0], XY[:, 1])
    rows = [[n, repr(float(a)), repr(float(b))] for n, a, b in zip(NAMES, first, second, strict=True)]
    if duplicate:
        rows.append(["street 2 (other direction)", rows[2][1], rows[2][2]])
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["name", "lon", "lat"] if lonlat else ["Name", "X", "Y"])
        w.writerows(rows)
    return path


def _counts_csv(path: Path, *, names: list[str]) -> Path:
    rng = np.random.default_rng(0)
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["date", "hour", *names])
        for day in ("2024-03-04", "2024-03-05"):
            for hour in range(6):
                counts = [str(v) for v in rng.poisson(20, len(names))]
                if day == "2024-03-05" and hour == 2:
                    counts[4] = ""  # a counter missed an hour
                w.writerow([day, f"{hour}:00", *counts])
    return path


def _json(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_sensitivity_of_a_network_is_the_exact_relation_sensitivity(tmp_path):
    sensors = _sensors_csv(tmp_path / "s.csv")
    payload = _json(runner.invoke(app, ["sensitivity", "--sensors", str(sensors), *NET_ARGS, "--json"]))
    layout = read_sensors_csv(sensors)
    d2 = ((layout.positions[:, None] - layout.positions[None]) ** 2).sum(axis=2)
    M = np.exp(-d2 / (4 * 2500.0))  # the heat model, peak 1 (numpy, not the library)
    dist = np.sqrt(d2)
    brute = max(np.linalg.norm(M[:, i] - M[:, j]) for i in range(8) for j in range(8) if 0 < dist[i, j] <= 100)
    assert payload["delta2"] == pytest.approx(brute, rel=1e-9)
    assert payload["relation"] == {"kind": "move", "alpha": 100.0, "unit": "m"} and payload["delta2_unit"] == "people"


def test_calibrate_a_network_reports_the_library_mechanism_and_budget(tmp_path):
    sensors = _sensors_csv(tmp_path / "s.csv", lonlat=False)
    payload = _json(runner.invoke(app, ["calibrate", "--sensors", str(sensors), *NET_ARGS, *PRIVACY, "--json"]))
    net = SensorNetwork.from_coordinates(sensors=XY, model="heat", diffusion=2500.0, relation=Relation.move(100.0),
                                         epsilon=1.0, delta=1e-6, budget=(8.0, 1e-5))
    assert payload["sigma"] == net.sigma and payload["delta2"] == pytest.approx(net.delta2, rel=1e-12)
    assert payload["after"]["epsilon"] == net.guarantee(24).epsilon
    assert payload["max_releases"] == net.max_releases()


def test_network_run_releases_a_day_and_recover_reads_the_saved_configuration(tmp_path):
    sensors = _sensors_csv(tmp_path / "s.csv", duplicate=True)
    counts = _counts_csv(tmp_path / "c.csv", names=[*NAMES, "street 2 (other direction)"])
    out = tmp_path / "run"
    payload = _json(runner.invoke(app, [
        "network", "run", "--sensors", str(sensors), "--colocated", "merge", "--counts", str(counts),
        "--where", "date=2024-03-05", *NET_ARGS, *PRIVACY, "--uncertainty-draws", "2", "--out", str(out), "--json"]))
    assert payload["releases"] == 6 and len(payload["periods"]) == 6
    config = SensorNetwork.load(out / "network.toml")
    assert payload["fingerprint"] == config.fingerprint()
    assert payload["spent"]["epsilon"] == config.guarantee(6).epsilon <= 8.0
    assert config.layout.names[2] == "street 2 + street 2 (other direction)"
    with (out / "private_readings.csv").open() as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["period", *config.layout.names] and len(rows) == 7
    assert rows[3][0] == "2024-03-05 2:00" and rows[3][1 + 4] == ""  # the missing counter stays missing
    assert payload["periods"][2]["sensors"] == 7
    assert (out / "maps.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the analyst's side: recover one released hour from the configuration alone
    hour = tmp_path / "hour.csv"
    with hour.open("w", newline="") as fh:
        csv.writer(fh).writerows([["sensor", "reading"], *zip(config.layout.names, rows[1][1:], strict=True)])
    picture = tmp_path / "hour.png"
    rec = _json(runner.invoke(app, ["recover", "--config", str(out / "network.toml"), "--readings", str(hour),
                                    "--png", str(picture), "--json"]))
    lib = config.recover(np.array([float(v) for v in rows[1][1:]]), uncertainty_draws=0)
    assert rec["people"] == pytest.approx(lib.total, rel=1e-6) and rec["present"] == 8
    assert rec["status"] == lib.status
    if rec["status"] == "fit":  # a map inside the noise ball states its uncertainty
        assert rec["uncertainty_m"] is not None and 0 <= rec["uncertainty_m"] <= rec["uncertainty_90_m"]
    else:  # least-residual (the noisy hour is out of the model's reach, as a draw may be): none is stated
        assert rec["status"] == "least-residual" and rec["uncertainty_m"] is None
        assert rec["uncertainty"].startswith("not stated")
    assert picture.read_bytes()[:4] == b"\x89PNG"


def test_network_run_refuses_a_day_over_the_budget_and_writes_nothing(tmp_path):
    sensors = _sensors_csv(tmp_path / "s.csv")
    counts = _counts_csv(tmp_path / "c.csv", names=NAMES)
    out = tmp_path / "run"
    result = runner.invoke(app, ["network", "run", "--sensors", str(sensors), "--counts", str(counts), *NET_ARGS,
                                 "--epsilon", "1", "--delta", "1e-6", "--budget-epsilon", "3", "--budget-delta", "1e-5",
                                 "--out", str(out)])
    assert result.exit_code == 2 and "over the budget" in result.output and "Traceback" not in result.output
    assert not out.exists()


def test_recover_table_prints_the_uncertainty_next_to_the_map(tmp_path):
    sensors = _sensors_csv(tmp_path / "s.csv")
    net = SensorNetwork.from_coordinates(sensors=read_sensors_csv(sensors), model="heat", diffusion=2500.0,
                                         relation=Relation.move(100.0), epsilon=1.0, delta=1e-6, budget=(8.0, 1e-5))
    config = net.save(tmp_path / "net.json")
    f0 = np.zeros(8)
    f0[5] = 40.0
    y = net.privatize(net.dense_model() @ f0, rng=1, simulation=True)
    readings = tmp_path / "r.csv"
    with readings.open("w", newline="") as fh:
        csv.writer(fh).writerows(zip(net.layout.names[:7], y[:7], strict=True))  # street 7 did not report
    result = runner.invoke(app, ["recover", "--config", str(config), "--readings", str(readings)])
    assert result.exit_code == 0, result.output
    assert "uncertainty of the map (EMD" in result.output and "7 of 8" in result.output
    assert "people at (-30 m, 65 m)" in result.output  # the crowd's site (frame centred on the sensors) first
    assert (tmp_path / "r_map.png").is_file()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["sensitivity", "--diffusion", "100"], "--diffusion describe a sensor network"),
        (["sensitivity", "--sensors", "S", "--model", "graph", *NET_ARGS], "synthetic model"),
        (["sensitivity", "--sensors", "S", "--network-model", "heat", "--alpha", "100"], "--diffusion (m²) is"),
        (["sensitivity", "--sensors", "S", "--diffusion", "100"], "needs --alpha"),
        (["sensitivity", "--sensors", "S", "--config", "C.toml", *NET_ARGS], "either --config or --sensors"),
        (["calibrate", "--sensors", "S", *NET_ARGS, "--epsilon", "1", "--delta", "1e-6"], "--budget-epsilon"),
        (["calibrate", "--config", "C.toml", "--epsilon", "1"], "--config fixes epsilon"),
        (["recover", "--sensors", "S", *NET_ARGS, *PRIVACY, "--readings", "R", "--sigma", "1"], "--sigma: fixed by"),
        (["recover", "--readings", "R", "--epsilon", "1"], "--epsilon: for a network"),
        (["network", "run", "--sensors", "S", "--counts", "C", *NET_ARGS, *PRIVACY, "--where", "date"],
         "COLUMN=VALUE"),
        (["sensitivity", "--sensors", "missing.csv", *NET_ARGS], "--sensors missing.csv: no such file"),
    ],
)
def test_mistakes_are_one_line_with_exit_status_2(tmp_path, args, needle):
    sensors = _sensors_csv(tmp_path / "s.csv")
    args = [str(sensors) if a == "S" else a for a in args]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert needle in result.output and "Traceback" not in result.output


def test_network_run_counts_releases_integer_counts_and_states_an_unconditional_guarantee(tmp_path):
    sensors = _sensors_csv(tmp_path / "s.csv")
    counts = _counts_csv(tmp_path / "c.csv", names=NAMES)
    out = tmp_path / "run"
    payload = _json(runner.invoke(app, [
        "network", "run", "--sensors", str(sensors), "--counts", str(counts), "--where", "date=2024-03-05",
        "--measurement", "counts", "--max-count-per-person", "2", *PRIVACY, "--out", str(out), "--json"]))
    config = SensorNetwork.load(out / "network.toml")
    assert config.measurement == "counts" and config.max_count_per_person == 2 and config.delta2 == 2.0
    assert payload["guarantee"] == config.guarantee_text() and "unconditional" in payload["guarantee"]
    assert payload["warning"] is None and {p["status"] for p in payload["periods"]} == {"private counts"}
    with (out / "private_readings.csv").open() as fh:
        released = [[float(v) for v in row[1:] if v] for row in list(csv.reader(fh))[1:]]
    assert all(v == round(v) for row in released for v in row)  # integer counts plus integer noise
    with (out / "maps.csv").open() as fh:
        maps = list(csv.DictReader(fh))
    assert {"status", "misfit", "uncertainty_m", "people"} <= set(maps[0]) and len(maps) == 6 * 8
    assert all(float(m["people"]) >= 0 for m in maps)
    refused = runner.invoke(app, ["network", "run", "--sensors", str(sensors), "--counts", str(counts),
                                  "--measurement", "counts", "--diffusion", "2500", *PRIVACY, "--out", str(out)])
    assert refused.exit_code == 2 and "--diffusion describe a field model" in refused.output


def test_network_run_field_warns_when_the_model_does_not_fit(tmp_path):
    sensors = _sensors_csv(tmp_path / "s.csv")
    counts = tmp_path / "c.csv"  # busy and empty neighbours side by side: no diffusion gives such readings
    with counts.open("w", newline="") as fh:
        csv.writer(fh).writerows([["hour", *NAMES], *[[h, *([900, 0] * 4)] for h in range(3)]])
    result = runner.invoke(app, ["network", "run", "--sensors", str(sensors), "--counts", str(counts),
                                 *NET_ARGS, *PRIVACY, "--uncertainty-draws", "0",
                                 "--reading-unit", "pedestrians", "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "holds if the readings follow the model" in text and "least-residual" in text
    assert "warning:" in text and "use the counts measurement" in text and "pedestrians" in text


def test_network_run_keeps_a_ledger_so_repeated_runs_cannot_pass_the_budget(tmp_path):
    """Issue 28 defect 9: every run used to start from a fresh budget (four runs of one day passed it). Now each
    run charges a persistent ledger (default <out>.ledger) first. Oracle: the budget arithmetic of the saved
    configuration (``guarantee(k)`` against the budget, counted here) and an independent replay of the ledger."""
    sensors = _sensors_csv(tmp_path / "s.csv")
    counts = _counts_csv(tmp_path / "c.csv", names=NAMES)
    out = tmp_path / "run"
    # a budget of epsilon 4 holds two runs of the day's 6 releases, not three (fewer runs to make than with 8)
    privacy = ["--epsilon", "1", "--delta", "1e-6", "--budget-epsilon", "4", "--budget-delta", "1e-5"]
    args = ["network", "run", "--sensors", str(sensors), "--counts", str(counts), "--where", "date=2024-03-05",
            *NET_ARGS, *privacy, "--uncertainty-draws", "0", "--out", str(out)]
    first = _json(runner.invoke(app, [*args, "--json"]))
    rows = first["releases"]
    config = SensorNetwork.load(out / "network.toml")
    assert config.budget[0] == 4.0
    allowed = max(k for k in range(1, 200) if config.guarantee(k).epsilon <= 4.0)
    assert rows >= 1 and allowed // rows >= 2  # at least one run after the first is charged on top of it
    assert first["ledger"] == str(tmp_path / "run.ledger")
    runs = 1
    while (runs + 1) * rows <= allowed:  # every run that still fits is made, and charged
        again = _json(runner.invoke(app, [*args, "--json"]))
        runs += 1
        assert again["releases"] == runs * rows and again["spent"]["epsilon"] == config.guarantee(runs * rows).epsilon
    refused = runner.invoke(app, args)  # the run that would pass the budget
    assert refused.exit_code == 2 and "over the budget" in refused.output and "Traceback" not in refused.output
    assert runs * rows <= allowed < (runs + 1) * rows
    assert budget_total(tmp_path / "run.ledger") == runs * rows  # the refused run charged nothing
    # a deleted ledger (its key file remembers it) is refused, not silently restarted from zero
    (tmp_path / "run.ledger").unlink()
    gone = runner.invoke(app, args)
    assert gone.exit_code == 2 and "missing" in gone.output and "Traceback" not in gone.output
    # --ledger shares one budget across output directories
    shared = tmp_path / "shared.ledger"
    for k in range(runs):
        assert runner.invoke(app, [*args[:-1], str(tmp_path / f"out{k}"), "--ledger", str(shared)]).exit_code == 0
    over = runner.invoke(app, [*args[:-1], str(tmp_path / "outx"), "--ledger", str(shared)])
    assert over.exit_code == 2 and "over the budget" in over.output


def test_network_run_takes_a_declared_diffusion_range(tmp_path: Path) -> None:
    """Issue 29: --diffusion-range LO,HI fixes a guarantee for every diffusion in it (Δ2 the largest over it)."""
    from importlib.resources import files

    from dpcloak.sensors.spec import range_sensitivity

    data = files("dpcloak") / "_data"
    args = ["network", "run", "--sensors", str(data / "irish_wind_stations.csv"), "--counts",
            str(data / "irish_wind_daily.csv"), "--where", "date=1978-01-03", "--measurement", "field",
            "--reading-unit", "knots", "--diffusion", "5.6e10", "--relation", "add-remove", "--epsilon", "1",
            "--delta", "1e-6", "--budget-epsilon", "40", "--budget-delta", "1e-5", "--uncertainty-draws", "0", "-q"]
    point = runner.invoke(app, [*args, "--out", str(tmp_path / "point")])
    ranged = runner.invoke(app, [*args, "--diffusion-range", "3e10,5.6e10", "--out", str(tmp_path / "ranged")])
    assert point.exit_code == 0 and ranged.exit_code == 0, ranged.output
    net = SensorNetwork.load(tmp_path / "ranged" / "network.toml")
    assert net.spec is not None and net.spec.diffusion_range == (3e10, 5.6e10)
    assert net.delta2 == range_sensitivity(net.layout.positions, net.spec, Relation.add_remove())  # type: ignore[union-attr]
    assert net.delta2 > SensorNetwork.load(tmp_path / "point" / "network.toml").delta2
    bad = runner.invoke(app, [*args, "--diffusion-range", "3e10", "--out", str(tmp_path / "bad")])
    assert bad.exit_code == 2 and "--diffusion-range must be LO,HI" in bad.output

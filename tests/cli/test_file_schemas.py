"""Every file dpcloak reads has a schema (issue 31): a wrong type, a missing or extra field, a duplicate and a bad
encoding are each one error line naming the file and the field, exit status 2, never a traceback or a silent answer.

Each case writes one bad file, runs the command that reads it and checks the one line on stderr; the good file it
is derived from is read without error first (so the refusal is due to the one change).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dpcloak.cli import app

runner = CliRunner()
SENSORS = "name,x,y\nA,0,0\nB,120,0\nC,0,120\nD,120,120\n"
COUNTS = "date,hour,A,B,C,D\nd1,8,1,2,3,4\nd1,9,5,6,7,8\n"
NETWORK = ["--network-model", "heat", "--diffusion", "2500", "--alpha", "150"]
PRIVACY = ["--epsilon", "1", "--delta", "1e-6", "--budget-epsilon", "8", "--budget-delta", "1e-5"]


def _one_line(result, *needles):
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "internal error" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def _write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def _sensitivity(sensors: Path):
    return runner.invoke(app, ["sensitivity", "--sensors", str(sensors), *NETWORK])


# --- the good files every bad one below is derived from are read without error ------------------------------------

def test_the_good_files_are_read(tmp_path, saved, site):
    """Each bad file below differs from one of these by the one change its case names."""
    assert _sensitivity(_write(tmp_path / "s.csv", SENSORS)).exit_code == 0
    assert _run(tmp_path, _write(tmp_path / "c.csv", COUNTS)).exit_code == 0
    assert _recover(_write(tmp_path / "r.csv", READINGS)).exit_code == 0
    good = runner.invoke(app, ["calibrate", "--config", str(saved)])
    assert good.exit_code == 0, good.output
    assert runner.invoke(app, ["deploy", "show", str(site)]).exit_code == 0
    assert _heatmap(_write(tmp_path / "p.csv", POINTS)).exit_code == 0


# --- sensors CSV --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "needles"), [
    (SENSORS.replace("120,0", "12O,0"), (":3:", "x = '12O'", "not numbers")),  # wrong type (letter O)
    (SENSORS.replace("B,120,0", "B,inf,0"), (":3:", "x must be a finite number")),
    ("name,x\nA,0\nB,120\n", ("must name lon and lat", "x and y")),  # missing field
    ("name,x,y,height\nA,0,0,2\nB,120,0,2\n", (":1:", "unknown column 'height'")),  # extra field
    (SENSORS.replace("B,120,0", "B,120,0,5"), (":3:", "4 fields, but the header has 3")),  # extra field in a row
    (SENSORS.replace("C,0,120", "A,0,120"), (":4:", "sensor name 'A' is already used on line 2")),  # duplicate
    ("name,x,y,x\nA,0,0,1\n", (":1:", "column 'x' appears twice")),  # duplicate column
    ("name,x,y,X\nA,0,0,1\n", (":1:", "'x' and 'X' both give the x")),  # duplicate column, other case
    (SENSORS.replace("A,", "Zürich,").encode("latin-1"), (":2:", "not UTF-8 text (byte 0xfc)")),  # Latin-1
    (SENSORS.encode("utf-16"), ("UTF-16 (little-endian)", "save it as UTF-8")),  # UTF-16
])
def test_sensors_csv(tmp_path, text, needles):
    bad = _write(tmp_path / "s.csv", text)
    _one_line(_sensitivity(bad), f"--sensors {bad}", *needles)


# --- counts CSV ---------------------------------------------------------------------------------------------------

def _run(tmp_path: Path, counts: Path):
    sensors = _write(tmp_path / "s.csv", SENSORS)
    return runner.invoke(app, ["network", "run", "--sensors", str(sensors), "--counts", str(counts), *NETWORK,
                               *PRIVACY, "--out", str(tmp_path / "out"), "--uncertainty-draws", "0"])


@pytest.mark.parametrize(("text", "needles"), [
    (COUNTS.replace("1,2,3,4", "1,two,3,4"), (":2:", "count 'two' is not a number", "column 'B'")),  # wrong type
    (COUNTS.replace("1,2,3,4", "1,-2,3,4"), (":2:", "finite and >= 0")),
    ("date,hour,A,B,C\nd1,8,1,2,3\n", ("no column for counter(s) ['D']",)),  # missing field
    (COUNTS.replace("d1,9,5,6,7,8", "d1,9,5,6,7,8,9"), (":3:", "7 fields, but the header has 6")),  # shifted
    (COUNTS.replace("d1,9,5,6,7,8", "d1,5,6,7,8"), (":3:", "5 fields, but the header has 6")),  # missing cell
    ("date,hour,A,B,C,D,A\nd1,8,1,2,3,4,5\n", (":1:", "column 'A' appears twice")),  # duplicate
    (COUNTS.replace("d1", "dé").encode("latin-1"), (":2:", "not UTF-8 text")),  # Latin-1
    (COUNTS.encode("utf-16"), ("UTF-16",)),  # UTF-16
])
def test_counts_csv(tmp_path, text, needles):
    bad = _write(tmp_path / "c.csv", text)
    _one_line(_run(tmp_path, bad), f"--counts {bad}", *needles)


# --- readings CSV (recover) ---------------------------------------------------------------------------------------

READINGS = "position,reading\n" + "".join(f"{j / 5:g},0.5\n" for j in range(1, 6))


def _recover(readings: Path):
    return runner.invoke(app, ["recover", "--readings", str(readings), "--sigma", "0.1", "--n", "10", "--m", "5"])


@pytest.mark.parametrize(("text", "needles"), [
    (READINGS.replace("0.4,0.5", "0.4,half"), (":3:", "reading 'half' is not a number")),  # wrong type
    (READINGS.replace("0.4,0.5", "0.4,-inf"), (":3:", "reading must be a finite number")),  # ±inf refused
    (READINGS.replace("0.4,0.5", "0.4,0.5,1"), (":3:", "expected two columns")),  # extra field
    (READINGS.replace("0.4,0.5", "0.4"), (":3:", "expected two columns")),  # missing field
    (READINGS.replace("0.4,0.5", "0.2,0.5"), (":3:", "position 0.2 is already listed on line 2")),  # duplicate
    (READINGS.replace("reading", "lecture é").encode("latin-1"), (":1:", "not UTF-8 text")),
    (READINGS.encode("utf-16"), ("UTF-16",)),
])
def test_readings_csv(tmp_path, text, needles):
    bad = _write(tmp_path / "r.csv", text)
    _one_line(_recover(bad), f"--readings {bad}", *needles)


# --- network configuration (network.toml / .json) -----------------------------------------------------------------

@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A configuration saved by ``network run`` (read only: each case writes its bad copy beside it)."""
    tmp_path = tmp_path_factory.mktemp("saved")
    sensors = _write(tmp_path / "s.csv", SENSORS)
    result = runner.invoke(app, ["network", "run", "--sensors", str(sensors), "--counts",
                                 str(_write(tmp_path / "c.csv", COUNTS)), *NETWORK, *PRIVACY, "--out",
                                 str(tmp_path / "out"), "--uncertainty-draws", "0"])
    assert result.exit_code == 0, result.output
    return tmp_path / "out" / "network.toml"


def _edit(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


@pytest.mark.parametrize(("change", "needles"), [
    (lambda t: _edit(t, "epsilon = 1.0", 'epsilon = "1"'), ("[privacy] epsilon must be a number", "'1'")),
    (lambda t: _edit(t, "epsilon = 1.0\n", ""), ("[privacy] must have 'epsilon'",)),  # missing
    (lambda t: _edit(t, "epsilon = 1.0\n", "epsilon = 1.0\nepsilom = 2.0\n"), ("unknown key 'epsilom'",)),  # extra
    (lambda t: t + "\n[extras]\nx = 1\n", ("unknown table [extras]",)),
    (lambda t: _edit(t, '"A", "B"', '"A", "A"'), ("[sensors] names must be unique: 'A'",)),  # duplicate
    (lambda t: _edit(t, "[1], [2]", "[1], [1]"), ("[sensors] groups must hold each input row",)),  # duplicate group
    (lambda t: _edit(t, "[1], [2]", "[1], [7]"), ("[sensors] groups must hold each input row",)),  # out of range
    (lambda t: t.encode("utf-16"), ("UTF-16",)),
    (lambda t: t.replace("dpcloak", "dpclöak").encode("latin-1"), ("not UTF-8 text",)),
])
def test_network_configuration(saved, tmp_path, change, needles):
    text = change(saved.read_text())
    bad = _write(tmp_path / "bad.toml", text)
    _one_line(runner.invoke(app, ["calibrate", "--config", str(bad)]), f"--config {bad}", *needles)


# --- deployment.json and sensor credentials -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def site(tmp_path_factory):
    pytest.importorskip("fastapi", reason="the service extra is not installed: pip install 'dpcloak[service]'")
    directory = tmp_path_factory.mktemp("deploy") / "site"
    result = runner.invoke(app, ["deploy", "init", str(directory), "--sensor-cols", "2", "--sensor-rows", "2"])
    assert result.exit_code == 0, result.output
    return directory


def _json_edit(path: Path, change) -> str:
    data = json.loads(path.read_text())
    change(data)
    return json.dumps(data)


def _set(data, keys, value):
    for key in keys[:-1]:
        data = data[key]
    if value is KeyError:
        del data[keys[-1]]
    else:
        data[keys[-1]] = value


@pytest.mark.parametrize(("keys", "value", "needles"), [
    (["window_seconds"], "60", ("window_seconds must be a number", "'60'")),  # wrong type
    (["period_windows"], 14.5, ("period_windows must be an integer",)),
    (["start"], KeyError, ("field 'start' of the deployment file is missing",)),  # missing
    (["extra"], 1, ("unknown field 'extra'",)),  # extra
    (["network", "privacy", "delta"], [1e-6], ("[privacy] delta must be a number",)),  # nested wrong type
    (["network", "sensors", "names"], ["a", "a", "b", "c"], ("[sensors] names must be unique: 'a'",)),  # duplicate
    (["network", "sensors", "groups"], [[0], [0], [2], [3]], ("groups must hold each input row",)),
])
def test_deployment_file(site, tmp_path, keys, value, needles):
    bad = _write(tmp_path / "deployment.json", _json_edit(site / "deployment.json", lambda d: _set(d, keys, value)))
    _one_line(runner.invoke(app, ["deploy", "show", str(bad)]), f"DIRECTORY {bad}", *needles)


@pytest.mark.parametrize("encoding", ["utf-16", "latin-1"])
def test_deployment_file_encoding(site, tmp_path, encoding):
    text = (site / "deployment.json").read_text().replace('"version"', '"versión"' if encoding == "latin-1" else
                                                          '"version"')
    bad = _write(tmp_path / "deployment.json", text.encode(encoding))
    _one_line(runner.invoke(app, ["deploy", "show", str(bad)]), f"DIRECTORY {bad}",
              "UTF-16" if encoding == "utf-16" else "not UTF-8 text")


def _sensor_run(site: Path, credential: Path, ledger: Path):
    return runner.invoke(app, ["sensor", "run", "--config", str(credential), "--deployment", str(site),
                               "--url", "http://127.0.0.1:9", "--ledger", str(ledger)], input="")


@pytest.mark.parametrize(("keys", "value", "needles"), [
    (["sensor"], "0", ("sensor must be an integer", "'0'")),  # wrong type
    (["key"], KeyError, ("field 'key' of the sensor credential file is missing",)),  # missing
    (["role"], "admin", ("unknown field 'role'",)),  # extra
])
def test_credential_file(site, tmp_path, keys, value, needles):
    credential = site / "sensors" / "sensor-0.json"
    bad = _write(tmp_path / "sensor-0.json", _json_edit(credential, lambda d: _set(d, keys, value)))
    _one_line(_sensor_run(site, bad, tmp_path / "l.db"), f"--config {bad}", *needles)


def test_credential_file_encoding(site, tmp_path):
    bad = _write(tmp_path / "sensor-0.json", (site / "sensors" / "sensor-0.json").read_text().encode("utf-16"))
    _one_line(_sensor_run(site, bad, tmp_path / "l.db"), f"--config {bad}", "UTF-16")


# --- the ledger path ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["directory", "not a database"])
def test_ledger_path(site, tmp_path, kind):
    ledger = tmp_path / "ledger.db"
    if kind == "directory":
        ledger.mkdir()
    else:
        ledger.write_text("these are not the bytes of a SQLite database\n" * 20)
    _one_line(_sensor_run(site, site / "sensors" / "sensor-0.json", ledger), "--ledger", "ledger.db")


# --- heatmap points CSV -------------------------------------------------------------------------------------------

POINTS = "user,lon,lat,time\n1,174.762,-36.848,t0\n1,174.763,-36.849,t1\n2,174.764,-36.847,t2\n"


def _heatmap(points: Path):
    return runner.invoke(app, ["heatmap", str(points), "--epsilon", "1", "--centre", "174.762,-36.848", "--size",
                               "2000", "--resolution", "16", "--quiet"])


@pytest.mark.parametrize(("text", "needles"), [
    (POINTS.replace("174.763", "east"), (":3:", "lon = 'east' is not a finite number")),  # wrong type
    (POINTS.replace("-36.847", "inf"), (":4:", "lat = 'inf' is not a finite number")),
    (POINTS.replace("\n2,", "\n,"), (":4:", "the user id ('user') is empty")),
    (POINTS.replace("user,", "who,"), (":1:", "no column 'user' (the user id)")),  # missing column
    (POINTS.replace(",t1", ",t1,x"), (":3:", "5 fields, but the header has 4")),  # extra field
    (POINTS.replace(",t1", ""), (":3:", "3 fields, but the header has 4")),  # missing field
    (POINTS.replace("time", "lat"), (":1:", "column 'lat' appears twice")),  # duplicate column
    (POINTS.replace("t0", "Zürich").encode("latin-1"), (":2:", "not UTF-8 text (byte 0xfc)")),  # Latin-1
    (POINTS.encode("utf-16"), ("UTF-16",)),  # UTF-16
])
def test_heatmap_points_csv(tmp_path, text, needles):
    bad = _write(tmp_path / "p.csv", text)
    _one_line(_heatmap(bad), f"POINTS {bad}", *needles)

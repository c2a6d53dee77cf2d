"""The configuration file fixes the guarantee: round trips, fingerprint, refusals; TOML read by tomllib."""

import json
import tomllib

import numpy as np
import pytest

from dpcloak.errors import InvalidParameterError
from dpcloak.geo import LocalProjection
from dpcloak.sensors import Relation, SensorNetwork
from dpcloak.sensors.config import to_toml

POSITIONS = np.array([[0.0, 0.0], [90.0, 5.0], [185.0, 0.0], [40.0, 110.0], [150.0, 120.0]])


def _lonlat_network(**kw):
    lon, lat = LocalProjection(lon0=-0.1276, lat0=51.5072).inverse(POSITIONS[:, 0], POSITIONS[:, 1])
    args = dict(sensors=np.column_stack([lon, lat]), lonlat=True, names=["a", "b", "c", "d", "e \"quoted\""],
                relation=Relation("move-or-add-remove", 120.0, "m"), epsilon=0.5, delta=1e-7, budget=(4.0, 1e-6),
                model="heat-walls", sources="grid", spacing=40.0, margin=50.0, diffusion=45.0**2,
                reading_range=(0.0, 5000.0))
    args.update(kw)
    return SensorNetwork.from_coordinates(**args)


@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_save_load_round_trip_keeps_the_guarantee_and_the_fingerprint(tmp_path, suffix):
    net = _lonlat_network()
    path = net.save(tmp_path / f"network{suffix}")
    text = path.read_text(encoding="utf-8")
    data = tomllib.loads(text) if suffix == ".toml" else json.loads(text)  # independent parsers
    assert data == json.loads(json.dumps(net.to_dict()))
    back = SensorNetwork.load(path)
    assert back.delta2 == net.delta2 and back.sigma == net.sigma and back.resolution == net.resolution
    assert back.guarantee(10) == net.guarantee(10)
    assert back.fingerprint() == net.fingerprint()
    np.testing.assert_array_equal(back.dense_model(), net.dense_model())
    assert back.layout.names == net.layout.names and back.relation == net.relation


def test_fingerprint_changes_with_every_privacy_parameter_and_not_with_derived_numbers():
    base = _lonlat_network().fingerprint()
    assert len(base) == 64 and int(base, 16) >= 0
    for change in (dict(epsilon=0.6), dict(delta=1e-8), dict(budget=(5.0, 1e-6)), dict(diffusion=50.0**2),
                   dict(relation=Relation.move(120.0)), dict(reading_range=(0.0, 4000.0)), dict(spacing=45.0)):
        assert _lonlat_network(**change).fingerprint() != base, change


def test_a_file_whose_stated_numbers_do_not_match_is_refused(tmp_path):
    net = _lonlat_network()
    data = net.to_dict()
    data["derived"]["sigma"] *= 0.5  # someone halved the noise in the file
    with pytest.raises(InvalidParameterError, match=r"states sigma=.*but the model and relation give"):
        SensorNetwork.from_dict(data)
    del data["derived"]
    assert SensorNetwork.from_dict(data).sigma == net.sigma


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda d: d.update(format="other/1"), "format must be 'dpcloak.sensor-network/1'"),
        (lambda d: d.pop("relation"), r"must have a \[relation\] table"),
        (lambda d: d["privacy"].pop("epsilon"), r"\[privacy\] must have 'epsilon'"),
        (lambda d: d["privacy"].update(accountant="pld"), "accountant must be 'closed'"),
        (lambda d: d["readings"].update(unit=""), "reading_unit must be a non-empty unit label"),
        (lambda d: d.update(measurement={"kind": "heat"}), r"\[measurement\] kind must be 'counts' or 'field'"),
        (lambda d: d.update(measurement={"kind": "counts"}), r"a counts configuration has no \[relation\]"),
        (lambda d: d["relation"].pop("unit"), "relation unit must be given"),
        (lambda d: d["sensors"].update(x=[0.0]), "x and y must be lists of the same length"),
    ],
)
def test_malformed_configurations_are_refused(edit, match):
    data = _lonlat_network().to_dict()
    edit(data)
    with pytest.raises(InvalidParameterError, match=match):
        SensorNetwork.from_dict(data)


def test_file_errors(tmp_path):
    net = _lonlat_network()
    with pytest.raises(InvalidParameterError, match=r"must end in .toml or .json"):
        net.save(tmp_path / "n.yaml")
    with pytest.raises(InvalidParameterError, match="not found"):
        SensorNetwork.load(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[privacy\n", encoding="utf-8")
    with pytest.raises(InvalidParameterError, match="not valid TOML"):
        SensorNetwork.load(bad)


def test_toml_writer_escapes_strings_and_refuses_non_finite_numbers():
    text = to_toml({"a": 'x "y" \\ z\n', "t": {"v": [1, 2.5, True], "s": ["é"]}})
    assert tomllib.loads(text) == {"a": 'x "y" \\ z\n', "t": {"v": [1, 2.5, True], "s": ["é"]}}
    with pytest.raises(InvalidParameterError, match="non-finite"):
        to_toml({"x": float("inf")})


def test_a_floor_plan_room_round_trips_and_bounds_the_grid(tmp_path):
    """A building floor: 20 m x 12 m room, 1 m grid of sources, reflecting walls, sensors inside."""
    sensors = np.array([[2.5, 2.5], [10.0, 6.0], [17.5, 9.5], [5.0, 10.0]])
    net = SensorNetwork.from_coordinates(sensors=sensors, model="heat-walls", sources="grid", spacing=1.0,
                                         room=((0.0, 20.0), (0.0, 12.0)), diffusion=4.0,
                                         relation=Relation.move(1.5), epsilon=1.0, delta=1e-6, budget=(5.0, 1e-5))
    src = net.source_positions
    assert net.n_sources == 240 and src[:, 0].min() == 0.5 and src[:, 1].max() == 11.5
    back = SensorNetwork.load(net.save(tmp_path / "floor.toml"))
    assert back.fingerprint() == net.fingerprint() and back.spec.room == ((0.0, 20.0), (0.0, 12.0))
    with pytest.raises(InvalidParameterError, match="sensors must lie inside room"):
        SensorNetwork.from_coordinates(sensors=sensors + 10.0, model="heat-walls", sources="grid", spacing=1.0,
                                       room=((0.0, 20.0), (0.0, 12.0)), diffusion=4.0, relation=Relation.move(1.5),
                                       epsilon=1.0, delta=1e-6, budget=(5.0, 1e-5))
    with pytest.raises(InvalidParameterError, match=r"either room .* or margin"):
        SensorNetwork.from_coordinates(sensors=sensors, model="heat", sources="grid", spacing=1.0, margin=2.0,
                                       room=((0.0, 20.0), (0.0, 12.0)), diffusion=4.0, relation=Relation.move(1.5),
                                       epsilon=1.0, delta=1e-6, budget=(5.0, 1e-5))

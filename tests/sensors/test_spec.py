"""A declared range of diffusions: Δ2 is the largest over the range, certified (dpcloak.sensors.spec).

Oracle: relation_sensitivity of the model rebuilt at 300 diffusions spread over the range (a dense grid the
function under test does not use), and the network's calibration, text and file built on the result.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpcloak.errors import InvalidParameterError
from dpcloak.privacy.sensitivity import Relation, relation_sensitivity
from dpcloak.sensors import ModelSpec, SensorNetwork, build_model
from dpcloak.sensors.spec import RANGE_POINTS, RANGE_RATIO, range_sensitivity

POS = np.random.default_rng(0).uniform(0, 600, (16, 2))
MOVE = Relation.move(150.0)
HEAT = {"sources": "grid", "spacing": 100.0, "margin": 50.0}


def _dense(kind: str, lo: float, hi: float, **extra: object) -> list[float]:
    return [relation_sensitivity(build_model(POS, ModelSpec(kind=kind, diffusion=float(t), **extra)), MOVE)
            for t in np.geomspace(lo, hi, 300)]


def test_graph_range_is_the_sensitivity_at_its_low_end_and_bounds_every_diffusion_in_it() -> None:
    spec = ModelSpec(kind="graph", diffusion=20000.0, diffusion_range=(10000.0, 40000.0))
    stated = range_sensitivity(POS, spec, MOVE)
    dense = _dense("graph", 10000.0, 40000.0)
    assert max(dense) <= stated and stated == dense[0]
    point = relation_sensitivity(build_model(POS, ModelSpec(kind="graph", diffusion=20000.0)), MOVE)
    assert point < max(dense)  # weakened: Δ2 at the point diffusion under-protects the models at the low end


def test_heat_range_bounds_every_diffusion_in_it_within_its_stated_slack() -> None:
    spec = ModelSpec(kind="heat", diffusion=20000.0, diffusion_range=(10000.0, 40000.0), **HEAT)
    stated = range_sensitivity(POS, spec, MOVE)
    dense = _dense("heat", 10000.0, 40000.0, **HEAT)
    points = min(RANGE_POINTS, math.ceil(math.log(4.0) / math.log(RANGE_RATIO)) + 1)
    slack = 2 * math.sqrt(len(POS)) * math.log(4.0) / (points - 1) / math.e  # ‖v‖₁·√m·ln(r)/e, r = 4^(1/(n-1))
    assert max(dense) <= stated <= max(dense) + slack * (1 + 1e-9)  # the grid ratio in floating point


def test_a_network_with_a_range_calibrates_to_it_and_says_so() -> None:
    kwargs = {"sensors": POS, "relation": MOVE, "epsilon": 1.0, "delta": 1e-6, "budget": (10.0, 1e-5),
              "diffusion": 20000.0}
    point = SensorNetwork.from_coordinates(**kwargs)
    ranged = SensorNetwork.from_coordinates(diffusion_range=(10000.0, 40000.0), **kwargs)
    assert ranged.delta2 == range_sensitivity(POS, ranged.spec, MOVE) > point.delta2  # type: ignore[arg-type]
    assert ranged.sigma > point.sigma and "any τ in [10000, 40000] m²" in ranged.guarantee_text()
    again = SensorNetwork.from_dict(ranged.to_dict())
    assert again.delta2 == ranged.delta2 and again.fingerprint() == ranged.fingerprint() != point.fingerprint()


@pytest.mark.parametrize(("kind", "given", "needle"), [
    ("graph", (30000.0, 40000.0), "must contain diffusion=20000"),
    ("graph", (10000.0,), "must be a pair"),
    ("heat-walls", (10000.0, 40000.0), "not heat-walls"),
])
def test_a_range_is_refused_when_it_does_not_hold_the_diffusion_or_cannot_be_certified(
        kind: str, given: tuple[float, ...], needle: str) -> None:
    with pytest.raises(InvalidParameterError, match=needle):
        ModelSpec(kind=kind, diffusion=20000.0, diffusion_range=given, margin=10.0)  # type: ignore[arg-type]

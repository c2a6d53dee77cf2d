"""ReleaseSpec: a sensor's release parameters read off a configuration, without the model.

Oracles: the mechanism calibrated directly on the Δ2 that the model and relation give
(:func:`~dpcloak.privacy.sensitivity.relation_sensitivity` on the rebuilt model), the counts mechanism of the
measurement (Δ = C), and the refusals named in the configuration module.
"""

from __future__ import annotations

import json

import pytest

from dpcloak.errors import InvalidFileError, InvalidParameterError
from dpcloak.privacy.discrete import DiscreteGaussianMechanism
from dpcloak.privacy.sensitivity import relation_sensitivity
from dpcloak.sensors import Relation, SensorNetwork, build_model
from dpcloak.sensors.config import network_to_dict, release_spec_from_dict
from dpcloak.sensors.measurement import count_mechanism
from dpcloak.sensors.release import ReleaseSpec

SITES = [[0.0, 0.0], [60.0, 0.0], [0.0, 80.0], [90.0, 70.0], [40.0, 40.0]]


def test_field_spec_from_the_file_matches_the_model_calibration() -> None:
    net = SensorNetwork.from_coordinates(sensors=SITES, relation=Relation.move(50.0), epsilon=0.7, delta=1e-6,
                                         budget=(5.0, 1e-5), diffusion=1500.0, reading_unit="µg/m³",
                                         reading_range=(0.0, 400.0))
    data = json.loads(json.dumps(network_to_dict(net)))  # through a file
    spec = release_spec_from_dict(data)
    delta2 = relation_sensitivity(build_model(net.layout.positions, net.spec), Relation.move(50.0))  # type: ignore[union-attr,arg-type]
    oracle = DiscreteGaussianMechanism(epsilon=0.7, delta=1e-6, sensitivity=delta2, dimension=5)
    assert spec.sensitivity == delta2 and spec.mechanism.sigma2 == oracle.sigma2
    assert spec.reading_range == (0.0, 400.0) and spec.reading_unit == "µg/m³" and spec.n_sensors == 5
    assert spec.guarantee(1).epsilon <= 5.0 < spec.guarantee(spec.max_releases() + 1).epsilon
    del data["derived"]
    with pytest.raises(InvalidFileError, match=r"\[derived\] must state delta2"):
        release_spec_from_dict(data)


def test_counts_spec_is_the_measurements_mechanism() -> None:
    net = SensorNetwork.from_coordinates(sensors=SITES, measurement="counts", max_count_per_person=2, epsilon=1.0,
                                         delta=1e-6, budget=(10.0, 1e-5))
    spec = release_spec_from_dict(network_to_dict(net))
    oracle = count_mechanism(epsilon=1.0, delta=1e-6, max_count_per_person=2, n_sensors=5)
    assert type(spec.mechanism) is type(oracle) and spec.mechanism.guarantee() == oracle.guarantee()
    assert spec.sensitivity == 2.0 and spec.resolution == 1.0
    with pytest.raises(InvalidParameterError, match="sensitivity must be max_count_per_person=2"):
        ReleaseSpec(measurement="counts", n_sensors=5, epsilon=1.0, delta=1e-6, budget=(10.0, 1e-5),
                    sensitivity=1.0, neighbouring="", max_count_per_person=2)


def test_spec_refuses_a_release_over_its_budget() -> None:
    with pytest.raises(InvalidParameterError, match="one release already spends"):
        ReleaseSpec(measurement="field", n_sensors=3, epsilon=2.0, delta=1e-6, budget=(1.0, 1e-5), sensitivity=1.0,
                    neighbouring="x")

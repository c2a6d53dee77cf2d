"""Sensor networks from coordinates: one object holding the public configuration of the sensor flow.

:class:`SensorNetwork` (model from positions, relation with units, exact discrete Gaussian, budget,
recovery, serialisation); :func:`read_sensors_csv` / :func:`layout_from_coordinates` (positions in
metres, lon/lat projected, co-located counters merged or refused); :func:`choose_diffusion_time`
(the diffusion parameter from public history).
"""

from dpcloak.privacy.sensitivity import Relation
from dpcloak.sensors.counts import Counts, read_counts_csv
from dpcloak.sensors.layout import SensorLayout, layout_from_coordinates, read_sensors_csv
from dpcloak.sensors.network import SensorNetwork
from dpcloak.sensors.plot import save_maps
from dpcloak.sensors.result import NetworkRecovery
from dpcloak.sensors.spec import MODEL_KINDS, SOURCE_KINDS, ModelSpec, build_model
from dpcloak.sensors.tuning import DiffusionChoice, choose_diffusion_time

__all__ = [
    "SensorNetwork",
    "NetworkRecovery",
    "Relation",
    "SensorLayout",
    "layout_from_coordinates",
    "read_sensors_csv",
    "Counts",
    "read_counts_csv",
    "save_maps",
    "ModelSpec",
    "build_model",
    "MODEL_KINDS",
    "SOURCE_KINDS",
    "DiffusionChoice",
    "choose_diffusion_time",
]

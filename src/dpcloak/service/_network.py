"""The few things the service reads off a :class:`~dpcloak.sensors.SensorNetwork`, in one place."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from dpcloak.sensors import Relation, SensorNetwork

if TYPE_CHECKING:
    from dpcloak.privacy.continual import ContinualCounter

__all__ = ["value_bounds", "counter_value_bounds", "grid_step", "on_grid", "with_reading_max", "occupancy_reading_max",
           "source_positions", "sensor_positions", "floor_plan_network"]

def grid_step(network: SensorNetwork) -> float:
    """The mechanism's grid step g: every genuine report is an integer multiple of it."""
    return float(network.resolution)


def value_bounds(network: SensorNetwork) -> tuple[float, float]:
    """The interval a genuine private reading falls in except with probability ≤ 2⁻⁶⁴: the reading range
    widened by the exact tail bound of the network's discrete Gaussian (field) or discrete Laplace (counts)
    noise (:mod:`dpcloak.service.poisoning`; no upper limit when the readings have none)."""
    from dpcloak.service.poisoning import acceptance_interval

    return acceptance_interval(network)


def counter_value_bounds(counter: ContinualCounter, reading_range: tuple[float, float | None]) -> tuple[float, float]:
    """The interval a genuine output of a continual counter falls in except with probability ≤ 2⁻⁶⁴, for counts
    in ``reading_range`` (:func:`dpcloak.service.poisoning.counter_acceptance_interval`)."""
    from dpcloak.service.poisoning import counter_acceptance_interval

    return counter_acceptance_interval(counter, reading_range)


def on_grid(step: float, value: float) -> bool:
    """Whether ``value`` is an integer multiple of the grid ``step`` (what the exact sampler produces; the network's
    :func:`grid_step`, or a continual counter's grid).

    ``k · g`` is computed in floating point by the sensor, so ``value / g`` is within a few ulps of the
    integer k; a tolerance of 1e-6 cells accepts that and nothing a sampler on another grid would give.
    """
    cells = value / step
    return math.isfinite(cells) and abs(cells - round(cells)) <= 1e-6


def with_reading_max(network: SensorNetwork, high: float) -> SensorNetwork:
    """The same network with readings declared in ``[low, high]`` (clipped on the sensor, checked at the collector).

    Examples
    --------
    >>> net = floor_plan_network(width=4.0, height=2.0, sensor_cols=2, sensor_rows=1, epsilon=1.0, delta=1e-6,
    ...                          budget=(10.0, 1e-5))
    >>> net.reading_range, with_reading_max(net, 30.0).reading_range
    ((0.0, None), (0.0, 30.0))
    """
    data = network.to_dict()
    data["readings"]["high"] = high
    return SensorNetwork.from_dict(data)


def occupancy_reading_max(network: SensorNetwork, occupancy: int) -> float:
    """The most a sensor can read with ``occupancy`` people in the area: all of them where it weighs a person most.

    A reading is ``Σ_i M_ji f_i`` with ``f ≥ 0`` people and ``Σ_i f_i ≤ occupancy``, so it is at most
    ``occupancy · max_i M_ji`` (the bound is attained: everyone at that source location).

    Examples
    --------
    >>> net = floor_plan_network(width=4.0, height=2.0, sensor_cols=2, sensor_rows=1, epsilon=1.0, delta=1e-6,
    ...                          budget=(10.0, 1e-5))
    >>> occupancy_reading_max(net, 8) == 8 * float(net.dense_model().max())
    True
    """
    return float(occupancy) * float(network.dense_model().max())


def source_positions(network: SensorNetwork) -> NDArray[np.float64]:
    """Source locations as an (n, d) array (d = 1 or 2)."""
    pos = network.source_positions
    n = network.n_sources
    return np.zeros((n, 1)) if pos is None else np.asarray(pos, dtype=float).reshape(n, -1)


def sensor_positions(network: SensorNetwork) -> NDArray[np.float64]:
    """Sensor locations as an (m, d) array."""
    pos = network.sensor_positions
    m = network.n_sensors
    return np.zeros((m, 1)) if pos is None else np.asarray(pos, dtype=float).reshape(m, -1)


def floor_plan_network(*, width: float, height: float, sensor_cols: int, sensor_rows: int, epsilon: float,
                       delta: float, budget: tuple[float, float], spacing: float = 1.0, diffusion: float = 2.0,
                       move: float = 2.0, reading_high: float | None = None) -> SensorNetwork:
    """A ``width x height`` m floor with a ``sensor_cols x sensor_rows`` lattice of people counters.

    Sources on a grid every ``spacing`` m (the heat model, ``diffusion`` in m²), relation "one person
    moved by up to ``move`` m", readings clipped to ``[0, reading_high]`` people.
    """
    xs = np.linspace(0.5, width - 0.5, sensor_cols)
    ys = np.linspace(0.5, height - 0.5, sensor_rows)
    xx, yy = np.meshgrid(xs, ys, indexing="xy")
    sensors = np.column_stack([xx.ravel(), yy.ravel()])
    return SensorNetwork.from_coordinates(
        sensors=sensors, relation=Relation.move(move, "m"), epsilon=epsilon, delta=delta, budget=budget,
        model="heat", diffusion=diffusion, sources="grid", spacing=spacing, margin=0.5,
        reading_range=(0.0, reading_high))

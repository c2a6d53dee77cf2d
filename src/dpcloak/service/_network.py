"""The few things the service reads off a :class:`~dpcloak.sensors.SensorNetwork`, in one place."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dpcloak.sensors import SensorNetwork

__all__ = ["TAIL_SIGMAS", "value_bounds", "grid_step", "on_grid", "recover_window", "source_positions",
           "sensor_positions", "floor_plan_network"]

TAIL_SIGMAS = 40.0
"""A genuine report lies within this many σ of the reading range (P(|Z| > 40σ) < e⁻⁸⁰⁰ for Gaussian noise)."""


def grid_step(network: SensorNetwork) -> float:
    """The mechanism's grid step g: every genuine report is an integer multiple of it."""
    return float(network.mechanism.resolution)


def value_bounds(network: SensorNetwork) -> tuple[float, float]:
    """The interval a genuine private reading can fall in: the reading range widened by ``TAIL_SIGMAS`` σ."""
    lo, hi = network.reading_range
    return (float(lo) - TAIL_SIGMAS * float(network.sigma), float(hi) + TAIL_SIGMAS * float(network.sigma))


def on_grid(network: SensorNetwork, value: float) -> bool:
    """Whether ``value`` is an integer multiple of the grid step (what the exact sampler produces).

    ``k · g`` is computed in floating point by the sensor, so ``value / g`` is within a few ulps of the
    integer k; a tolerance of 1e-6 cells accepts that and nothing a sampler on another grid would give.
    """
    cells = value / grid_step(network)
    return math.isfinite(cells) and abs(cells - round(cells)) <= 1e-6


def recover_window(network: SensorNetwork, values: NDArray[np.float64], present: NDArray[np.bool_],
                   warm_start: Any) -> Any:
    """Recovery of one window from the rows that arrived (``present``), warm-started."""
    return network.recover(values, present=present, warm_start=warm_start)


def source_positions(network: SensorNetwork) -> NDArray[np.float64]:
    """Source locations as an (n, d) array (d = 1 or 2)."""
    return np.asarray(network.source_positions, dtype=float).reshape(len(network.source_positions), -1)


def sensor_positions(network: SensorNetwork) -> NDArray[np.float64]:
    """Sensor locations as an (m, d) array."""
    return np.asarray(network.sensor_positions, dtype=float).reshape(network.n_sensors, -1)


def floor_plan_network(*, rows: int, cols: int, sensor_rows: int, sensor_cols: int, epsilon: float, delta: float,
                       t: float = 1.0) -> SensorNetwork:
    """A floor of ``rows x cols`` one-metre cells holding the sources, with a ``sensor_rows x sensor_cols`` lattice
    of sensors (positions (y, x) in metres, half a metre from the walls)."""
    ys, xs = np.meshgrid(np.linspace(0.5, rows - 0.5, sensor_rows), np.linspace(0.5, cols - 0.5, sensor_cols),
                         indexing="ij")
    sensors = np.stack([ys.ravel(), xs.ravel()], axis=1)
    return SensorNetwork(floor=(rows, cols), sensors=sensors, t=t, epsilon=epsilon, delta=delta)

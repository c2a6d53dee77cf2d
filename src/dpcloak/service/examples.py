"""A small ready-made deployment for trying the service API in a Python session.

The examples in this package's docstrings start from it, so each of them runs when copied into
an interpreter. The numbers are arbitrary but valid: two sensors 100 m apart, a person may move
150 m between neighbouring datasets, (1, 10⁻⁶)-DP per reading and (10, 10⁻⁵) per period of ten
one-minute windows.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import fields as dataclass_fields
from pathlib import Path
from typing import Any

from dpcloak._validation import check_real
from dpcloak.errors import InvalidParameterError
from dpcloak.sensors import Relation, SensorNetwork
from dpcloak.sensors.config import network_to_dict
from dpcloak.service.config import SENSOR_DIR, Deployment, load_credential, write_deployment
from dpcloak.service.node import SensorNode
from dpcloak.service.store import Store, sqlite_url
from dpcloak.service.windows import WindowRecovery

__all__ = ["two_sensor_network", "two_sensor_deployment", "two_sensor_store", "two_sensor_node", "counting_deployment",
           "counting_store"]


def two_sensor_network(*, epsilon: float = 1.0) -> SensorNetwork:
    """Two sensors 100 m apart, diffusion 2000 m², per-reading (``epsilon``, 10⁻⁶), budget (10, 10⁻⁵).

    Examples
    --------
    >>> net = two_sensor_network()
    >>> net.n_sensors, net.epsilon, net.budget
    (2, 1.0, (10.0, 1e-05))
    """
    return SensorNetwork.from_coordinates(sensors=[[0.0, 0.0], [100.0, 0.0]], relation=Relation.move(150.0),
                                          epsilon=epsilon, delta=1e-6, budget=(10.0, 1e-5), diffusion=2000.0)


def two_sensor_deployment(**fields: Any) -> Deployment:
    """Deployment ``"abc123"`` of :func:`two_sensor_network`: one-minute windows from t = 0, periods of ten.

    Keyword arguments replace any of :class:`~dpcloak.service.config.Deployment`'s fields.

    Examples
    --------
    >>> deployment = two_sensor_deployment()
    >>> deployment.deployment_id, deployment.window_seconds, deployment.period_windows
    ('abc123', 60.0, 10)
    >>> two_sensor_deployment(grace_seconds=0.0).grace_seconds
    0.0
    >>> two_sensor_deployment(window=5)
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidParameterError: unknown Deployment field(s) window; the fields are ...
    """
    known = [f.name for f in dataclass_fields(Deployment)]
    unknown = sorted(set(fields) - set(known))
    if unknown:
        raise InvalidParameterError(f"unknown Deployment field(s) {', '.join(unknown)}; the fields are "
                                    f"{', '.join(known)}",
                                    parameter=unknown[0], allowed=", ".join(known), got=unknown)
    values: dict[str, Any] = {"deployment_id": "abc123", "network": network_to_dict(two_sensor_network()),
                              "window_seconds": 60.0, "start": 0.0, "period_windows": 10}
    values.update(fields)
    return Deployment(**values)


def counting_deployment(**fields: Any) -> Deployment:
    """Deployment ``"count42"``: three people counters (counts, one count per person and window), one-minute
    windows from t = 0, every window released, sliding window of 60; each sensor's running total by the continual
    counter (ε = 1, δ = 10⁻⁶ for one count, over 720 windows); areas ``"hall"`` (sensors 0 and 1) and ``"door"``
    (sensor 2).

    Keyword arguments replace any of :class:`~dpcloak.service.config.Deployment`'s fields.

    Examples
    --------
    >>> dep = counting_deployment()
    >>> dep.counter.horizon, dep.areas, dep.release_spec.measurement
    (720, {'hall': [0, 1], 'door': [2]}, 'counts')
    """
    net = SensorNetwork.from_coordinates(sensors=[[0.0, 0.0], [10.0, 0.0], [20.0, 0.0]], measurement="counts",
                                         epsilon=1.0, delta=1e-6, budget=(10.0, 1e-5))
    values: dict[str, Any] = {"deployment_id": "count42", "network": network_to_dict(net), "window_seconds": 60.0,
                              "start": 0.0, "period_windows": 60,
                              "continual": {"horizon": 720, "epsilon": 1.0, "delta": 1e-6},
                              "areas": {"hall": [0, 1], "door": [2]}}
    values.update(fields)
    return Deployment(**values)


def two_sensor_store(directory: str | Path, *, reading: float | None = None) -> tuple[Deployment, Store]:
    """:func:`two_sensor_deployment` registered in a new SQLite store ``collector.db`` in ``directory``.

    With ``reading``, sensor 0 has reported that value for window 0 (report id ``"r-0"``) and window 0
    has been closed and recovered.

    Examples
    --------
    >>> import tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> deployment, store = two_sensor_store(tmp.name, reading=10.0)
    >>> store.window_readings("abc123", 0), [r.window for r in store.windows("abc123")]
    ([(0, 10.0)], [0])
    >>> two_sensor_store(tmp.name, reading=float("nan"))
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidParameterError: reading must be a finite real number, got nan
    >>> store.dispose()
    >>> tmp.cleanup()
    """
    value = None if reading is None else check_real("reading", reading)
    deployment = two_sensor_deployment()
    store = Store(sqlite_url(Path(directory) / "collector.db"))
    store.migrate()
    store.register(deployment)
    if value is not None:
        store.insert_reports([{"deployment_id": deployment.deployment_id, "sensor_id": 0, "window": 0,
                               "report_id": "r-0", "value": value, "mac": "00", "received_at": 30.0}])
        WindowRecovery(deployment, store).close(0)
    return deployment, store


def counting_store(directory: str | Path, *, sensors: Sequence[int], windows: int, count: int,
                   lost: Collection[tuple[int, int]] = ()) -> tuple[Deployment, Store]:
    """:func:`counting_deployment` registered in a new SQLite store ``collector.db`` in ``directory``, with reports.

    Each sensor of ``sensors`` counts ``count`` people in each of windows ``0 … windows - 1`` and releases its
    counter stream's output (fresh exact noise); the reports of the ``(sensor, window)`` pairs in ``lost`` are
    released but never stored (report id ``"r-<sensor>-<window>"``, received at the window's start).

    Examples
    --------
    >>> import tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> dep, store = counting_store(tmp.name, sensors=[0, 1], windows=3, count=5, lost=[(1, 1)])
    >>> {j: [w for w, _ in rows] for j, rows in store.sensor_streams("count42", [0, 1], last_window=2).items()}
    {0: [0, 1, 2], 1: [0, 2]}
    >>> store.dispose(); tmp.cleanup()
    """
    deployment = counting_deployment()
    counter = deployment.counter
    assert counter is not None  # counting_deployment declares one
    store = Store(sqlite_url(Path(directory) / "collector.db"))
    store.migrate()
    store.register(deployment)
    reports = []
    for j in sensors:
        stream = counter.stream()
        for w in range(windows):
            value = stream.push(count) * counter.grid
            if (j, w) not in lost:
                reports.append({"deployment_id": deployment.deployment_id, "sensor_id": j, "window": w,
                                "report_id": f"r-{j}-{w}", "value": value, "mac": "00",
                                "received_at": deployment.window_start(w)})
    store.insert_reports(reports)
    return deployment, store


def two_sensor_node(directory: str | Path, *, master_key: bytes | None = None) -> tuple[Deployment, SensorNode]:
    """:func:`two_sensor_deployment` written to ``directory``, and sensor 0's node, its clock stopped at t = 30 s.

    The node's ledger is ``ledger-0.db`` in ``directory``; it delivers to port 9 of 127.0.0.1, where
    nothing listens. ``master_key`` is the collector's key (random by default).

    Examples
    --------
    >>> import tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> deployment, node = two_sensor_node(tmp.name)
    >>> entry = node.release(12.0)  # window 0: noisy, signed and recorded in the ledger
    >>> entry.window, node.credential.sensor
    (0, 0)
    >>> node.close()
    >>> tmp.cleanup()
    """
    directory = Path(directory)
    deployment = two_sensor_deployment()
    write_deployment(directory, deployment, master_key=master_key)
    credential = load_credential(directory / SENSOR_DIR / "sensor-0.json")
    node = SensorNode(deployment=deployment, credential=credential, ledger=directory / "ledger-0.db",
                      url="http://127.0.0.1:9", clock=lambda: 30.0)
    return deployment, node

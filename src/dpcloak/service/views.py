"""What the analyst API and the dashboard show: the deployment, the sensors' activity, exports."""

from __future__ import annotations

import csv
import io
from typing import Any

from dpcloak.service import _network
from dpcloak.service.config import Deployment
from dpcloak.service.store import Store

__all__ = ["guarantee_words", "deployment_view", "sensors_view", "export_rows", "export_csv", "export_parquet"]

EXPORT_COLUMNS = ("window", "source", "coordinates", "people", "uncertainty_m", "missing", "sigma",
                  "epsilon_period", "delta_period", "converged")


def guarantee_words(deployment: Deployment) -> str:
    """The deployment's guarantee in plain words.

    Examples
    --------
    >>> from dpcloak.service.examples import two_sensor_deployment
    >>> deployment = two_sensor_deployment()
    >>> import textwrap
    >>> print(textwrap.fill(guarantee_words(deployment), 100))
    Every sensor adds exact discrete Gaussian noise (σ = 4.301 people) to its reading before it leaves
    the sensor; this collector never sees a raw reading. One window's readings of all sensors are (1,
    1e-06)-differentially private for one person moved by up to 150 m, holds if the readings follow the
    model (graph diffusion on the 4-nearest-neighbour graph of the sites, τ = 2000 m², spreading ~63 m):
    nobody can tell from them whether that happened. Each sensor sends at most 10 readings per period of
    10 windows (10 minutes) and refuses more, so everything released in one period is (3.14,
    1e-05)-differentially private, also for patterns that repeat within the period. Periods add up: two
    periods together are at most (6.28, 2e-05).
    """
    net = deployment.sensor_network
    eps1, delta = net.epsilon, net.delta
    k = deployment.releases_per_period
    eps_k, delta_k = deployment.guarantee(k)
    minutes = deployment.window_seconds * deployment.period_windows / 60.0
    condition = net.model_condition
    return (
        f"Every sensor adds {net.noise} to its reading before it leaves the sensor; this collector never "
        f"sees a raw reading. One window's readings of all sensors are ({eps1:.3g}, {delta:.2g})-differentially "
        f"private for {net.privacy_unit}{'' if condition is None else ', ' + condition}: nobody can tell from them "
        f"whether that happened. Each sensor sends at most {k} readings per period of "
        f"{deployment.period_windows} windows ({minutes:.4g} minutes) and refuses more, so everything released in "
        f"one period is ({eps_k:.3g}, {delta_k:.2g})-differentially private, also for patterns that repeat "
        f"within the period. Periods add up: two periods together are at most ({2 * eps_k:.3g}, "
        f"{2 * delta_k:.2g})."
    )


def deployment_view(deployment: Deployment, *, now: float) -> dict[str, Any]:
    """The deployment's public parameters, positions and guarantee (JSON-ready).

    Examples
    --------
    >>> from dpcloak.service.examples import two_sensor_deployment
    >>> deployment = two_sensor_deployment()
    >>> view = deployment_view(deployment, now=125.0)
    >>> view["deployment_id"], view["n_sensors"], view["window_seconds"], view["current_window"]
    ('abc123', 2, 60.0, 2)
    >>> view["guarantee_window"]
    {'epsilon': 1.0, 'delta': 1e-06}
    """
    net = deployment.sensor_network
    k = deployment.releases_per_period
    eps_k, delta_k = deployment.guarantee(k)
    return {
        "deployment_id": deployment.deployment_id,
        "fingerprint": deployment.fingerprint,
        "n_sensors": deployment.n_sensors,
        "window_seconds": deployment.window_seconds,
        "start": deployment.start,
        "current_window": deployment.window_at(now),
        "period_windows": deployment.period_windows,
        "releases_per_period": k,
        "sigma": float(net.sigma),
        "relation": net.privacy_unit,
        "guarantee": net.guarantee_text(),
        "guarantee_window": {"epsilon": net.epsilon, "delta": net.delta},
        "guarantee_period": {"epsilon": eps_k, "delta": delta_k, "releases": k},
        "budget_per_period": {"epsilon": net.budget[0], "delta": net.budget[1]},
        "guarantee_text": guarantee_words(deployment),
        "sensor_positions": _network.sensor_positions(net).tolist(),
        "source_positions": _network.source_positions(net).tolist(),
    }


def sensors_view(deployment: Deployment, store: Store, now: float) -> dict[str, Any]:
    """Per sensor: last window, last seen, readings and composed ε in the current period.

    Examples
    --------
    >>> import tempfile
    >>> from dpcloak.service.examples import two_sensor_store
    >>> tmp = tempfile.TemporaryDirectory()
    >>> deployment, store = two_sensor_store(tmp.name)
    >>> _ = store.insert_reports([{"deployment_id": "abc123", "sensor_id": 0, "window": 0, "report_id": "r-0",
    ...                         "value": 10.0, "mac": "00", "received_at": 30.0}])
    >>> view = sensors_view(deployment, store, now=45.0)
    >>> sorted(view)
    ['period_first_window', 'releases_per_period', 'sensors']
    >>> store.dispose()
    >>> tmp.cleanup()
    """
    current = deployment.window_at(now)
    first = deployment.period_of(max(current, 0)) * deployment.period_windows
    activity = store.sensor_activity(deployment.deployment_id, first_window=first)
    out = []
    for j in range(deployment.n_sensors):
        last_window, last_seen, in_period = activity.get(j, (None, None, 0))
        eps, delta = deployment.guarantee(in_period)
        out.append({"sensor": j, "last_window": last_window, "last_seen": last_seen, "readings_in_period": in_period,
                    "epsilon_spent": eps, "delta": delta})
    return {"period_first_window": first, "releases_per_period": deployment.releases_per_period, "sensors": out}


def export_rows(deployment: Deployment, store: Store) -> list[tuple[Any, ...]]:
    """One row per (closed window, source) with the window's metadata (:data:`EXPORT_COLUMNS`).

    Examples
    --------
    >>> import tempfile
    >>> from dpcloak.service.examples import two_sensor_store
    >>> tmp = tempfile.TemporaryDirectory()
    >>> deployment, store = two_sensor_store(tmp.name, reading=10.0)
    >>> rows = export_rows(deployment, store)
    >>> len(rows), len(rows[0]) == len(EXPORT_COLUMNS)
    (2, True)
    >>> store.dispose()
    >>> tmp.cleanup()
    """
    coords = _network.source_positions(deployment.sensor_network)
    rows = []
    for r in store.windows(deployment.deployment_id):
        for i, v in enumerate(r.source_map):
            rows.append((r.window, i, " ".join(f"{c:.6g}" for c in coords[i]), v, r.uncertainty, r.missing, r.sigma,
                         r.epsilon_period, r.delta_period, r.converged))
    return rows


def export_csv(deployment: Deployment, store: Store) -> str:
    """The export table as CSV text.

    Examples
    --------
    >>> import tempfile
    >>> from dpcloak.service.examples import two_sensor_store
    >>> tmp = tempfile.TemporaryDirectory()
    >>> deployment, store = two_sensor_store(tmp.name, reading=10.0)
    >>> text = export_csv(deployment, store)
    >>> text.splitlines()[0] == ",".join(EXPORT_COLUMNS), len(text.splitlines())
    (True, 3)
    >>> store.dispose()
    >>> tmp.cleanup()
    """
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(EXPORT_COLUMNS)
    writer.writerows(export_rows(deployment, store))
    return buf.getvalue()


def export_parquet(deployment: Deployment, store: Store) -> bytes | None:
    """The export table as Parquet bytes; ``None`` when pyarrow is not installed.

    Examples
    --------
    >>> import tempfile
    >>> from dpcloak.service.examples import two_sensor_store
    >>> tmp = tempfile.TemporaryDirectory()
    >>> deployment, store = two_sensor_store(tmp.name, reading=10.0)
    >>> import io
    >>> import pandas as pd
    >>> frame = pd.read_parquet(io.BytesIO(export_parquet(deployment, store)))
    >>> list(frame.columns) == list(EXPORT_COLUMNS), len(frame)
    (True, 2)
    >>> store.dispose()
    >>> tmp.cleanup()
    """
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return None
    rows = export_rows(deployment, store)
    table = pa.table({name: [r[k] for r in rows] for k, name in enumerate(EXPORT_COLUMNS)})
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()

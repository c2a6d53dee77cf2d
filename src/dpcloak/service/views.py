"""What the analyst API and the dashboard show: the deployment, the sensors' activity, exports."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

from dpcloak.service import _network
from dpcloak.service.config import Deployment
from dpcloak.service.store import Store

__all__ = ["guarantee_words", "deployment_view", "sensors_view", "export_rows", "export_csv_chunks", "export_csv",
           "export_parquet_chunks", "export_parquet"]

T = TypeVar("T")

EXPORT_CHUNK_WINDOWS = 64
"""Windows per piece of a streamed export (a CSV piece, a Parquet row group)."""

LAST_SEEN_LOOKBACK = 86_400.0
"""Seconds of windows (one day) searched for a sensor's last report: a sensor silent longer shows as not seen."""

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

    A sensor's last report is looked for in the last :data:`LAST_SEEN_LOOKBACK` seconds of windows
    (at least the period) only: ``seen_since_window`` is the first window looked at, and a sensor
    silent since has ``last_window`` and ``last_seen`` ``None``. The query's cost is bounded by that
    range, not by the length of the history.

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
    ['period_first_window', 'releases_per_period', 'seen_since_window', 'sensors']
    >>> [(s["sensor"], s["last_window"], s["last_seen"], s["readings_in_period"]) for s in view["sensors"]]
    [(0, 0, 30.0, 1), (1, None, None, 0)]
    >>> store.dispose()
    >>> tmp.cleanup()
    """
    current = max(deployment.window_at(now), 0)
    first = deployment.period_of(current) * deployment.period_windows
    lookback = max(deployment.period_windows, math.ceil(LAST_SEEN_LOOKBACK / deployment.window_seconds))
    since = max(0, min(first, current - lookback))
    activity = store.sensor_activity(deployment.deployment_id, first_window=first, since_window=since,
                                     n_sensors=deployment.n_sensors)
    out = []
    for j in range(deployment.n_sensors):
        last_window, last_seen, in_period = activity.get(j, (None, None, 0))
        eps, delta = deployment.guarantee(in_period)
        out.append({"sensor": j, "last_window": last_window, "last_seen": last_seen, "readings_in_period": in_period,
                    "epsilon_spent": eps, "delta": delta})
    return {"period_first_window": first, "releases_per_period": deployment.releases_per_period,
            "seen_since_window": since, "sensors": out}


def export_rows(deployment: Deployment, store: Store) -> Iterator[list[tuple[Any, ...]]]:
    """The export table (:data:`EXPORT_COLUMNS`): one row per (closed window, source), one list per window.

    The windows are read a page at a time (:meth:`Store.windows`): memory stays constant whatever
    the length of the history.

    Examples
    --------
    >>> from dpcloak.service.examples import two_sensor_store
    >>> import tempfile
    >>> tables = []
    >>> with tempfile.TemporaryDirectory() as directory:
    ...     deployment, store = two_sensor_store(directory, reading=10.0)
    ...     tables += export_rows(deployment, store)
    ...     store.dispose()
    >>> len(tables), len(tables[0]), len(tables[0][0]) == len(EXPORT_COLUMNS)  # one window, two sources
    (1, 2, True)
    """
    coords = [" ".join(f"{c:.6g}" for c in row) for row in _network.source_positions(deployment.sensor_network)]
    for r in store.windows(deployment.deployment_id):
        yield [(r.window, i, coords[i], v, r.uncertainty, r.missing, r.sigma, r.epsilon_period, r.delta_period,
                r.converged) for i, v in enumerate(r.source_map)]


def export_csv_chunks(deployment: Deployment, store: Store) -> Iterator[str]:
    """The export table as CSV text, in pieces of :data:`EXPORT_CHUNK_WINDOWS` windows (header first).

    Examples
    --------
    >>> import tempfile
    >>> from dpcloak.service.examples import two_sensor_store
    >>> with tempfile.TemporaryDirectory() as directory:
    ...     deployment, store = two_sensor_store(directory, reading=10.0)
    ...     lines = [piece.count("\\n") for piece in export_csv_chunks(deployment, store)]
    ...     store.dispose()
    >>> lines  # the header, then one window's two rows
    [1, 2]
    """
    buf = io.StringIO()
    csv.writer(buf).writerow(EXPORT_COLUMNS)
    yield buf.getvalue()
    for tables in _batched(export_rows(deployment, store), EXPORT_CHUNK_WINDOWS):
        buf = io.StringIO()
        writer = csv.writer(buf)
        for rows in tables:
            writer.writerows(rows)
        yield buf.getvalue()


def export_csv(deployment: Deployment, store: Store) -> str:
    """The export table as CSV text (in one string: :func:`export_csv_chunks` streams it).

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
    return "".join(export_csv_chunks(deployment, store))


def export_parquet_chunks(deployment: Deployment, store: Store) -> Iterator[bytes] | None:
    """The export table as Parquet, in pieces (one row group per :data:`EXPORT_CHUNK_WINDOWS` windows);
    ``None`` when pyarrow is not installed.

    Examples
    --------
    >>> import io, tempfile
    >>> import pyarrow.parquet as pq
    >>> from dpcloak.service.examples import two_sensor_store
    >>> with tempfile.TemporaryDirectory() as directory:
    ...     deployment, store = two_sensor_store(directory, reading=10.0)
    ...     pieces = list(export_parquet_chunks(deployment, store))
    ...     store.dispose()
    >>> parquet = pq.ParquetFile(io.BytesIO(b"".join(pieces)))
    >>> parquet.num_row_groups, parquet.metadata.num_rows, parquet.schema_arrow.names == list(EXPORT_COLUMNS)
    (1, 2, True)
    """
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return None
    schema = pa.schema([("window", pa.int64()), ("source", pa.int64()), ("coordinates", pa.string()),
                        ("people", pa.float64()), ("uncertainty_m", pa.float64()), ("missing", pa.int64()),
                        ("sigma", pa.float64()), ("epsilon_period", pa.float64()), ("delta_period", pa.float64()),
                        ("converged", pa.bool_())])

    def pieces() -> Iterator[bytes]:
        sink = _Pieces()
        with pq.ParquetWriter(sink, schema) as writer:
            for tables in _batched(export_rows(deployment, store), EXPORT_CHUNK_WINDOWS):
                rows = [row for rows in tables for row in rows]
                writer.write_table(pa.table({name: [r[k] for r in rows] for k, name in enumerate(EXPORT_COLUMNS)},
                                            schema=schema))
                yield sink.take()
        yield sink.take()

    return pieces()


def export_parquet(deployment: Deployment, store: Store) -> bytes | None:
    """The export table as Parquet bytes (:func:`export_parquet_chunks` streams it); ``None`` without pyarrow.

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
    pieces = export_parquet_chunks(deployment, store)
    return None if pieces is None else b"".join(pieces)


class _Pieces(io.RawIOBase):
    """A write-only file that hands out what was written since the last :meth:`take` (Parquet streaming)."""

    def __init__(self) -> None:
        super().__init__()
        self._parts: list[bytes] = []
        self._position = 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        self._parts.append(chunk)
        self._position += len(chunk)
        return len(chunk)

    def tell(self) -> int:
        return self._position

    def take(self) -> bytes:
        out, self._parts = b"".join(self._parts), []
        return out


def _batched(items: Iterable[T], n: int) -> Iterator[list[T]]:
    batch: list[T] = []
    for item in items:
        batch.append(item)
        if len(batch) == n:
            yield batch
            batch = []
    if batch:
        yield batch

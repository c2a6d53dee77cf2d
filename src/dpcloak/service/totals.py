"""Running totals of a continual deployment's count sensors, per sensor and per area, with their error bars.

When a deployment declares ``continual`` (:class:`~dpcloak.service.config.Deployment`), every count sensor
releases, at each position t of its counter stream (the schedule's release windows, the same for every
sensor), the integer V_t = (C n)_t + Z_t (times the grid g) of the factorisation mechanism
(:mod:`dpcloak.privacy.continual`). The collector decodes the running totals S = g·B·V
(:meth:`~dpcloak.privacy.continual.ContinualCounter.decode`: post-processing, no privacy spent) and answers
"people past counter j since <time>" as the difference of two running totals, whose error has standard
deviation :meth:`~dpcloak.privacy.continual.ContinualCounter.range_std` (the correlated noise partly cancels;
not σ√n). An area (a declared group of sensors) sums its sensors' totals; their noise is independent, so its
variance is the sum of theirs. Daily or weekly totals are consecutive ranges, each with its own error bar.

Decoding needs a sensor's stream from its first position on: positions whose report is missing (the node
was down, or a report was refused) end what can be decoded; the answer says up to which window it is
(``decoded_through_window``). Each query reads the streams of at most :data:`MAX_AREA_SENSORS` sensors over
at most the counter's horizon, and answers at most :data:`MAX_PERIODS` periods and :data:`RUNNING_POINTS`
points of the running total: bounded, and never part of the dashboard's poll (the page asks on demand).
"""

from __future__ import annotations

import math
from functools import partial
from typing import Annotated, Any

import numpy as np
from fastapi import APIRouter, Query, Request
from fastapi import Path as PathParam

from dpcloak.errors import InvalidParameterError
from dpcloak.service.config import Deployment
from dpcloak.service.ingest import ReportError
from dpcloak.service.problems import documented
from dpcloak.service.store import Store

__all__ = ["MAX_AREA_SENSORS", "MAX_PERIODS", "RUNNING_POINTS", "counter_totals", "counters_view", "router"]

MAX_AREA_SENSORS = 64
"""The most sensors one answer decodes (an area may not be larger)."""

MAX_PERIODS = 400
"""The most periods (days, weeks) one answer lists."""

RUNNING_POINTS = 120
"""The most points of the running total one answer lists (evenly spaced positions)."""

Z95 = 1.959963984540054
"""The standard normal's 97.5 % quantile: the half-width of a 95 % interval in standard deviations."""


def counter_totals(deployment: Deployment, store: Store, *, sensors: list[int], since: float, until: float,
                   period_seconds: float | None = None) -> dict[str, Any]:
    """The released running totals of ``sensors`` (summed) over the windows inside ``[since, until)``.

    Returns the total with its standard deviation and 95 % interval, the running total since ``since`` at up to
    :data:`RUNNING_POINTS` windows, and with ``period_seconds`` the totals of consecutive periods from ``since``
    (e.g. 86400: daily totals), each with its error bar: a period holds the answer's windows that start in it,
    so the periods partition the answer's windows and their totals add up to the total.

    Raises
    ------
    InvalidParameterError
        The deployment declares no counter, too many sensors, ``until`` not after ``since``, a period shorter
        than a window or more than :data:`MAX_PERIODS` periods.

    Examples
    --------
    >>> import tempfile
    >>> from dpcloak.service.examples import counting_store
    >>> tmp = tempfile.TemporaryDirectory()
    >>> dep, store = counting_store(tmp.name, sensors=[2], windows=30, count=4)  # 4 people per one-minute window
    >>> out = counter_totals(dep, store, sensors=[2], since=600.0, until=1800.0)  # windows 10-29: 80 people
    >>> out["first_window"], out["last_window"], out["decoded_through_window"]
    (10, 29, 29)
    >>> abs(out["total"] - 80) < 6 * out["std"], out["std"] == dep.counter.range_std(10, 30)
    (True, True)
    >>> store.dispose(); tmp.cleanup()
    """
    counter = deployment.counter
    if counter is None:
        raise InvalidParameterError("this deployment declares no continual counter (its sensors release independent "
                                    "noise per window: see /api/v1/sensors/{sensor}/total)", parameter="continual")
    if not 1 <= len(sensors) <= MAX_AREA_SENSORS:
        raise InvalidParameterError(f"sensors must hold 1 to {MAX_AREA_SENSORS} sensors, got {len(sensors)}",
                                    parameter="sensors")
    if not until > since:
        raise InvalidParameterError(f"until must be after since, got since={since:g}, until={until:g}",
                                    parameter="until")
    ws = deployment.window_seconds
    first = max(0, math.ceil((since - deployment.start) / ws))  # windows that start at or after since
    last = math.floor((until - deployment.start) / ws) - 1  # and end by until
    horizon_window = deployment.previous_release_window(2**62)  # the last window a counter covers (lifetime cap)
    last = min(last, horizon_window if horizon_window is not None else -1)
    streams = store.sensor_streams(deployment.deployment_id, sensors, last_window=max(last, -1)) if last >= 0 else {}
    decoded = _decoded_prefix(deployment, [streams.get(j, []) for j in sensors])
    through = len(decoded[0]) if decoded else 0  # positions every sensor of the answer can decode
    a = deployment.counter_position(first)
    b = min(deployment.counter_position(last + 1), through) if last >= first else a
    out: dict[str, Any] = {
        "sensors": sensors, "since": since, "until": until, "first_window": first, "last_window": last,
        "decoded_through_window": deployment.counter_window(through - 1) if through else None,
        "unit": deployment.release_spec.reading_unit,
        **_range(counter, decoded, a, b),
        "running": [{"window": deployment.counter_window(t),
                     "window_end": deployment.window_end(deployment.counter_window(t)),
                     **_range(counter, decoded, a, t + 1)} for t in _sampled(a, b)],
    }
    if period_seconds is not None:
        if not period_seconds >= ws:
            raise InvalidParameterError(f"period_seconds must be at least one window ({ws:g} s), got "
                                        f"{period_seconds:g}", parameter="period_seconds")
        n = math.ceil((until - since) / period_seconds)
        if n > MAX_PERIODS:
            raise InvalidParameterError(f"at most {MAX_PERIODS} periods per answer, got {n} (ask for a shorter "
                                        "range or a longer period)", parameter="period_seconds")
        periods = []
        for k in range(n):
            lo, hi = since + k * period_seconds, min(until, since + (k + 1) * period_seconds)
            w0 = max(first, math.ceil((lo - deployment.start) / ws))  # the windows that start in [lo, hi): the
            w1 = min(last, math.ceil((hi - deployment.start) / ws) - 1)  # periods partition first … last
            p0 = deployment.counter_position(w0)
            p1 = min(deployment.counter_position(w1 + 1), through) if w1 >= w0 else p0
            periods.append({"since": lo, "until": hi, "first_window": w0, "last_window": w1,
                            **_range(counter, decoded, p0, max(p0, p1))})
        out["periods"] = periods
    return out


def _decoded_prefix(deployment: Deployment, streams: list[list[tuple[int, float]]]) -> list[np.ndarray]:
    """Each sensor's running totals (count units) over the positions all of them can decode (their common prefix).

    A sensor's reports at positions 0, 1, 2, … are decoded up to its first missing position
    (:meth:`Deployment.decoded_stream`; decoding is causal, so a prefix of the decoded stream is the decoded
    prefix); the answer keeps the shortest prefix, so the sensors' totals cover the same windows."""
    decoded = [deployment.decoded_stream(rows) for rows in streams]
    length = min((len(d) for d in decoded), default=0)
    return [d[:length] for d in decoded] if length else []


def _range(counter: Any, decoded: list[np.ndarray], a: int, b: int) -> dict[str, Any]:
    """The summed total of positions a … b − 1 over the decoded sensors, its standard deviation and 95 % interval."""
    if b <= a or not decoded:
        return {"positions": 0, "total": 0.0, "std": 0.0, "interval_95": [0.0, 0.0], "rounding_bound": 0.0}
    total = float(sum(s[b - 1] - (s[a - 1] if a else 0.0) for s in decoded))
    std = math.sqrt(len(decoded)) * counter.range_std(a, b)  # independent noise per sensor
    return {"positions": b - a, "total": total, "std": std, "interval_95": [total - Z95 * std, total + Z95 * std],
            "rounding_bound": 2 * len(decoded) * counter.bias_bound}


def _sampled(a: int, b: int) -> list[int]:
    """Up to :data:`RUNNING_POINTS` positions from a to b − 1, evenly spaced, the last always included."""
    if b <= a:
        return []
    step = max(1, math.ceil((b - a) / RUNNING_POINTS))
    points = list(range(a + step - 1, b, step))
    return points if points and points[-1] == b - 1 else [*points, b - 1]


def counters_view(deployment: Deployment) -> dict[str, Any]:
    """What the totals panel needs to ask: the counter's parameters, the sensors and the areas (JSON-ready).

    Examples
    --------
    >>> from dpcloak.service.examples import counting_deployment, two_sensor_deployment
    >>> view = counters_view(counting_deployment())
    >>> view["continual"]["horizon"], view["areas"], round(view["worst_std"] / view["sigma_one"], 2) < 4
    (720, {'hall': [0, 1], 'door': [2]}, True)
    >>> counters_view(two_sensor_deployment())["continual"] is None
    True
    """
    counter = deployment.counter
    if counter is None:
        return {"continual": None, "areas": deployment.areas or {}, "n_sensors": deployment.n_sensors}
    return {"continual": deployment.continual, "areas": deployment.areas or {}, "n_sensors": deployment.n_sensors,
            "method": counter.method, "worst_std": counter.worst_std, "sigma_one": counter.sigma_one,
            "independent_worst_std": counter.sigma_one * math.sqrt(counter.horizon),
            "max_area_sensors": MAX_AREA_SENSORS, "max_periods": MAX_PERIODS}


router = APIRouter(tags=["analyst"])
"""The analyst's routes of running totals (:func:`dpcloak.service.app.create_app` adds the analyst token)."""

_SINCE = Query(ge=0, le=2**40, description="Unix time: windows starting from then (e.g. Monday 00:00).")
_UNTIL = Query(ge=0, le=2**40, description="Unix time: windows ending by then (default: now).")
_PERIOD = Query(ge=1e-3, le=2**32, description=(
    f"Also the totals of consecutive periods of this many seconds from since (86400: daily, 604800: weekly), "
    f"at most {MAX_PERIODS} of them."))


async def _answer(request: Request, sensors: list[int], since: float, until: float | None,
                  period: float | None) -> dict[str, Any]:
    collector = request.app.state.collector
    end = collector.clock() if until is None else until
    try:
        found: dict[str, Any] = await collector.run_in_reader(partial(
            counter_totals, collector.deployment, collector.store, sensors=sensors, since=since, until=end,
            period_seconds=period))
    except InvalidParameterError as exc:
        field = {"until": "query.until", "period_seconds": "query.period"}.get(exc.parameter or "")
        status = 404 if exc.parameter == "continual" else 422
        raise ReportError(status, "not_found" if status == 404 else "invalid", str(exc), field) from None
    return found


@router.get("/api/v1/counters", responses=documented(401))
async def counters(request: Request) -> dict[str, Any]:
    """The continual counter of the deployment's count sensors (``continual: null`` without one) and its areas."""
    return counters_view(request.app.state.collector.deployment)


@router.get("/api/v1/counters/sensors/{sensor}/totals", responses=documented(401, 404, 422))
async def sensor_totals(
        request: Request,
        sensor: Annotated[int, PathParam(ge=0, le=2**31, description="The sensor's index.")],
        since: Annotated[float, _SINCE],
        until: Annotated[float | None, _UNTIL] = None,
        period: Annotated[float | None, _PERIOD] = None) -> dict[str, Any]:
    """People past counter ``sensor`` between two times (its decoded running totals), with the factorisation's
    error bar; the running total since ``since``; optionally daily / weekly totals with theirs."""
    n = request.app.state.collector.deployment.n_sensors
    if sensor >= n:
        raise ReportError(404, "not_found", f"sensor must be in [0, {n - 1}]", "path.sensor")
    return await _answer(request, [sensor], since, until, period)


@router.get("/api/v1/counters/areas/{area}/totals", responses=documented(401, 404, 422))
async def area_totals(
        request: Request,
        area: Annotated[str, PathParam(min_length=1, max_length=64, description="A declared area's name.")],
        since: Annotated[float, _SINCE],
        until: Annotated[float | None, _UNTIL] = None,
        period: Annotated[float | None, _PERIOD] = None) -> dict[str, Any]:
    """The summed running totals of an area's sensors between two times, with the error bar of their independent
    noises added; optionally daily / weekly totals."""
    areas = request.app.state.collector.deployment.areas or {}
    if area not in areas:
        raise ReportError(404, "not_found", f"no area {area!r} is declared (areas: {', '.join(areas) or 'none'})",
                          "path.area")
    return await _answer(request, list(areas[area]), since, until, period)

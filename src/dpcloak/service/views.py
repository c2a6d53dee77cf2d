"""What the analyst API and the dashboard show: the deployment, the sensors' activity, exports."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any, TypeVar

from dpcloak.service import _network
from dpcloak.service.config import Deployment, every_window, schedule_words
from dpcloak.service.store import Store

__all__ = ["guarantee_words", "continual_words", "policy_words", "policy_view", "skipped_release", "deployment_view",
           "sensors_view", "total_view", "export_rows", "export_csv_header", "export_csv_chunks", "export_csv",
           "export_json_chunks", "export_parquet_chunks", "export_parquet"]

T = TypeVar("T")

EXPORT_CHUNK_WINDOWS = 64
"""Windows per piece of a streamed export (a CSV piece, a Parquet row group)."""

LAST_SEEN_LOOKBACK = 86_400.0
"""Seconds of windows (one day) searched for a sensor's last report: a sensor silent longer shows as not seen."""

EXPORT_COLUMNS = ("window", "window_start", "window_end", "source", "coordinates", "people", "uncertainty_m",
                  "uncertainty_90_m", "status", "misfit", "missing", "sigma", "epsilon_period", "delta_period",
                  "converged")
"""The export table's columns. ``status`` and ``misfit``: how the window's map was obtained and the share of the
readings it leaves unexplained (:class:`~dpcloak.service.store.WindowRecord`; a least-residual map states no
uncertainty). ``window_start`` / ``window_end``: the window's time span (UTC; ISO 8601 text in
CSV and JSON, a timestamp in Parquet). ``coordinates``: the source location (metres, one number per axis), an
array in JSON and Parquet, one numeric column per axis in CSV (``x_m`` and, on a plane, ``y_m``)."""


def _duration(seconds: float) -> str:
    """A duration in the largest unit that keeps it at least 1 (``90 s``, ``2 min``, ``1 h``, ``1 day``, ``1.5 days``).

    Examples
    --------
    >>> [_duration(s) for s in (90.0, 3600.0, 86400.0, 129600.0, 86400.0 * 30)]
    ['1.5 min', '1 h', '1 day', '1.5 days', '30 days']
    """
    for unit, size in (("day", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= size:
            value = f"{seconds / size:.3g}"
            return f"{value} {unit}" + ("s" if unit == "day" and value != "1" else "")
    return f"{seconds:.3g} s"


def policy_words(deployment: Deployment) -> str:
    """The release policy's guarantee in one line per level ("any W consecutive windows: (ε, δ); one window: …").

    Examples
    --------
    >>> from dpcloak.service.examples import two_sensor_deployment
    >>> print(policy_words(two_sensor_deployment(policy_releases=4, lifetime_releases=100)))
    any 10 consecutive windows (10 min): (1.89, 1e-05) — at most 4 release windows, every 3rd window;
    one window: (1, 1e-06); lifetime: (12.1, 1e-05) — at most 100 release windows in all
    >>> print(policy_words(two_sensor_deployment(policy_releases=4, stride=1)))  # doctest: +NORMALIZE_WHITESPACE
    any 10 consecutive windows (10 min): (1.89, 1e-05) — at most 4 release windows, every window until 4 fill the
    sliding window, then none (skipped for budget) until it renews;
    one window: (1, 1e-06); no lifetime cap (longer spans add up)
    """
    st = deployment.policy_statement()
    span = _duration(st.span_windows * deployment.window_seconds)
    life = ("no lifetime cap (longer spans add up)" if st.lifetime is None else
            f"lifetime: ({st.lifetime[0]:.3g}, {st.lifetime[1]:.2g}) — at most {st.lifetime_releases} release "
            "windows in all")
    return (f"any {st.span_windows} consecutive windows ({span}): ({st.span[0]:.3g}, {st.span[1]:.2g}) — at most "
            f"{st.span_releases} release windows, {schedule_words(deployment)};\n"
            f"one window: ({st.window[0]:.3g}, {st.window[1]:.2g}); {life}")


def guarantee_words(deployment: Deployment) -> str:
    """The deployment's guarantee in plain words.

    Examples
    --------
    >>> from dpcloak.service.examples import two_sensor_deployment
    >>> deployment = two_sensor_deployment(policy_releases=4)
    >>> import textwrap
    >>> print(textwrap.fill(guarantee_words(deployment), 100))
    Every sensor adds exact discrete Gaussian noise (σ = 4.301 people) to its reading before it leaves
    the sensor; this collector never sees a raw reading. One window's readings of all sensors are (1,
    1e-06)-differentially private for one person moved by up to 150 m, holds if the readings follow the
    model (graph diffusion on the 4-nearest-neighbour graph of the sites, τ = 2000 m², spreading ~63 m):
    nobody can tell from them whether that happened, whichever sensors report. Sensors release only in
    every 3rd window (the public schedule: at most 4 release windows in any 10 consecutive windows, i.e.
    10 min) and refuse other windows, so everything released in any 10 consecutive windows is (1.89,
    1e-05)-differentially private, also for patterns that repeat within them; every window in which any
    sensor reports is charged as one release of all sensors. There is no lifetime cap: longer spans add
    up (any 20 consecutive windows: at most (2.57, 1e-05)).
    """
    if deployment.counter is not None:
        return continual_words(deployment)
    net = deployment.sensor_network
    st = deployment.policy_statement()
    span = _duration(st.span_windows * deployment.window_seconds)
    every = ("only in " if st.stride > 1 and not deployment.fills_up else "in ") + schedule_words(deployment)
    condition = net.model_condition
    if st.lifetime is None:
        twice = deployment.guarantee(deployment.max_release_windows(2 * st.span_windows))
        life = (f"There is no lifetime cap: longer spans add up (any {2 * st.span_windows} consecutive windows: at "
                f"most ({twice[0]:.3g}, {twice[1]:.2g})).")
    else:
        life = (f"Over its lifetime a sensor releases in at most {st.lifetime_releases} windows, so everything it "
                f"ever releases is ({st.lifetime[0]:.3g}, {st.lifetime[1]:.2g})-differentially private.")
    return (
        f"Every sensor adds {net.noise} to its reading before it leaves the sensor; this collector never "
        f"sees a raw reading. One window's readings of all sensors are ({st.window[0]:.3g}, {st.window[1]:.2g})-"
        f"differentially private for {net.privacy_unit}{'' if condition is None else ', ' + condition}: nobody can "
        f"tell from them whether that happened, whichever sensors report. Sensors release {every} (the public "
        f"schedule: at most {st.span_releases} release windows in any {st.span_windows} consecutive windows, i.e. "
        f"{span}) and refuse other windows, so everything released in any {st.span_windows} consecutive windows is "
        f"({st.span[0]:.3g}, {st.span[1]:.2g})-differentially private, also for patterns that repeat within them; "
        f"every window in which any sensor reports is charged as one release of all sensors. {life}"
    )


def continual_words(deployment: Deployment) -> str:
    """The guarantee of a deployment whose count sensors release running totals (``continual``), in plain words.

    Examples
    --------
    >>> from dpcloak.service.examples import counting_deployment
    >>> import textwrap
    >>> print(textwrap.fill(continual_words(counting_deployment()), 100))
    Every sensor releases its running total of people with the continual counter (matrix factorisation,
    exact discrete Gaussian noise correlated across windows, drawn on the sensor); this collector never
    sees a raw count. The counters of all sensors are one release of the privacy accountant: one
    person's counts in one window (at most 1 count over all sensors) are (1, 1e-06)-differentially
    private; in any 60 consecutive windows (1 h; at most 60 release windows) (96.4, 1e-06), computed
    exactly from the factorisation (the norm of the sum of 60 consecutive columns), not as 60 separate
    events; over the counter's whole horizon of 720 release windows (3.18e+03, 1e-06). Sensors release
    in every window and stop after 720 release windows. The running total after t windows has error ≤
    13.6 people (1 σ), against 122 for independent noise.
    """
    counter = deployment.counter
    assert counter is not None
    st = deployment.policy_statement()
    c = deployment.release_spec.max_count_per_person
    span = _duration(st.span_windows * deployment.window_seconds)
    life = st.lifetime_releases if st.lifetime_releases is not None else counter.horizon
    worst = counter.worst_std
    naive = counter.sigma_one * math.sqrt(counter.horizon)
    return (
        f"Every sensor releases its running total of {deployment.release_spec.reading_unit} with the continual counter "
        f"(matrix factorisation, exact discrete Gaussian noise correlated across windows, drawn on the sensor); this "
        f"collector never sees a raw count. The counters of all sensors are one release of the privacy accountant: "
        f"one person's counts in one window (at most {c} count{'s' if c != 1 else ''} over all sensors) are "
        f"({st.window[0]:.3g}, {st.window[1]:.2g})-differentially private; in any {st.span_windows} consecutive "
        f"windows ({span}; at most {st.span_releases} release windows) ({st.span[0]:.3g}, {st.span[1]:.2g}), computed "
        f"exactly from the factorisation (the norm of the sum of {st.span_releases} consecutive columns), not as "
        f"{st.span_releases} separate events; over the counter's whole horizon of {counter.horizon} release windows "
        f"({st.lifetime[0]:.3g}, {st.lifetime[1]:.2g}). Sensors release in {schedule_words(deployment)} and stop after "  # type: ignore[index]
        f"{life} release windows. The running total after t windows has error ≤ {worst:.3g} "
        f"{deployment.release_spec.reading_unit} (1 σ), against {naive:.3g} for independent noise."
    )


def skipped_release(deployment: Deployment, store: Store, *, now: float) -> tuple[int | None, list[int]]:
    """The last release window whose reports are due, and the sensors that skipped it though the policy let them.

    A release window is due once it ended more than ``grace_seconds`` ago. A sensor *skipped* it when it
    reported in the ``period_windows`` windows before it but neither in it nor since: the policy let it
    release and it did not (its node refused for budget, or it is down). Sensors silent for the whole span
    before are not counted (they are not expected). ``(None, [])`` before the first due release window.

    Examples
    --------
    >>> import tempfile
    >>> from dpcloak.service.examples import two_sensor_store
    >>> tmp = tempfile.TemporaryDirectory()
    >>> deployment, store = two_sensor_store(tmp.name)  # every window releases, 60 s windows, 5 s grace
    >>> _ = store.insert_reports([{"deployment_id": "abc123", "sensor_id": j, "window": 0, "report_id": f"r-{j}",
    ...                         "value": 10.0, "mac": "00", "received_at": 30.0} for j in (0, 1)])
    >>> _ = store.insert_reports([{"deployment_id": "abc123", "sensor_id": 0, "window": 1, "report_id": "r-2",
    ...                         "value": 10.0, "mac": "00", "received_at": 90.0}])
    >>> skipped_release(deployment, store, now=125.0 + 5.0)  # window 1 is due: sensor 1 released nothing in it
    (1, [1])
    >>> store.dispose()
    >>> tmp.cleanup()
    """
    due = deployment.window_at(now - deployment.grace_seconds) - 1
    if due < 0:
        return None, []
    last = deployment.previous_release_window(due)
    if last is None:
        return None, []
    first = max(0, last - deployment.period_windows + 1)
    if first == last:
        return last, []
    # the health check's: index only, the latest windows first (all sensors are found there when all report)
    seen = store.last_windows(deployment.deployment_id, first_window=first, n_sensors=deployment.n_sensors)
    return last, sorted(j for j, w in seen.items() if w < last)


def policy_view(deployment: Deployment, *, now: float, store: Store | None = None) -> dict[str, Any]:
    """Whether sensors release or skip now under the policy, when the next release window starts, and who skips.

    ``status`` is ``"degraded"`` while sensors skip for budget (the schedule is in its rest phase and the
    store holds releases inside the sliding window ending now: ``budget_skip``, naming in
    ``skipping_for_budget`` the sensors that released in it, which all wait for ``next_release_window``),
    when sensors skip where the policy lets them release (the last due release window,
    :func:`skipped_release`) or when the lifetime cap is reached; ``"ok"`` otherwise, also in the windows
    that an even schedule skips (normal operation with a stride > 1) and in a rest phase of the schedule
    with no release in the sliding window (a demo that starts there: no budget is spent, nothing waits for
    it). Without ``store`` nothing shows releases, so no window is called a budget skip.

    Examples
    --------
    >>> from dpcloak.service.examples import two_sensor_deployment
    >>> deployment = two_sensor_deployment(policy_releases=4)  # every 3rd window: 0, 3, 6, ...
    >>> view = policy_view(deployment, now=125.0)  # window 2: skipped by schedule, which is normal
    >>> view["status"], view["release_window"], view["next_release_window"], view["next_release_at"]
    ('ok', False, 3, 180.0)
    >>> print(view["message"])  # doctest: +NORMALIZE_WHITESPACE
    window 2 is not a release window (every 3rd window): sensors skip it by schedule; the next release window is 3,
    in 55 s
    >>> import tempfile
    >>> from dpcloak.service.store import Store, sqlite_url
    >>> tmp = tempfile.TemporaryDirectory()
    >>> store = Store(sqlite_url(tmp.name + "/c.db")); store.migrate()
    >>> burst = two_sensor_deployment(policy_releases=4, stride=1)  # windows 0-3, then skip for budget to 10
    >>> store.register(burst)
    >>> view = policy_view(burst, now=365.0, store=store)  # window 6, in the rest phase: nothing released yet
    >>> view["status"], view["budget_skip"], view["next_release_window"]
    ('ok', False, 10)
    >>> print(view["message"])  # doctest: +NORMALIZE_WHITESPACE
    window 6 is in the rest phase of the schedule (every window until 4 fill the sliding window, then none (skipped
    for budget) until it renews) and no sensor released in the last 10 windows: nothing is skipped for budget; the
    next release window is 10, in 3.92 min
    >>> _ = store.insert_reports([{"deployment_id": "abc123", "sensor_id": 1, "window": 3, "report_id": "r",
    ...                            "value": 1.0, "mac": "00", "received_at": 200.0}])
    >>> view = policy_view(burst, now=365.0, store=store)  # sensor 1 released in window 3: a budget skip
    >>> view["status"], view["budget_skip"], view["skipping_for_budget"], view["next_release_at"]
    ('degraded', True, [1], 600.0)
    >>> print(view["message"])  # doctest: +NORMALIZE_WHITESPACE
    the sliding window holds the schedule's 4 release windows (4 in any 10 consecutive windows): sensor(s) 1 skip
    for budget until window 10, in 3.92 min, when the schedule releases again
    >>> store.dispose(); tmp.cleanup()
    >>> capped = two_sensor_deployment(policy_releases=4, lifetime_releases=2)  # release windows 0 and 3 only
    >>> view = policy_view(capped, now=400.0)
    >>> view["status"], view["next_release_window"]
    ('degraded', None)
    >>> print(view["message"])
    the lifetime cap of 2 release windows is reached: sensors release no more
    """
    w = deployment.window_at(now)
    nxt = deployment.next_release_window(max(w, 0))
    at = None if nxt is None else deployment.window_start(nxt)
    wait = "" if at is None else _duration(max(0.0, at - now))
    last, skipping = (None, []) if store is None else skipped_release(deployment, store, now=now)
    rest = deployment.budget_skip(w)  # the schedule's rest phase: a budget skip only if releases fill the window
    for_budget: list[int] = []
    if rest and store is not None:  # the sensors whose releases fill the sliding window: every one of them waits
        for_budget = sorted(store.last_windows(deployment.deployment_id,
                                               first_window=max(0, w - deployment.period_windows + 1),
                                               n_sensors=deployment.n_sensors))
    budget = bool(for_budget)
    if nxt is None:
        status, message = "degraded", (f"the lifetime cap of {deployment.lifetime_releases} release windows is "
                                       "reached: sensors release no more")
    elif budget:
        status = "degraded"
        k = deployment.releases_per_period  # all k of the schedule's, used or not: the schedule rests until nxt
        message = (f"the sliding window holds the schedule's {k} release windows ({k} in any "
                   f"{deployment.period_windows} consecutive windows): sensor(s) {_listed(for_budget)} skip for "
                   f"budget until window {nxt}, in {wait}, when the schedule releases again")
    else:
        status = "ok"
        if nxt == w:
            message = f"window {w} is a release window"
        elif rest:
            message = (f"window {w} is in the rest phase of the schedule ({schedule_words(deployment)}) and no "
                       f"sensor released in the last {deployment.period_windows} windows: nothing is skipped for "
                       f"budget; the next release window is {nxt}, in {wait}")
        else:
            message = (f"window {w} is not a release window ({every_window(deployment.release_stride)}): sensors skip "
                       f"it by schedule; the next release window is {nxt}, in {wait}")
    if skipping and nxt is not None:
        status = "degraded"
        message = (f"{len(skipping)} sensor(s) released nothing in release window {last} although the policy let "
                   f"them (their node refused, or is down): sensor(s) {_listed(skipping)}; {message}")
    return {"status": status, "window": w, "release_window": nxt == w, "next_release_window": nxt,
            "next_release_at": at, "last_due_release_window": last, "skipping": skipping, "budget_skip": budget,
            "skipping_for_budget": for_budget, "message": message, "words": policy_words(deployment)}


def _listed(sensors: list[int]) -> str:
    """Up to ten sensor ids, then an ellipsis."""
    return ", ".join(str(j) for j in sensors[:10]) + (", …" if len(sensors) > 10 else "")


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
    >>> view["policy"]["span_releases"], view["policy"]["stride"], view["policy"]["lifetime_releases"]
    (10, 1, None)
    >>> from dpcloak.service.examples import counting_deployment  # maps from the counters' decoded counts
    >>> view["continual"], deployment_view(counting_deployment(), now=0.0)["continual"]["horizon"]
    (None, 720)
    """
    net = deployment.sensor_network
    st = deployment.policy_statement()
    k = st.span_releases
    return {
        "deployment_id": deployment.deployment_id,
        "fingerprint": deployment.fingerprint,
        "n_sensors": deployment.n_sensors,
        "window_seconds": deployment.window_seconds,
        "start": deployment.start,
        "current_window": deployment.window_at(now),
        "period_windows": deployment.period_windows,
        "releases_per_period": k,
        "clock_skew_seconds": deployment.clock_skew_seconds,
        "sigma": float(net.sigma),
        "continual": deployment.continual,
        "reading_unit": net.reading_unit,
        "source_unit": net.source_unit,
        "measurement": net.measurement,
        "relation": net.privacy_unit,
        "guarantee": net.guarantee_text(),
        "guarantee_window": {"epsilon": st.window[0], "delta": st.window[1]},
        "guarantee_period": {"epsilon": st.span[0], "delta": st.span[1], "releases": k},
        "budget_per_period": {"epsilon": net.budget[0], "delta": net.budget[1]},
        "policy": {"span_windows": st.span_windows, "span_releases": k, "stride": st.stride,
                   "fills_up": deployment.fills_up,
                   "span": {"epsilon": st.span[0], "delta": st.span[1]},
                   "window": {"epsilon": st.window[0], "delta": st.window[1]},
                   "lifetime_releases": st.lifetime_releases,
                   "lifetime": None if st.lifetime is None else {"epsilon": st.lifetime[0], "delta": st.lifetime[1]},
                   "words": policy_words(deployment)},
        "guarantee_text": guarantee_words(deployment),
        "sensor_positions": _network.sensor_positions(net).tolist(),
        "source_positions": _network.source_positions(net).tolist(),
    }


def sensors_view(deployment: Deployment, store: Store, now: float) -> dict[str, Any]:
    """Per sensor: last window, last seen, readings in the policy's sliding window and their running total with
    its error bar, the budget left and its renewal.

    The policy's sliding window is the ``period_windows`` windows ending at the current one. Every
    window in which any sensor reported is charged to every sensor (one release of all sensors), so
    the spent ε, the release windows left and the renewal — when the oldest charged window leaves
    the sliding window — are the same for all sensors; ``readings_in_period`` is each sensor's own.
    ``total`` is the sum of a sensor's released readings in the sliding window (``all_sensors``: of
    every sensor's), ``std`` its noise's standard deviation σ√n and ``interval_95`` ±1.96 σ√n around it
    (as :func:`total_view`); summing released values spends no privacy.

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
    >>> sorted(view)  # doctest: +NORMALIZE_WHITESPACE
    ['all_sensors', 'period_first_window', 'release_windows_charged', 'releases_left', 'releases_per_period',
     'renews_at', 'renews_at_window', 'seen_since_window', 'sensors']
    >>> view["release_windows_charged"], view["releases_left"], view["renews_at_window"], view["renews_at"]
    (1, 9, 10, 600.0)
    >>> [(s["sensor"], s["last_window"], s["last_seen"], s["readings_in_period"], s["next_release_window"])
    ...  for s in view["sensors"]]
    [(0, 0, 30.0, 1, 1), (1, None, None, 0, 1)]
    >>> [(s["total"], s["std"] / deployment.sensor_network.sigma) for s in view["sensors"]]
    [(10.0, 1.0), (0.0, 0.0)]
    >>> store.dispose()
    >>> tmp.cleanup()
    """
    current = max(deployment.window_at(now), 0)
    first = max(0, current - deployment.period_windows + 1)
    charged = store.windows_with_reports(deployment.deployment_id, first_window=first, last_window=current)
    k = deployment.releases_per_period
    eps, delta = deployment.guarantee(len(charged))
    renews = charged[0] + deployment.period_windows if charged else None
    nxt = deployment.next_release_window(current + 1)
    lookback = max(deployment.period_windows, math.ceil(LAST_SEEN_LOOKBACK / deployment.window_seconds))
    since = max(0, min(first, current - lookback))
    activity = store.sensor_activity(deployment.deployment_id, first_window=first, since_window=since,
                                     n_sensors=deployment.n_sensors)
    sigma = None if deployment.counter is not None else float(deployment.sensor_network.sigma)
    out = []
    for j in range(deployment.n_sensors):
        last_window, last_seen, in_period, total = activity.get(j, (None, None, 0, 0.0))
        out.append({"sensor": j, "last_window": last_window, "last_seen": last_seen, "readings_in_period": in_period,
                    **_summed(total, in_period, sigma), "epsilon_spent": eps, "delta": delta,
                    "releases_left": k - len(charged), "next_release_window": nxt})
    n_all = sum(s["readings_in_period"] for s in out)
    return {"period_first_window": first, "releases_per_period": k, "release_windows_charged": len(charged),
            "releases_left": k - len(charged), "renews_at_window": renews,
            "renews_at": None if renews is None else deployment.window_start(renews), "seen_since_window": since,
            "all_sensors": {"readings_in_period": n_all,
                            **_summed(math.fsum(s["total"] or 0.0 for s in out), n_all, sigma)},
            "sensors": out}


def _summed(total: float, n: int, sigma: float | None) -> dict[str, Any]:
    """A sum of ``n`` released readings with its noise's standard deviation σ√n and the 95 % interval ±1.96 σ√n.

    Every report carries independent exact discrete Gaussian noise of variance at most σ² (Canonne, Kamath
    & Steinke 2020), so the noise of the sum has variance at most nσ². ``sigma=None``: the reports are a
    continual counter's correlated outputs, whose sum means nothing (their totals are decoded by
    :mod:`dpcloak.service.totals`): ``None`` throughout.
    """
    if sigma is None:
        return {"total": None, "std": None, "interval_95": None}
    std = sigma * math.sqrt(n)
    return {"total": total, "std": std, "interval_95": [total - 1.96 * std, total + 1.96 * std]}


def total_view(deployment: Deployment, store: Store, *, sensor: int, since: float, until: float) -> dict[str, Any]:
    """One sensor's released readings summed over the windows inside ``[since, until)``, with an error bar.

    E.g. "people past counter j since Monday" (a door counter's counts summed from Monday 00:00). Every
    report is the reading rounded to the grid g plus independent exact discrete Gaussian noise of
    variance at most σ² (Canonne, Kamath & Steinke 2020), so the sum of n reports differs from the sum of
    the (clipped) readings by noise of standard deviation at most σ√n plus at most n·g/2 of rounding; the
    95 % interval is ±1.96 σ√n around the total (the rounding is stated apart). Windows without a report
    (skipped by the schedule, or missing) add nothing: ``reports`` says how many were summed. The sum is
    post-processing of released values: it spends no privacy.

    Examples
    --------
    >>> import tempfile
    >>> from dpcloak.service.examples import two_sensor_store
    >>> tmp = tempfile.TemporaryDirectory()
    >>> deployment, store = two_sensor_store(tmp.name)  # one-minute windows from t = 0
    >>> _ = store.insert_reports([{"deployment_id": "abc123", "sensor_id": 0, "window": w, "report_id": f"r-{w}",
    ...                         "value": 10.0, "mac": "00", "received_at": 60.0 * w + 30} for w in range(4)])
    >>> view = total_view(deployment, store, sensor=0, since=60.0, until=240.0)  # windows 1, 2 and 3
    >>> view["first_window"], view["last_window"], view["reports"], view["total"]
    (1, 3, 3, 30.0)
    >>> round(view["std"] / deployment.sensor_network.sigma, 6) == round(3 ** 0.5, 6)
    True
    >>> store.dispose()
    >>> tmp.cleanup()
    """
    ws = deployment.window_seconds
    first = max(0, math.ceil((since - deployment.start) / ws))  # windows that start at or after since
    last = math.floor((until - deployment.start) / ws) - 1  # and end by until
    total, n = store.sensor_total(deployment.deployment_id, sensor, first_window=first, last_window=last) \
        if last >= first else (0.0, 0)
    net = deployment.sensor_network
    return {"sensor": sensor, "since": since, "until": until, "first_window": first, "last_window": last,
            "windows": max(0, last - first + 1), "reports": n, **_summed(total, n, float(net.sigma)),
            "rounding_bound": n * float(net.mechanism.resolution) / 2, "unit": net.reading_unit}


def export_rows(deployment: Deployment, store: Store) -> Iterator[list[tuple[Any, ...]]]:
    """The export table (:data:`EXPORT_COLUMNS`): one row per (closed window, source), one list per window.

    ``window_start`` and ``window_end`` are timezone-aware UTC datetimes (``None`` for a time outside the
    years 1–9999), ``coordinates`` a tuple of floats. The windows are read a page at a time
    (:meth:`Store.windows`): memory stays constant whatever the length of the history.

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
    >>> window, start, end, source, coordinates = tables[0][1][:5]
    >>> window, start.isoformat(), end.isoformat(), source, coordinates  # window 0 of a 60 s clock started at 0
    (0, '1970-01-01T00:00:00+00:00', '1970-01-01T00:01:00+00:00', 1, (100.0, 0.0))
    """
    coords = [tuple(float(c) for c in row) for row in _network.source_positions(deployment.sensor_network)]
    for r in store.windows(deployment.deployment_id):
        start, end = _utc(deployment.window_start(r.window)), _utc(deployment.window_start(r.window + 1))
        yield [(r.window, start, end, i, coords[i], v, r.uncertainty, r.uncertainty_90, r.status, r.misfit, r.missing,
                r.sigma, r.epsilon_period, r.delta_period, r.converged) for i, v in enumerate(r.source_map)]


def _utc(seconds: float) -> datetime | None:
    try:
        return datetime.fromtimestamp(seconds, tz=UTC)
    except (OverflowError, ValueError, OSError):  # beyond the years datetime holds: no timestamp
        return None


def _iso(moment: datetime | None) -> str | None:
    """ISO 8601 in UTC with a ``Z`` (``None`` stays ``None``)."""
    return None if moment is None else moment.isoformat().replace("+00:00", "Z")


def _axes(deployment: Deployment) -> int:
    return int(_network.source_positions(deployment.sensor_network).shape[1])


def export_csv_header(deployment: Deployment) -> list[str]:
    """The CSV export's columns: :data:`EXPORT_COLUMNS` with ``coordinates`` as one numeric column per axis.

    Examples
    --------
    >>> from dpcloak.service.examples import two_sensor_deployment
    >>> export_csv_header(two_sensor_deployment())[:7]  # sources on a plane: two axes
    ['window', 'window_start', 'window_end', 'source', 'x_m', 'y_m', 'people']
    """
    k = EXPORT_COLUMNS.index("coordinates")
    axes = [("x_m", "y_m", "z_m")[a] if a < 3 else f"axis{a}_m" for a in range(_axes(deployment))]
    return [*EXPORT_COLUMNS[:k], *axes, *EXPORT_COLUMNS[k + 1:]]


def _csv_row(row: tuple[Any, ...]) -> list[Any]:
    k = EXPORT_COLUMNS.index("coordinates")
    return [row[0], _iso(row[1]), _iso(row[2]), *row[3:k], *row[k], *row[k + 1:]]


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
    csv.writer(buf).writerow(export_csv_header(deployment))
    yield buf.getvalue()
    for tables in _batched(export_rows(deployment, store), EXPORT_CHUNK_WINDOWS):
        buf = io.StringIO()
        writer = csv.writer(buf)
        for rows in tables:
            writer.writerows(_csv_row(row) for row in rows)
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
    >>> print(text.splitlines()[0].replace(",", " "))  # doctest: +NORMALIZE_WHITESPACE
    window window_start window_end source x_m y_m people uncertainty_m uncertainty_90_m status misfit missing sigma
    epsilon_period delta_period converged
    >>> print(text.splitlines()[2][:56])
    0,1970-01-01T00:00:00Z,1970-01-01T00:01:00Z,1,100.0,0.0,
    >>> store.dispose()
    >>> tmp.cleanup()
    """
    return "".join(export_csv_chunks(deployment, store))


def export_json_chunks(deployment: Deployment, store: Store) -> Iterator[str]:
    """The export table as a JSON array of row objects, in pieces of :data:`EXPORT_CHUNK_WINDOWS` windows.

    Keys are :data:`EXPORT_COLUMNS`; ``coordinates`` is an array of numbers, the window's times ISO 8601
    UTC text, a non-finite number ``null``.

    Examples
    --------
    Two sources of one window: each row's coordinates an array, its window's times UTC text.

    >>> import tempfile
    >>> from dpcloak.service.examples import two_sensor_store
    >>> tmp = tempfile.TemporaryDirectory()
    >>> pair = two_sensor_store(tmp.name, reading=10.0)
    >>> [(r["source"], r["coordinates"], r["window_start"], r["window_end"])
    ...  for r in json.loads("".join(export_json_chunks(*pair)))]  # doctest: +NORMALIZE_WHITESPACE
    [(0, [0.0, 0.0], '1970-01-01T00:00:00Z', '1970-01-01T00:01:00Z'),
     (1, [100.0, 0.0], '1970-01-01T00:00:00Z', '1970-01-01T00:01:00Z')]
    >>> pair[1].dispose()
    >>> tmp.cleanup()
    """
    yield "["
    first = True
    for tables in _batched(export_rows(deployment, store), EXPORT_CHUNK_WINDOWS):
        parts = []
        for rows in tables:
            for row in rows:
                record = dict(zip(EXPORT_COLUMNS, row, strict=True))
                record.update(window_start=_iso(row[1]), window_end=_iso(row[2]))
                parts.append(("\n" if first else ",\n") + json.dumps(_finite(record), allow_nan=False))
                first = False
        yield "".join(parts)
    yield "\n]\n"


def _finite(value: Any) -> Any:
    """``value`` with every non-finite float (NaN, ±inf: not JSON) as ``None``, tuples as lists."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


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
    schema = pa.schema([("window", pa.int64()), ("window_start", pa.timestamp("us", tz="UTC")),
                        ("window_end", pa.timestamp("us", tz="UTC")), ("source", pa.int64()),
                        ("coordinates", pa.list_(pa.float64())), ("people", pa.float64()),
                        ("uncertainty_m", pa.float64()), ("uncertainty_90_m", pa.float64()),
                        ("status", pa.string()), ("misfit", pa.float64()), ("missing", pa.int64()),
                        ("sigma", pa.float64()), ("epsilon_period", pa.float64()), ("delta_period", pa.float64()),
                        ("converged", pa.bool_())])

    def pieces() -> Iterator[bytes]:
        sink = _Pieces()
        with pq.ParquetWriter(sink, schema) as writer:
            for tables in _batched(export_rows(deployment, store), EXPORT_CHUNK_WINDOWS):
                rows = [row for rows in tables for row in rows]
                writer.write_table(pa.table({name: [list(r[k]) if name == "coordinates" else r[k] for r in rows]
                                             for k, name in enumerate(EXPORT_COLUMNS)}, schema=schema))
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

"""What the analyst API reads: the sensors' activity over a bounded range of windows (``views.sensors_view``).

Oracle: the same quantities counted by brute force over every stored report (``Store.all_reports``).
The export's streaming is tested with the API in ``test_api.py``; the dashboard in ``test_dashboard.py``.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from dpcloak.service import views
from dpcloak.service.config import Deployment
from dpcloak.service.store import Store, sqlite_url


def test_sensors_view_reads_a_bounded_range_and_matches_brute_force(
        tmp_path: Path, deployment_dir: tuple[Path, Deployment]) -> None:
    """Hour-long windows, periods of 6: the last-seen search looks back one day (24 windows). Sensors last
    seen within it, one seen only before it, one never: each row equals the brute-force answer over the
    reports of the windows looked at, and the reports before ``seen_since_window`` are not read at all."""
    dep = dataclasses.replace(deployment_dir[1], window_seconds=3600.0, period_windows=6, policy_releases=None,
                              start=0.0)
    store = Store(sqlite_url(tmp_path / "v.db"))
    store.migrate()
    store.register(dep)
    rng = np.random.default_rng(11)
    did, m = dep.deployment_id, dep.n_sensors
    rows = []
    for w in range(100):
        for j in range(m):
            silent_since = {0: 50, 1: 200, 2: 90, 3: 98}.get(j, 1000)  # sensor 0 gone long ago, 1 never reports
            if j == 1 or w >= silent_since or rng.random() < 0.3:
                continue
            rows.append({"deployment_id": did, "sensor_id": j, "window": w, "report_id": f"{w}-{j}",
                         "value": float(rng.integers(-50, 200)) / 8, "received_at": w * 3600.0 + rng.uniform(0, 3600)})
    store.insert_reports(rows)
    now = 100 * 3600.0 + 10.0  # window 100; the sliding window of 6 starts at window 95
    view = views.sensors_view(dep, store, now)
    first, since = 95, 100 - max(6, math.ceil(views.LAST_SEEN_LOOKBACK / 3600.0))
    assert view["period_first_window"] == first and view["seen_since_window"] == since == 76
    reports = store.all_reports(did)
    charged = {r.window for r in reports if first <= r.window <= 100}  # any sensor reported: one vector release
    assert view["release_windows_charged"] == len(charged)
    for row in view["sensors"]:
        mine = [r for r in reports if r.sensor_id == row["sensor"] and r.window >= since]
        last = max(mine, key=lambda r: r.window, default=None)
        in_period = sum(r.window >= first for r in mine)
        assert row["readings_in_period"] == in_period
        # the running total over the sliding window: exact sum (values are multiples of 1/8) and sigma * sqrt(n)
        assert Fraction(row["total"]) == sum(Fraction(r.value) for r in mine if r.window >= first)
        assert row["std"] == pytest.approx(float(dep.sensor_network.sigma) * math.sqrt(in_period), rel=1e-15)
        assert row["interval_95"] == pytest.approx([row["total"] - 1.96 * row["std"], row["total"] + 1.96 * row["std"]])
        assert row["epsilon_spent"] == dep.guarantee(len(charged))[0]
        assert (row["last_window"], row["last_seen"]) == ((None, None) if last is None
                                                          else (last.window, last.received_at)), row
    in_window = [r for r in reports if r.window >= first]
    assert Fraction(view["all_sensors"]["total"]) == sum(Fraction(r.value) for r in in_window)
    assert view["all_sensors"]["readings_in_period"] == len(in_window)
    assert view["all_sensors"]["std"] == pytest.approx(float(dep.sensor_network.sigma) * math.sqrt(len(in_window)))
    by_sensor = {row["sensor"]: row for row in view["sensors"]}
    assert by_sensor[0]["last_window"] is None and by_sensor[1]["last_window"] is None  # gone / never: not seen
    assert by_sensor[2]["last_window"] is not None and by_sensor[2]["readings_in_period"] == 0  # seen before period
    # bounded: with the reports before the lookback gone, the answer is the same
    with store.engine.begin() as conn:
        conn.exec_driver_sql("DELETE FROM reports WHERE window < ?", (since,))
    assert views.sensors_view(dep, store, now) == view
    store.dispose()


def test_policy_view_calls_the_rest_phase_a_budget_skip_only_with_releases_in_the_sliding_window(
        tmp_path: Path) -> None:
    """Burst schedule (4 in any 10, stride 1: windows 0-3, 10-13, ... release). In every window of the rest phase
    (4-9) the health is ``degraded`` for budget exactly when a stored report lies in the sliding window ending then
    (oracle: the inserted reports filtered by hand), naming those sensors; otherwise ``ok`` with "rest phase of the
    schedule" (a demo that starts there). Schedule windows and release windows are never budget skips."""
    from dpcloak.service.examples import two_sensor_deployment

    burst = two_sensor_deployment(policy_releases=4, stride=1)
    for reports in ([], [(1, 0)], [(0, 2), (1, 3)]):  # (sensor, window) stored
        store = Store(sqlite_url(tmp_path / f"p{len(reports)}.db"))
        store.migrate()
        store.register(burst)
        store.insert_reports([{"deployment_id": "abc123", "sensor_id": j, "window": w, "report_id": f"{j}-{w}",
                               "value": 1.0, "mac": "00", "received_at": 60.0 * w + 1.0} for j, w in reports])
        for w in range(0, 14):
            view = views.policy_view(burst, now=60.0 * w + 30.0, store=store)
            in_window = sorted({j for j, v in reports if w - 10 < v <= w})
            rest = w in range(4, 10)
            assert view["budget_skip"] == (rest and bool(in_window))
            assert view["skipping_for_budget"] == (in_window if rest else [])
            if rest and in_window:
                assert view["status"] == "degraded" and "skip for budget until window 10" in view["message"]
            elif rest:
                assert view["status"] == "ok" and "rest phase of the schedule" in view["message"]
                assert "budget until" not in view["message"]
            assert view["next_release_window"] == (w if not rest else 10)
        store.dispose()

"""End to end: ``dpcloak serve`` as a real process, 50 sensor nodes, 20 windows, SQLite and PostgreSQL 15.

Oracles: the sensors' own ledgers (what was acknowledged), the library's ``bpdn`` on the stored
private readings with the radius written out from its documented formula (the recovered maps),
``dpcloak.privacy.accounting.composed_epsilon`` on the network's mechanism (the guarantee shown).
"""

from __future__ import annotations

import math
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import chi2

from dpcloak.privacy.accounting import composed_epsilon
from dpcloak.recovery import bpdn
from dpcloak.service.config import load_credential
from dpcloak.service.ledger import LedgerEntry
from dpcloak.service.node import SensorNode
from dpcloak.service.store import Store, sqlite_url

from .conftest import make_deployment, running_collector

WINDOWS = 20
SENSORS = 50


def _incomplete(sensor: int, window: int) -> bool:
    """Sensors 0 and 1 miss every fourth window: those windows are recovered from 48 rows, flagged."""
    return sensor < 2 and window % 4 == 0


def _run_sensor(directory: Path, url: str, sensor: int, readings: np.ndarray) -> list[LedgerEntry]:
    dep_file = directory / "deployment.json"
    from dpcloak.service.config import load_deployment

    node = SensorNode(deployment=load_deployment(dep_file),
                      credential=load_credential(directory / "sensors" / f"sensor-{sensor}.json"),
                      ledger=directory / f"ledger-{sensor}.db", url=url)
    try:
        for w in range(WINDOWS):
            if _incomplete(sensor, w):
                continue
            entry = node.release(float(readings[w, sensor]), window=w)
            first = node.deliver(entry)
            assert first.outcome == "stored", first
            if sensor == 2:  # a retry after a lost acknowledgement: acknowledged again, stored once
                again = node.deliver(entry)
                assert (again.outcome, again.http_status) == ("duplicate", 200)
        return node.ledger.all()
    finally:
        node.close()


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_collector_process_end_to_end(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    dep = make_deployment(tmp_path, sensor_rows=5, sensor_cols=10)
    assert dep.n_sensors == SENSORS
    db_url = sqlite_url(tmp_path / "collector.db") if backend == "sqlite" else request.getfixturevalue("postgres_url")
    net = dep.sensor_network
    rng = np.random.default_rng(7)
    f = np.zeros((WINDOWS, net.n_sources))
    f[np.arange(WINDOWS), rng.integers(0, net.n_sources, WINDOWS)] = 30.0  # a crowd of 30 people per window
    readings = np.stack([net.model.matvec(fw) for fw in f])

    with running_collector(tmp_path, db_url, tmp_path / "collector.log") as collector:
        with ThreadPoolExecutor(max_workers=8) as pool:
            ledgers = list(pool.map(lambda j: _run_sensor(tmp_path, collector.url, j, readings), range(SENSORS)))
        expected_full = [w for w in range(WINDOWS) if w % 4 != 0]
        with collector.analyst() as client:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                closed = {r["window"] for r in client.get("/api/v1/windows").json()["windows"]}
                if set(expected_full) <= closed:
                    break
                time.sleep(0.25)
            assert set(expected_full) <= closed, f"full windows not closed in time: {sorted(closed)}"
            for w in range(0, WINDOWS, 4):
                resp = client.post(f"/api/v1/windows/{w}/close")
                assert resp.status_code == 200, resp.text
            records = {w: client.get(f"/api/v1/windows/{w}").json() for w in range(WINDOWS)}
            shown = client.get("/api/v1/deployment").json()
        assert "Traceback" not in collector.log()

    # 1. Every acknowledged report is stored exactly once, and nothing else is stored.
    acked = {(e.window, j, e.report_id, e.value) for j, entries in enumerate(ledgers) for e in entries
             if e.acknowledged}
    assert len(acked) == sum(len(entries) for entries in ledgers) == WINDOWS * SENSORS - 2 * len(range(0, 20, 4))
    store = Store(db_url)
    stored = [(r.window, r.sensor_id, r.report_id, r.value) for r in store.all_reports(dep.deployment_id)]
    store.dispose()
    assert len(stored) == len(set(stored)) == len(acked)
    assert set(stored) == acked

    # 2. Each window's map equals the library's bpdn on the same private readings (the stored rows).
    by_window: dict[int, dict[int, float]] = {}
    for w, j, _, v in stored:
        by_window.setdefault(w, {})[j] = v
    # the documented problem (dpcloak.sensors.result): min Σf s.t. ‖M_P f − ỹ_P‖ ≤ r, f ≥ 0,
    # r = σ √(χ²_{|P|} quantile at 0.95) + (g/2) √|P|
    dense = net.model.todense()
    for w in range(WINDOWS):
        rec = records[w]
        present = sorted(by_window[w])
        assert rec["reporting"] == present
        assert rec["flagged"] is (w % 4 == 0) and rec["missing"] == SENSORS - len(present)
        p = len(present)
        radius = net.sigma * math.sqrt(chi2.ppf(0.95, p)) + 0.5 * net.resolution * math.sqrt(p)
        oracle = bpdn(dense[present], np.array([by_window[w][j] for j in present]), radius=radius,
                      bounds=(0.0, None))
        got = np.array(rec["source_map"])
        assert np.allclose(got, oracle.x, rtol=0, atol=1e-6 * max(1.0, np.abs(oracle.x).max())), w
        assert rec["sigma"] == pytest.approx(net.sigma, rel=1e-12)

    # 3. The composed guarantee shown equals the accountant's.
    k = shown["guarantee_period"]["releases"]
    assert k == dep.releases_per_period
    delta = shown["guarantee_period"]["delta"]
    assert delta == net.budget[1]
    assert shown["guarantee_period"]["epsilon"] <= net.budget[0]
    accountant = net.to_dict()["privacy"]["accountant"]  # the composition the configuration declares
    assert shown["guarantee_period"]["epsilon"] == pytest.approx(
        composed_epsilon(net.mechanism, readings=k, delta=delta, accountant=accountant), rel=1e-9)
    mech = net.mechanism  # independent upper bound: k·ρ-zCDP ⇒ (ρ + 2√(ρ ln 1/δ), δ)-DP (Bun & Steinke 2016, Prop. 1.3)
    rho = k * mech.grid_sensitivity**2 / (2 * float(mech.sigma2))
    assert shown["guarantee_period"]["epsilon"] <= (rho + 2 * math.sqrt(rho * math.log(1 / delta))) * (1 + 1e-9)
    for w in (0, 7, WINDOWS - 1):
        assert records[w]["releases_in_period"] == w + 1  # sensors 2… report in every window
        assert records[w]["epsilon_period"] == pytest.approx(
            composed_epsilon(net.mechanism, readings=records[w]["releases_in_period"], delta=delta,
                             accountant=accountant), rel=1e-9)

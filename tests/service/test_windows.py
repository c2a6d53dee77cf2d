"""Closing a window of a continual deployment: the map is recovered from the decoded per-window counts.

Oracle: the node's integer encoder replayed on known counts with known integer noise, and the BLT factor's exact
inverse C⁻¹ in Fractions (c_0 = 1, c_m = Σ ω_i θ_i^(m−1), forward substitution): the count of position t decoded
from the released V is g·(C⁻¹ V)_t (the running totals are g·A·C⁻¹·V, so their difference is one row of C⁻¹), and
its noise's standard deviation is g·sqrt(Σ_j (C⁻¹)_{t−j}² σ_j²).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dpcloak.privacy.continual import BLT_BITS, BLT_OMEGA_NUMERATORS, BLT_THETA_NUMERATORS, _Encoder, _fresh_state
from dpcloak.service.examples import counting_deployment
from dpcloak.service.store import Store, sqlite_url
from dpcloak.service.windows import continual_increments, recover_window_record

WINDOWS = 12
GAP = (1, 4)  # sensor 1 has no report for window 4: its stream cannot be decoded from there on


def _c_inverse(n: int) -> list[Fraction]:
    """The first n Toeplitz coefficients of C⁻¹ for the exact dyadic BLT factor."""
    theta = [Fraction(a, 2**BLT_BITS) for a in BLT_THETA_NUMERATORS]
    omega = [Fraction(b, 2**BLT_BITS) for b in BLT_OMEGA_NUMERATORS]
    c = [Fraction(1)] + [sum((w * t ** (m - 1) for w, t in zip(omega, theta, strict=True)), Fraction(0))
                         for m in range(1, n)]
    inv: list[Fraction] = []
    for m in range(n):
        inv.append(Fraction(int(m == 0)) - sum((c[m - i] * inv[i] for i in range(m)), Fraction(0)))
    return inv


def _counting_store(path: Path | str) -> tuple[Any, Store]:
    """The counting deployment in a new store: a SQLite file at ``path``, or a database URL."""
    dep = counting_deployment()
    store = Store(path if isinstance(path, str) else sqlite_url(path))
    store.migrate()
    store.register(dep)
    return dep, store


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[Any, Store, Any, dict[int, list[int]]]]:
    """Three counters' streams of known counts and known noise, stored as the collector stores reports."""
    dep, store = _counting_store(tmp_path / "c.db")
    counter = dep.counter
    assert counter is not None
    rng = np.random.default_rng(7)
    counts = rng.integers(0, 40, size=(3, WINDOWS))
    sigma = [math.sqrt(float(v)) for v in counter.noise_variances()[:WINDOWS]]
    grid = round(1 / counter.grid)
    released: dict[int, list[int]] = {}
    rows = []
    for j in range(3):
        enc = _Encoder("factorization", _fresh_state("factorization", counter.horizon), 0)
        released[j] = [int(enc.step(int(n) * grid)) + round(rng.normal(0.0, s)) for n, s in
                       zip(counts[j], sigma, strict=True)]
        rows += [{"deployment_id": "count42", "sensor_id": j, "window": w, "report_id": f"r-{j}-{w}",
                  "value": v * counter.grid, "mac": "00", "received_at": 60.0 * w + 30}
                 for w, v in enumerate(released[j]) if (j, w) != GAP]
    store.insert_reports(rows)
    yield dep, store, counts, released
    store.dispose()


def _oracle(released: list[int], t: int, grid: float) -> float:
    inv = _c_inverse(t + 1)
    return float(Fraction(grid) * sum((inv[t - s] * released[s] for s in range(t + 1)), Fraction(0)))


def test_increments_and_their_noise_against_the_replayed_encoder(site: tuple[Any, ...]) -> None:
    """Every decodable sensor's count of window t is g·(C⁻¹V)_t (exact Fractions) and the noise level is
    g·sqrt(Σ (C⁻¹)² σ²); the sensor with a gap is left out from the gap on; the raw output is not the count."""
    dep, store, counts, released = site
    counter = dep.counter
    variances = counter.noise_variances()
    inv = _c_inverse(WINDOWS)
    for t in range(WINDOWS):
        increments, sigma = continual_increments(dep, store, t, [0, 1, 2])
        expected = [j for j in range(3) if not (j == GAP[0] and t >= GAP[1])]
        assert sorted(increments) == expected
        for j in expected:
            assert increments[j] == pytest.approx(_oracle(released[j], t, counter.grid), abs=1e-7)
        exact = counter.grid * math.sqrt(float(sum(inv[t - s] ** 2 * variances[s] for s in range(t + 1))))
        assert sigma == pytest.approx(exact, rel=1e-12)
        assert not math.isclose(sigma, dep.sensor_network.sigma, rel_tol=0.1)  # the weakened noise level
    # the increments are the counts plus noise of that level; the raw outputs (the weakened reading) are not
    late = [(j, t) for j in (0, 2) for t in range(6, WINDOWS)]
    z = [(continual_increments(dep, store, t, [j])[0][j] - counts[j][t]) / continual_increments(dep, store, t, [j])[1]
         for j, t in late]
    assert max(abs(v) for v in z) < 6
    raw = [(released[j][t] * counter.grid - counts[j][t]) / counter.range_std(t, t + 1) for j, t in late]
    assert max(abs(v) for v in raw) > 6


def test_a_continual_windows_map_is_recovered_from_the_decoded_counts(site: tuple[Any, ...]) -> None:
    """recover_window_record in continual mode: the map is each decodable sensor's decoded count projected onto
    >= 0 (not its raw output), sigma is the increment's noise (not the network's), the sensor with a gap is
    missing, and epsilon/delta state the counters' guarantee for one window."""
    dep, store, _, released = site
    counter = dep.counter
    t = 7
    out = recover_window_record(dep, store, t)
    assert out is not None
    record, recovery = out
    assert record.reporting == [0, 2] and record.missing == 1
    expected = [max(0.0, _oracle(released[j], t, counter.grid)) if j != 1 else 0.0 for j in range(3)]
    assert record.source_map == pytest.approx(expected, abs=1e-7)
    weakened = [max(0.0, released[j][t] * counter.grid) if j != 1 else 0.0 for j in range(3)]
    assert not np.allclose(record.source_map, weakened, atol=1.0)
    assert record.sigma == pytest.approx(counter.range_std(t, t + 1), rel=1e-12) == recovery.sigma
    assert record.sigma != dep.sensor_network.sigma
    assert (record.epsilon_window, record.delta_window) == dep.guarantee(1)
    assert record.epsilon_window != dep.sensor_network.epsilon
    before = recover_window_record(dep, store, GAP[1] - 1)
    assert before is not None and before[0].reporting == [0, 1, 2]


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_kept_streams_give_the_runs_of_a_full_read(tmp_path: Path, backend: str,
                                                   request: pytest.FixtureRequest) -> None:
    """ContinualStreams (the final windows kept across closes) against reading every stream from its start at each
    close (the oracle), on a random schedule: reports arrive in the windows' grace (up to 3 windows late), some
    never (gaps for good), some as catch-ups 5-15 windows after their window closed (issue 30: a node back from
    an outage); windows close in order with final_below lagging; every close gives the same runs, increments and
    sigma. Kept streams that never look for catch-ups in their final windows (the weakened variant: a run ended by
    a gap stays ended) are caught by the same comparison. SQLite and PostgreSQL 15."""
    from dpcloak.service.windows import ContinualStreams

    class NoHeal(ContinualStreams):
        def _heal(self, store: Store) -> None:
            pass

    dep, store = _counting_store(tmp_path / "k.db" if backend == "sqlite" else request.getfixturevalue("postgres_url"))
    counter = dep.counter
    assert counter is not None
    rng = np.random.default_rng(11)
    windows, late = 40, 3
    encoders = [counter.stream() for _ in range(3)]
    arrivals: dict[int, list[dict[str, Any]]] = {}
    caught_up = 0
    for w in range(windows):
        for j in range(3):
            value = encoders[j].push(int(rng.integers(0, 9))) * counter.grid
            fate = rng.random()
            if fate < 0.04 and w >= 30:
                continue  # lost for good (late in the schedule: the catch-ups before it matter)
            if fate < 0.12:
                at, caught_up = w + late + int(rng.integers(5, 16)), caught_up + 1  # a catch-up, long after
            else:
                at = w + int(rng.integers(0, late + 1))
            arrivals.setdefault(at, []).append({"deployment_id": "count42", "sensor_id": j, "window": w,
                                                "report_id": f"r-{j}-{w}", "value": value, "mac": "00",
                                                "received_at": 60.0 * at})
    assert caught_up >= 3

    kept, weak = ContinualStreams(dep), NoHeal(dep)
    differs = 0
    for now in range(windows + late + 16):
        store.insert_reports(arrivals.get(now, []))
        closing = min(now - late, windows)  # its grace is over: windows before it take no more reports
        if closing < 0:
            continue
        full = continual_increments(dep, store, closing, range(3))
        assert continual_increments(dep, store, closing, range(3), streams=kept, final_below=closing + 1) == full
        differs += continual_increments(dep, store, closing, range(3), streams=weak, final_below=closing + 1) != full
    runs = kept.runs(store, range(3), windows - 1, windows)
    assert kept.through == windows  # the last close (window 40, nobody reported) made every window final
    assert min(len(r) for r in runs.values()) < windows  # some stream ended at a report lost for good
    assert differs > 0
    store.dispose()

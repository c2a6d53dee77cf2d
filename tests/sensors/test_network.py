"""SensorNetwork: construction from coordinates, release with the budget checked, recovery, accounting."""

import math
import re

import numpy as np
import pytest

from dpcloak.errors import BudgetExceededError, InvalidParameterError
from dpcloak.geo import LocalProjection
from dpcloak.privacy.discrete import generator_randbelow
from dpcloak.sensors import Relation, SensorNetwork, layout_from_coordinates

# a small street network: 8 counters on two streets, 60-120 m apart (metres east, north)
POSITIONS = np.array([[0.0, 0.0], [80.0, 10.0], [170.0, 0.0], [260.0, 15.0],
                      [20.0, 120.0], [110.0, 130.0], [200.0, 115.0], [280.0, 125.0]])


def _network(**kw):
    args = dict(sensors=POSITIONS, relation=Relation.move(100.0), epsilon=1.0, delta=1e-6, budget=(6.0, 1e-5),
                diffusion=60.0**2)
    args.update(kw)
    return SensorNetwork.from_coordinates(**args)


def test_delta2_is_the_exact_relation_sensitivity_by_brute_force():
    """Oracle: numpy over the dense operator and every pair of sites within 100 m."""
    for model in ("graph", "heat", "heat-walls"):
        net = _network(model=model, margin=30.0)
        M = net.dense_model()
        d = np.linalg.norm(POSITIONS[:, None] - POSITIONS[None], axis=2)
        want = max(np.linalg.norm(M[:, i] - M[:, j]) for i in range(8) for j in range(8) if 0 < d[i, j] <= 100.0)
        assert net.delta2 == pytest.approx(want, rel=1e-12)
        assert net.mechanism.dimension == net.n_sensors == 8
        assert net.mechanism.sensitivity == net.delta2 and net.sigma == net.mechanism.sigma


def test_graph_model_is_column_stochastic_and_heat_peaks_at_one():
    graph = _network().dense_model()
    np.testing.assert_allclose(graph.sum(axis=0), 1.0, atol=1e-12)  # one person stays one person
    heat = _network(model="heat").dense_model()
    d2 = ((POSITIONS[:, None] - POSITIONS[None]) ** 2).sum(axis=2)
    np.testing.assert_allclose(heat, np.exp(-d2 / (4 * 60.0**2)), rtol=1e-12)


def test_lonlat_sensors_are_projected_and_colocated_ones_merged_or_refused():
    proj = LocalProjection(lon0=174.765, lat0=-36.848)
    lon, lat = proj.inverse(POSITIONS[:, 0], POSITIONS[:, 1])
    lonlat = np.column_stack([lon, lat])
    net = _network(sensors=lonlat, lonlat=True, centre=(174.765, -36.848))
    np.testing.assert_allclose(net.sensor_positions, POSITIONS, atol=1e-6)
    doubled = np.vstack([lonlat, lonlat[2]])
    names = [f"c{k}" for k in range(9)]
    with pytest.raises(InvalidParameterError, match=r"sensors 'c2' and 'c8' are 0 m apart.*colocated='merge'"):
        layout_from_coordinates(doubled, names=names, lonlat=True)
    layout = layout_from_coordinates(doubled, names=names, lonlat=True, colocated="merge")
    assert layout.n_sites == 8 and layout.n_inputs == 9 and layout.names[2] == "c2 + c8"
    raw = np.arange(9.0)
    np.testing.assert_array_equal(layout.combine(raw), [0, 1, 2 + 8, 3, 4, 5, 6, 7])
    assert np.isnan(layout.combine(np.where(raw == 8, np.nan, raw))[2])  # a partial sum would be a wrong count


def test_privatize_is_secure_by_default_and_refuses_a_seed_without_simulation():
    net = _network()
    with pytest.raises(InvalidParameterError, match=r"not secure.*simulation=True"):
        net.privatize(np.ones(8), rng=1)
    assert net.releases == 0
    a = _network().privatize(np.full(8, 40.0), rng=7, simulation=True)
    b = _network().privatize(np.full(8, 40.0), rng=7, simulation=True)
    np.testing.assert_array_equal(a, b)
    out = net.privatize(np.full(8, 40.0))
    cells = out / net.resolution
    np.testing.assert_allclose(cells, np.rint(cells), atol=1e-6)  # exact grid values
    assert net.releases == 1


def test_budget_is_checked_before_release_and_nothing_is_charged_past_it():
    net = _network()
    k = net.max_releases()
    assert net.guarantee(k).epsilon <= 6.0 < net.guarantee(k + 1).epsilon
    day = np.full((k, 8), 10.0)
    day[0, 3] = np.nan  # sensor 3 missing in the first period: the period is still one vector release
    day[1] = np.nan  # nobody reported in the second period: nothing released, nothing charged
    out = net.privatize(day)
    assert np.isnan(out[0, 3]) and np.isnan(out[1]).all() and np.isfinite(out).sum() == (k - 1) * 8 - 1
    assert net.releases == k - 1
    assert net.spent() == net.guarantee(k - 1)
    net.privatize_reading(3, 10.0)  # one more vector release fits
    with pytest.raises(BudgetExceededError, match=r"over the budget epsilon=6.*nothing was released"):
        net.privatize(np.full(8, 10.0))
    assert net.releases == k  # unchanged
    with pytest.raises(BudgetExceededError):
        net.privatize_reading(3, 10.0)  # sensor 3 skipped a period, but the vector was released k times
    assert net.releases == k


def test_a_ledger_keeps_the_budget_across_objects_and_restarts(tmp_path):
    """Without a ledger, a network rebuilt from its configuration starts again at zero (documented); with one,
    every object on the file shares one count, nothing is released past the budget, and a different
    configuration cannot reuse the file. Oracle: the budget arithmetic of ``guarantee`` by direct count."""
    config = _network().save(tmp_path / "net.toml")
    ledger = tmp_path / "budget.json"
    k = _network().max_releases()
    first = SensorNetwork.load(config, ledger=ledger)
    first.privatize(np.full((k - 1, 8), 10.0))
    second = SensorNetwork.load(config, ledger=ledger)  # another object, as after a restart
    assert second.releases == k - 1
    second.privatize_reading(5, 10.0, window=0)  # the k-th vector release
    with pytest.raises(BudgetExceededError, match="nothing was released"):
        first.privatize_reading(2, 10.0, window=0)  # its own object has no open release of window 0: a new one
    assert SensorNetwork.load(config, ledger=ledger).releases == k
    assert SensorNetwork.load(config).releases == 0  # no ledger: the object alone counts
    with pytest.raises(InvalidParameterError, match="not for"):
        _network(epsilon=0.5, ledger=ledger)


def test_budget_refusal_tells_an_excess_of_one_ulp_from_the_budget():
    net = _network()
    k = net.max_releases()
    budget = net.guarantee(k + 1).epsilon
    tight = _network(budget=(math.nextafter(budget, 0.0), 1e-5))
    assert tight.max_releases() == k
    tight.privatize(np.full((k, 8), 10.0))
    with pytest.raises(BudgetExceededError) as err:
        tight.privatize(np.full(8, 10.0))
    stated = re.search(r"epsilon=(\S+) at .*budget epsilon=(\S+) \(", str(err.value))
    assert stated is not None
    spent, allowed = (float(v) for v in stated.groups())
    assert spent == budget and allowed == math.nextafter(budget, 0.0)


def test_composed_guarantee_is_the_zcdp_closed_form_checked_by_brute_force_over_renyi_orders():
    """Oracle: k releases of the discrete Gaussian are (k·ρ)-zCDP, ρ = ½(Δ_grid/σ_grid)²; ε(δ) is the minimum over
    Rényi orders α of αkρ + log(1 − 1/α) − (log δ + log α)/(α − 1) (CKS 2020 Prop. 12), minimised here on a dense
    numpy grid of α — not the library's Newton root. It is never above dp_accounting's RDP accountant."""
    import dp_accounting
    from dp_accounting.rdp import RdpAccountant

    net = _network()
    rho = 0.5 / net.mechanism.noise_multiplier**2
    for k in (1, 5, 24, 100, 1000):
        alpha = 1 + np.geomspace(1e-4, 1e4, 400_001)
        eps = alpha * k * rho + np.log1p(-1 / alpha) - (math.log(1e-5) + np.log(alpha)) / (alpha - 1)
        got = net.guarantee(k).epsilon
        assert got == pytest.approx(eps.min(), rel=1e-7)
        acc = RdpAccountant()
        acc.compose(dp_accounting.ZCDpEvent(rho), k)
        assert got <= acc.get_epsilon(1e-5) * (1 + 1e-12)
        if k > 1:
            assert got > net.guarantee(k - 1).epsilon  # a weakened count spends less: the check can fail
    assert net.guarantee(0).epsilon == 0.0


def test_privatize_reading_clips_to_the_declared_range_and_charges_one_vector_release():
    net = _network(reading_range=(0.0, 100.0), budget=(40.0, 1e-5))
    rb = generator_randbelow(np.random.default_rng(3))
    outs = np.array([net.privatize_reading(5, 1e9, randbelow=rb) for _ in range(40)])
    # the reading was clipped to 100 first: outputs sit within a few sigma of 100, not of 1e9
    assert abs(outs.mean() - 100.0) < 4 * net.sigma / math.sqrt(40) + net.resolution
    assert net.releases == 40  # each reading without a window is a vector release of its own
    low = [net.privatize_reading(1, -50.0, randbelow=rb) for _ in range(40)]
    assert abs(np.mean(low)) < 4 * net.sigma / math.sqrt(40) + net.resolution


def _truth():
    f0 = np.zeros(8)
    f0[1], f0[6] = 30.0, 12.0
    return f0


def test_recovery_of_a_map_matches_an_independent_solver_and_reports_people_and_metres():
    """Oracle for the optimum: CVXPY + Clarabel on the same problem (recovery.reference)."""
    pytest.importorskip("cvxpy")
    from dpcloak.models import matrix_model
    from dpcloak.recovery import bpdn

    net = _network(model="heat", diffusion=50.0**2)
    f0 = _truth()
    y = net.privatize(net.dense_model() @ f0, rng=11, simulation=True)
    rec = net.recover(y, rng=0)
    ref = bpdn(matrix_model(net.dense_model()), y, radius=rec.radius, bounds=(0.0, None), solver="cvxpy")
    assert rec.recovery.objective == pytest.approx(ref.objective, rel=1e-6)  # the optimum (people) agrees
    assert rec.recovery.residual <= rec.radius * (1 + 1e-9)
    np.testing.assert_allclose(rec.sources, ref.x, atol=1e-3 * ref.x.max())  # CVXPY's own accuracy
    assert rec.sources.min() >= 0 and rec.total == pytest.approx(rec.sources.sum())
    assert rec.present.all() and not rec.degenerate
    assert 0 <= rec.uncertainty <= rec.uncertainty_90 < 300.0  # metres, inside the network's extent
    assert rec.uncertainty_draws == 10


def test_missing_sensors_are_dropped_and_the_rest_recovered():
    pytest.importorskip("cvxpy")
    from dpcloak.models import matrix_model
    from dpcloak.recovery import bpdn

    net = _network(model="heat", diffusion=50.0**2)
    y = net.privatize(net.dense_model() @ _truth(), rng=2, simulation=True)
    y[[0, 4]] = np.nan
    rec = net.recover(y, uncertainty_draws=0)
    assert rec.present.tolist() == [False, True, True, True, False, True, True, True]
    keep = rec.present
    ref = bpdn(matrix_model(net.dense_model()[keep]), y[keep], radius=rec.radius, bounds=(0.0, None), solver="cvxpy")
    assert rec.recovery.objective == pytest.approx(ref.objective, rel=1e-6)
    np.testing.assert_allclose(rec.sources, ref.x, atol=1e-3 * ref.x.max())
    assert math.isnan(rec.uncertainty)
    again = net.recover(y, warm_start=rec, uncertainty_draws=0)
    np.testing.assert_allclose(again.sources, rec.sources, atol=1e-6 * max(1.0, rec.sources.max()))


def test_an_empty_answer_is_flagged_degenerate_with_the_uniform_distribution():
    net = _network()
    rec = net.recover(np.zeros(8), uncertainty_draws=2, rng=0)
    assert rec.degenerate and rec.total == 0.0
    np.testing.assert_allclose(rec.distribution, 1 / 8)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        (dict(relation=Relation.move(5.0)), r"alpha=5 m is smaller than the smallest distance .* \(80.6226 m\)"),
        (dict(budget=(0.5, 1e-5)), "one release already spends epsilon"),
        (dict(budget=6.0), "budget must be a pair"),
        (dict(model="graph", sources="grid", spacing=50.0), "graph model's sources are its nodes"),
        (dict(model="heat", sources="grid", spacing=1.0, margin=500.0), "at most 4000 are supported"),
        (dict(model="heat", spacing=20.0), "spacing is for sources='grid'"),
        (dict(diffusion=0.0), r"diffusion must lie in \(0, inf\)"),
        (dict(reading_range=(10.0, 5.0)), r"reading_range\[1\] must lie in \(10, inf\)"),
        (dict(relation="100 m"), "relation must be a Relation"),
        (dict(centre=(0.0, 0.0)), "needs lonlat=True"),
    ],
)
def test_construction_refusals_name_the_parameter(kw, match):
    with pytest.raises(InvalidParameterError, match=match):
        _network(**kw)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda n: n.privatize(np.ones(7)), r"shape \(8,\) or \(k, 8\)"),
        (lambda n: n.privatize([np.inf] * 8), "infinite"),
        (lambda n: n.privatize_reading(8, 1.0), "sensor must be an integer <= 7"),
        (lambda n: n.privatize_reading(0, float("nan")), "value must be a finite"),
        (lambda n: n.recover(np.full(8, np.nan)), "no sensor is present"),
        (lambda n: n.recover(np.ones(8), present=[1] * 8), "present must be a boolean array"),
        (lambda n: n.recover(np.ones(8), uncertainty_draws=-1), "uncertainty_draws must be an integer >= 0"),
        (lambda n: n.guarantee(-1), "releases must be an integer >= 0"),
    ],
)
def test_call_refusals(call, match):
    with pytest.raises(InvalidParameterError, match=match):
        call(_network())


def test_plain_constructor_from_a_linear_model():
    from dpcloak.domains import Sites
    from dpcloak.models import matrix_model

    M = matrix_model(np.array([[1.0, 0.4, 0.1], [0.2, 1.0, 0.3]]), Sites([[0, 0], [50, 0], [100, 0]]))
    net = SensorNetwork(M, relation=Relation.add_remove(), epsilon=1.0, delta=1e-6, budget=(3.0, 1e-5))
    assert net.delta2 == pytest.approx(np.linalg.norm([0.4, 1.0]))
    with pytest.raises(InvalidParameterError, match="only a network built from coordinates"):
        net.to_dict()


def test_a_recovery_outside_the_bounds_is_an_error_not_a_map_of_negative_people(monkeypatch):
    """Regression guard for issue 13's wrong answer: whatever the solver returns, negative people never pass."""
    from dataclasses import replace

    import dpcloak.recovery as result_module  # sensors.result imports bpdn from it at the call
    from dpcloak.errors import ConvergenceError

    real = result_module.bpdn

    def broken(*args, **kwargs):
        rec = real(*args, **kwargs)
        return replace(rec, x=rec.x - 100.0)

    monkeypatch.setattr(result_module, "bpdn", broken)
    with pytest.raises(ConvergenceError, match=r"recovery returned -?[0-9.]+ at a location, outside the bounds"):
        _network().recover(np.full(8, 5.0), uncertainty_draws=0)


def test_report_gives_pattern_and_event_level_spending_of_the_releases_so_far():
    net = _network(budget=(20.0, 1e-5))
    net.privatize(np.full((24, 8), 3.0), rng=0, simulation=True)
    report = net.report(window=3)
    assert report.releases == 24 and report.pattern == net.guarantee(24) and report.event == net.guarantee(3)
    assert report.event.epsilon < report.pattern.epsilon
    assert net.report(releases=5).pattern == net.guarantee(5)


def test_the_bootstrap_uncertainty_is_the_median_emd_over_every_draw():
    """Oracle: the documented bootstrap written out (same draws, one solve and one exact EMD per draw, the spread
    around the map and between consecutive draws, the split-conformal 90 % rank found by enumeration), on a
    weak signal where several draws recover the same (empty) map and share one EMD computation."""
    import itertools

    from dpcloak.metrics import emd
    from dpcloak.models import matrix_model
    from dpcloak.recovery import bpdn

    net = _network(model="heat", diffusion=50.0**2)
    y = net.privatize(net.dense_model() @ (0.2 * _truth()), rng=5, simulation=True)
    rec = net.recover(y, uncertainty_draws=16, rng=3)
    model = matrix_model(net.dense_model())
    fitted = model.matvec(rec.sources)
    gen = np.random.default_rng(3)
    spread, maps = [], []
    for _ in range(16):
        again = bpdn(model, fitted + gen.normal(0.0, net.sigma, 8), radius=rec.radius, bounds=(0.0, None))
        spread.append(emd(rec.sources, again.x, net.model.domain))
        maps.append(again.x)
    between = [emd(a, b, net.model.domain) for a, b in itertools.pairwise(maps)]

    def conformal_90(values: list[float]) -> float:
        """The smallest order statistic k of n with k / (n + 1) >= 0.9 (by enumeration; the largest if none)."""
        n = len(values)
        k = next((k for k in range(1, n + 1) if 10 * k >= 9 * (n + 1)), n)
        return sorted(values)[k - 1]

    assert rec.uncertainty == pytest.approx(max(float(np.median(spread)), float(np.median(between))), rel=1e-9,
                                            abs=1e-9)
    assert rec.uncertainty_90 == pytest.approx(max(conformal_90(spread), conformal_90(between)), rel=1e-9, abs=1e-9)
    assert rec.uncertainty_90 > float(np.quantile(spread, 0.9))  # the sample's own 90th percentile: too low here
    assert len({round(s, 9) for s in spread}) < 16  # some draws gave the same map: the shared EMD was used


def test_integer_readings_no_double_holds_are_refused_before_charging():
    """Issue 28, defect 7: an int64 reading of 2^53 + 1 was rounded to a double before the exact grid rounding."""
    net = _network()
    big = np.zeros(net.n_sensors, dtype=np.int64)
    big[0] = 2**53 + 1
    with pytest.raises(InvalidParameterError, match="exactly representable"):
        net.privatize(big)
    with pytest.raises(InvalidParameterError, match="exactly representable"):
        net.privatize_reading(0, 2**53 + 1)
    assert net.privatize(np.ones(net.n_sensors, dtype=np.int64)).shape == (net.n_sensors,)  # doubles hold these


# --- issue 28, defect 1: per-period composition counts vector releases, not readings per sensor ---------------

SQUARE = [[0.0, 0.0], [100.0, 0.0], [0.0, 100.0], [100.0, 100.0]]


def _moved_squares(net):
    """Oracle: for every pair of sources whose EXACT distance is ≤ α (rationals), the squared shift of each
    sensor's reading when one person moves between them: ``D²[pair, sensor]`` (numpy over the dense model)."""
    from fractions import Fraction

    pos, alpha = net.source_positions, Fraction(net.relation.alpha)
    m = net.dense_model()
    pairs = [(i, j) for i in range(len(pos)) for j in range(i + 1, len(pos))
             if (Fraction(pos[i, 0]) - Fraction(pos[j, 0])) ** 2 + (Fraction(pos[i, 1]) - Fraction(pos[j, 1])) ** 2
             <= alpha**2]
    return np.array([(m[:, i] - m[:, j]) ** 2 for i, j in pairs])


def _released_shift(d2, readings):
    """Oracle: the exact squared sensitivity of everything released, as a Fraction: per window, the largest
    (over moves) sum of the squared shifts of every reading released in it (a sensor read twice counts twice:
    independent noise on the same state), added over the windows (each window's move is chosen apart:
    composition). Sums of floats are exact as Fractions; the largest over moves is taken exactly too."""
    from fractions import Fraction

    total = Fraction(0)
    per_window = {}
    for w, j in readings:
        per_window.setdefault(w, np.zeros(d2.shape[1], dtype=np.int64))[j] += 1
    for counts in per_window.values():
        total += max(sum((int(c) * Fraction(float(x)) for c, x in zip(counts, row, strict=True) if c), Fraction(0))
                     for row in d2)
    return total


def _zcdp_eps_mp(rho, delta):
    """Oracle: ε at δ of ρ-zCDP, the optimum over α > 1 by bisection in mpmath (30 digits; CKS 2020 Prop. 12)."""
    import mpmath

    with mpmath.workdps(30):
        r, big_l = mpmath.mpf(rho.numerator) / rho.denominator, -mpmath.log(mpmath.mpf(delta))
        lo, hi = mpmath.mpf(1), 1 + mpmath.sqrt(big_l / r)
        for _ in range(110):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if r * (mid - 1) ** 2 + mpmath.log(mid) < big_l else (lo, mid)
        a = (lo + hi) / 2
        return a * r + mpmath.log(1 - 1 / a) + (big_l - mpmath.log(a)) / (a - 1)


def _schedules(rng, m, n):
    """``n`` presence schedules (lists of (window, sensor) readings): alternating halves, one sensor at a time,
    missing sensors, all present, and random subsets (some with a sensor read twice in a window)."""
    half = m // 2
    out = [[(w, j) for w in range(10) for j in (range(half) if w % 2 == 0 else range(half, m))],
           [(w, w % m) for w in range(12)],
           [(w, j) for w in range(6) for j in range(m)],
           [(w, j) for w in range(8) for j in range(m - 1)]]
    while len(out) < n:
        k, p = int(rng.integers(1, 13)), float(rng.uniform(0.1, 0.9))
        sched = [(w, j) for w in range(k) for j in range(m) if rng.random() < p]
        if rng.random() < 0.2 and sched:
            sched.append(sched[int(rng.integers(len(sched)))])  # a second reading of a sensor in a window
        out.append(sched)
    return out


def _release(net, schedule, *, rows, first_window=0):
    """Release a schedule through ``privatize`` (one row per window, NaN = absent) or ``privatize_reading``
    (its windows numbered from ``first_window``: each schedule is a new stretch of time)."""
    rb = generator_randbelow(np.random.default_rng(len(schedule)))
    if rows and len(set(schedule)) == len(schedule) and schedule:
        k = max(w for w, _ in schedule) + 1
        y = np.full((k, net.n_sensors), np.nan)
        for w, j in schedule:
            y[w, j] = 10.0
        net.privatize(y, rng=1, simulation=True)
    else:
        for w, j in sorted(schedule, key=lambda item: item[0]):
            net.privatize_reading(j, 10.0, window=first_window + w, randbelow=rb)


def test_every_window_is_charged_as_a_vector_release_over_random_presence_schedules():
    """Regression (issue 28, defect 1): releases were counted per sensor, so sensors reporting in different
    windows (alternate halves) spent 1.7-2x what was charged. Over 1,000 random presence schedules (alternating
    halves, missing sensors, one sensor at a time, repeats), the exact squared sensitivity of what was released
    (oracle: brute force over every move within α, exact rationals) never exceeds the charged vector releases
    times Δ2², and the stated ε is never below the exact zCDP conversion (mpmath) of what was released (checked
    on every fifth schedule: the conversion is monotone in ρ, so the sensitivity check carries it)."""
    from fractions import Fraction

    net = SensorNetwork.from_coordinates(sensors=SQUARE, relation=Relation.move(150.0), epsilon=1.0, delta=1e-6,
                                         budget=(1e6, 1e-5), diffusion=2000.0)
    d2 = _moved_squares(net)
    full = _released_shift(d2, [(0, j) for j in range(net.n_sensors)])  # Δ2², exactly
    assert float(full) == pytest.approx(net.delta2**2, rel=1e-12)
    sigma2 = Fraction(net.mechanism.sigma2) * Fraction(net.resolution) ** 2  # σ² in reading units, exactly
    rng = np.random.default_rng(2028)
    schedules = _schedules(rng, net.n_sensors, 1000)
    worst = Fraction(0)
    for n, schedule in enumerate(schedules):
        before = net.releases
        _release(net, schedule, rows=n % 2 == 0, first_window=100 * n)
        charged = net.releases - before
        shift = _released_shift(d2, schedule)
        assert shift <= charged * full, (schedule, charged)
        if charged:
            worst = max(worst, shift / (charged * full))
        if charged and (n < 4 or n % 5 == 0):  # the stated ε, on the structured schedules and every fifth
            assert _zcdp_eps_mp(shift / (2 * sigma2), 1e-5) <= net.guarantee(charged).epsilon
    # the schedules reach the bound: the oracle is not trivially below it (alternating halves come near it)
    assert worst > Fraction(3, 4)
    alternating = schedules[0]
    assert _released_shift(d2, alternating) > 5 * full  # 10 windows of a half: well above 5 readings per sensor


def test_the_budget_refuses_alternating_halves_at_the_stated_epsilon():
    """Regression (issue 28, defect 1): a 4-sensor network with budget ε = 10 let two halves alternate up to
    ε 12.7-14.3. The windows admitted before the refusal spend, exactly (oracle: brute-force sensitivity of
    each half, mpmath zCDP conversion), at most the budget; the last one refused was the one over it."""
    from fractions import Fraction

    for order in ([0, 1], [2, 3], [0, 3], [1, 2]):
        net = SensorNetwork.from_coordinates(sensors=SQUARE, relation=Relation.move(150.0), epsilon=1.0,
                                             delta=1e-6, budget=(10.0, 1e-5), diffusion=2000.0)
        d2 = _moved_squares(net)
        sigma2 = Fraction(net.mechanism.sigma2) * Fraction(net.resolution) ** 2
        other = [j for j in range(4) if j not in order]
        admitted = []
        for w in range(1000):
            half = order if w % 2 == 0 else other
            y = np.full(4, np.nan)
            y[half] = 10.0
            try:
                net.privatize(y)
            except BudgetExceededError:
                break
            admitted.extend((w, j) for j in half)
        else:
            pytest.fail("the budget never refused")
        exact = _zcdp_eps_mp(_released_shift(d2, admitted) / (2 * sigma2), 1e-5)
        assert exact <= 10.0
        assert w == net.max_releases() == net.releases
        assert _zcdp_eps_mp(_released_shift(d2, admitted + [(w, j) for j in half]) / (2 * sigma2), 1e-5) > exact


def test_demo_floor_alternating_halves_are_charged_per_window():
    """Regression (issue 28, defect 1) on the demo floor (40 counters): alternating halves of the floor are one
    vector release per window; the exact squared sensitivity (brute force over every 2 m move) stays below
    the charged count times Δ2², and per-sensor counting (half as many) would be exceeded by it."""

    from dpcloak.service import _network

    net = _network.floor_plan_network(width=16.0, height=10.0, sensor_cols=8, sensor_rows=5, epsilon=1.0,
                                      delta=1e-6, budget=(30.0, 1e-5), reading_high=200.0)
    d2 = _moved_squares(net)
    full = _released_shift(d2, [(0, j) for j in range(net.n_sensors)])  # Δ2², exactly
    x = net.sensor_positions[:, 0]
    left, right = np.flatnonzero(x < np.median(x)), np.flatnonzero(x >= np.median(x))
    schedule = [(w, int(j)) for w in range(6) for j in (left if w % 2 == 0 else right)]
    _release(net, schedule, rows=True)
    shift = _released_shift(d2, schedule)
    assert net.releases == 6 and shift <= 6 * full
    assert shift > 3 * full  # what counting 3 readings per sensor would have charged

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
    day[0, 3] = np.nan  # sensor 3 missing in the first period: not charged
    out = net.privatize(day)
    assert np.isnan(out[0, 3]) and np.isfinite(out).sum() == k * 8 - 1
    assert net.releases == k and net.sensor_releases[3] == k - 1
    assert net.spent() == net.guarantee(k)
    with pytest.raises(BudgetExceededError, match=r"over the budget epsilon=6.*nothing was released"):
        net.privatize(np.full(8, 10.0))
    assert net.releases == k  # unchanged
    net.privatize_reading(3, 10.0)  # sensor 3 still had one reading left
    with pytest.raises(BudgetExceededError):
        net.privatize_reading(3, 10.0)


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
    assert second.releases == k - 1 and second.sensor_releases.tolist() == [k - 1] * 8
    second.privatize_reading(5, 10.0)  # sensor 5 reaches k: the ledger holds the worst sensor
    with pytest.raises(BudgetExceededError, match="nothing was released"):
        first.privatize_reading(2, 10.0)  # counted from the ledger's floor: every sensor is taken to be at k
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


def test_privatize_reading_clips_to_the_declared_range_and_charges_one_sensor():
    net = _network(reading_range=(0.0, 100.0), budget=(40.0, 1e-5))
    rb = generator_randbelow(np.random.default_rng(3))
    outs = np.array([net.privatize_reading(5, 1e9, randbelow=rb) for _ in range(40)])
    # the reading was clipped to 100 first: outputs sit within a few sigma of 100, not of 1e9
    assert abs(outs.mean() - 100.0) < 4 * net.sigma / math.sqrt(40) + net.resolution
    assert net.sensor_releases.tolist() == [0, 0, 0, 0, 0, 40, 0, 0]
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
    assert rec.uncertainty_draws == 8


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

    import dpcloak.sensors.result as result_module
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
    """Oracle: the documented bootstrap written out (same draws, one solve and one exact EMD per draw), on a
    weak signal where several draws recover the same (empty) map and share one EMD computation."""
    from dpcloak.metrics import emd
    from dpcloak.models import matrix_model
    from dpcloak.recovery import bpdn

    net = _network(model="heat", diffusion=50.0**2)
    y = net.privatize(net.dense_model() @ (0.2 * _truth()), rng=5, simulation=True)
    rec = net.recover(y, uncertainty_draws=16, rng=3)
    model = matrix_model(net.dense_model())
    fitted = model.matvec(rec.sources)
    gen = np.random.default_rng(3)
    spread = []
    for _ in range(16):
        again = bpdn(model, fitted + gen.normal(0.0, net.sigma, 8), radius=rec.radius, bounds=(0.0, None))
        spread.append(emd(rec.sources, again.x, net.model.domain))
    assert rec.uncertainty == pytest.approx(float(np.median(spread)), rel=1e-9, abs=1e-9)
    assert rec.uncertainty_90 == pytest.approx(float(np.quantile(spread, 0.9)), rel=1e-9, abs=1e-9)
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

"""Accounting over repeated releases.

Oracles: dp_accounting called directly — its analytic Gaussian privacy loss
(``GaussianPrivacyLoss.get_delta_for_epsilon``), its PLD accountant at a tightened discretisation
and its RDP accountant; the exact Gaussian profile evaluated in 60-digit mpmath; a brute-force
mpmath minimisation over Rényi orders for the zCDP conversion; k·ε for pure-DP Laplace; the
advanced composition theorem (thesis Thm 2.6, an upper bound the tight accountant must not exceed).
"""

from __future__ import annotations

import math
import multiprocessing
import tracemalloc
from fractions import Fraction

import dp_accounting
import mpmath
import numpy as np
import pytest
from _ledger_oracle import budget_total
from dp_accounting.pld import PLDAccountant
from dp_accounting.pld.privacy_loss_mechanism import GaussianPrivacyLoss
from dp_accounting.rdp import RdpAccountant

from dpcloak.errors import BudgetExceededError, InvalidParameterError
from dpcloak.privacy import (
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    ReadingAccountant,
    composed_epsilon,
    privacy_report,
    privacy_spent,
    zcdp_epsilon,
)
from dpcloak.privacy.accounting import PLD_MAX_SELF_COMPOSITIONS, advanced_composition, dp_event

MECH = GaussianMechanism(epsilon=1.0, delta=1e-5, sensitivity=0.4)
DELTA = 1e-5


def _pld(noise_multiplier: float, k: int, interval: float = 1e-4) -> PLDAccountant:
    acc = PLDAccountant(value_discretization_interval=interval)
    acc.compose(dp_accounting.GaussianDpEvent(noise_multiplier), k)
    return acc


def _exact_delta(epsilon: float, noise_multiplier: float, k: int) -> mpmath.mpf:
    """Balle & Wang's profile of k Gaussian releases (σ/Δ = noise_multiplier) in 60-digit arithmetic."""
    with mpmath.workdps(60):
        mu = mpmath.sqrt(k) / mpmath.mpf(noise_multiplier)
        e = mpmath.mpf(epsilon)
        return mpmath.ncdf(mu / 2 - e / mu) - mpmath.exp(e) * mpmath.ncdf(-mu / 2 - e / mu)


MECHS = [GaussianMechanism(epsilon=e, delta=1e-5, sensitivity=s) for e, s in ((0.2, 1.0), (1.0, 0.4), (4.0, 3.0))]
GRID = [(m, k, d) for m in MECHS for k in (1, 2, 17, 300, 1000) for d in (1e-3, 1e-5, 1e-10)]


@pytest.mark.parametrize(("mech", "k", "delta"), GRID)
def test_closed_form_is_the_exact_gaussian_composition(mech: GaussianMechanism, k: int, delta: float) -> None:
    nm = mech.sigma / mech.sensitivity
    spent = privacy_spent(mech, readings=k, delta=delta)
    eps = spent.epsilon
    assert spent.accountant == "closed" and "sqrt(k)" in spent.method and spent.readings == k
    # the smallest epsilon meeting delta, in exact arithmetic: it meets delta, and 1e-9 less does not
    assert _exact_delta(eps, nm, k) <= delta < _exact_delta(eps * (1 - 1e-9), nm, k)
    # dp_accounting's analytic privacy loss of the Gaussian (what its PLD accountant discretises)
    dpa = GaussianPrivacyLoss(standard_deviation=nm / math.sqrt(k)).get_delta_for_epsilon(eps)
    assert dpa == pytest.approx(delta, rel=1e-9)


@pytest.mark.parametrize(("eps_mech", "k", "delta"), [(1.0, 1, 1e-5), (0.2, 100, 1e-8), (1.0, 10, 1e-3)])
def test_closed_form_equals_the_pld_accountant(eps_mech: float, k: int, delta: float) -> None:
    """dp_accounting's PLD accountant (connect-the-dots) at interval 1e-5 instead of the default 1e-4.

    Epsilon agrees to 1e-9 relative. Delta at a given epsilon does not quite: PLD's discretisation is
    pessimistic (it rounds privacy losses up), and its delta stays above the exact one by up to 9e-9
    relative at interval 1e-5 (measured; 8e-8 at the default 1e-4). Exact delta agreement to 1e-9 is
    checked against dp_accounting's analytic Gaussian privacy loss in the test above.
    """
    mech = GaussianMechanism(epsilon=eps_mech, delta=1e-5, sensitivity=1.0)
    pld = _pld(mech.sigma, k, interval=1e-5)
    closed = privacy_spent(mech, readings=k, delta=delta).epsilon
    assert float(pld.get_epsilon(delta)) == pytest.approx(closed, rel=1e-9)
    delta_closed = float(_exact_delta(closed, mech.sigma, k))
    assert delta_closed * (1 - 1e-12) <= float(pld.get_delta(closed)) <= delta_closed * (1 + 2e-8)
    # and the default discretisation is pessimistic, as documented: never below the closed form
    assert float(_pld(mech.sigma, k).get_epsilon(delta)) >= closed * (1 - 1e-12)


def test_dp_accounting_paths_still_available() -> None:
    for k in (1, 5, 30):
        assert composed_epsilon(MECH, readings=k, delta=DELTA, accountant="pld") == float(
            _pld(MECH.sigma / MECH.sensitivity, k).get_epsilon(DELTA))
        rdp = RdpAccountant()
        rdp.compose(dp_accounting.GaussianDpEvent(MECH.sigma / MECH.sensitivity), k)
        assert composed_epsilon(MECH, readings=k, delta=DELTA, accountant="rdp") == float(rdp.get_epsilon(DELTA))
        closed = composed_epsilon(MECH, readings=k, delta=DELTA)
        assert composed_epsilon(MECH, readings=k, delta=DELTA, accountant="rdp") >= closed
        eps_adv, delta_adv = advanced_composition(epsilon=1.0, delta=DELTA, k=k, delta_prime=1e-6)
        assert composed_epsilon(MECH, readings=k, delta=delta_adv) <= eps_adv


def _zcdp_oracle(rho: float, delta: float) -> float:
    """min over alpha > 1 of CKS Prop. 12 by mpmath: golden-section search on a log-alpha grid refinement."""
    with mpmath.workdps(40):
        r, d = mpmath.mpf(rho), mpmath.mpf(delta)

        def f(a: mpmath.mpf) -> mpmath.mpf:
            return a * r + mpmath.log(1 - 1 / a) - (mpmath.log(d) + mpmath.log(a)) / (a - 1)

        grid = [1 + mpmath.mpf(10) ** (mpmath.mpf(i) / 50) for i in range(-600, 601)]
        best = min(range(len(grid)), key=lambda i: f(grid[i]))
        lo, hi = grid[max(best - 1, 0)], grid[min(best + 1, len(grid) - 1)]
        for _ in range(200):
            m1, m2 = lo + (hi - lo) * 0.382, lo + (hi - lo) * 0.618
            lo, hi = (lo, m2) if f(m1) < f(m2) else (m1, hi)
        return float(f((lo + hi) / 2))


@pytest.mark.parametrize(("rho", "delta"), [(1e-4, 1e-3), (0.05, 1e-5), (1.0, 1e-6), (50.0, 1e-10), (1e-7, 1e-5)])
def test_zcdp_conversion_is_the_optimum_over_orders(rho: float, delta: float) -> None:
    eps = zcdp_epsilon(rho=rho, delta=delta)
    oracle = _zcdp_oracle(rho, delta)
    assert oracle <= eps <= oracle * (1 + 1e-12)  # never below the optimum (valid), equal to it
    rdp = RdpAccountant()
    rdp.compose(dp_accounting.ZCDpEvent(rho))
    assert eps <= float(rdp.get_epsilon(delta)) * (1 + 1e-12)  # dp_accounting: same bound, fixed orders
    assert eps < rho + 2 * math.sqrt(rho * math.log(1 / delta))  # Bun & Steinke Prop 1.3, looser


def test_discrete_gaussian_composes_as_zcdp() -> None:
    dg = DiscreteGaussianMechanism(epsilon=1.0, delta=1e-5, sensitivity=1.0)
    rho = 0.5 / dg.noise_multiplier**2
    one = privacy_spent(dg, readings=1, delta=1e-5)
    assert one.epsilon <= 1.0 and "rho_total = sum rho_i" in one.method  # the calibration target holds
    assert one.epsilon >= 1.0 - 1e-8  # and is what the accountant states for one release: one epsilon
    for k in (4, 1000):
        closed = composed_epsilon(dg, readings=k, delta=1e-5)
        assert closed == pytest.approx(_zcdp_oracle(k * rho, 1e-5), rel=1e-12)
        assert closed <= composed_epsilon(dg, readings=k, delta=1e-5, accountant="rdp") * (1 + 1e-12)
    with pytest.raises(InvalidParameterError, match="rdp"):
        composed_epsilon(dg, readings=1, delta=1e-5, accountant="pld")


def test_laplace_composes_to_k_epsilon() -> None:
    lap = LaplaceMechanism(epsilon=0.5, sensitivity=2.0)
    assert composed_epsilon(lap, readings=6, delta=0.0) == pytest.approx(3.0, rel=1e-15)
    assert composed_epsilon(lap, readings=6, delta=0.0) >= 3.0
    assert composed_epsilon(lap, readings=6, delta=1e-12, accountant="pld") == pytest.approx(3.0, rel=1e-6)
    assert composed_epsilon(lap, readings=0, delta=1e-12) == 0.0
    dl = DiscreteLaplaceMechanism(epsilon=0.25, sensitivity=1.0)
    assert composed_epsilon(dl, readings=8, delta=0.0) == pytest.approx(2.0, rel=1e-15)
    assert composed_epsilon(MECH, readings=3, delta=0.0) == math.inf  # a Gaussian is never pure DP
    with pytest.raises(InvalidParameterError, match="readings must be <= 1000"):
        composed_epsilon(lap, readings=PLD_MAX_SELF_COMPOSITIONS + 1, delta=1e-6, accountant="pld")


@pytest.mark.parametrize("eps", [0.25, 0.1, 0.3, 1 / 3, 0.7, 2.5, 1e-3])
@pytest.mark.parametrize("k", [1, 2, 3, 4, 7, 10, 1000, 10**9])
def test_pure_composition_is_the_smallest_float_not_below_k_epsilon(eps: float, k: int) -> None:
    """Oracle: exact rational k·Δ/b of the scale b actually sampled (≤ k·ε of the float ε). A stated total never
    rounds below it, and never refuses a budget the exact total meets (4 × 0.25 = 1 exactly fits a budget of 1)."""
    from fractions import Fraction

    mech = LaplaceMechanism(epsilon=eps, sensitivity=1.0)
    exact = k / Fraction(mech.scale)
    assert exact <= k * Fraction(eps)
    stated = composed_epsilon(mech, readings=k, delta=0.0)
    assert Fraction(stated) >= exact
    assert Fraction(math.nextafter(stated, -math.inf)) < exact
    budget = float(k * Fraction(eps))

    def stated_after(n: int) -> float:  # the smallest double not below n·Δ/b
        x = n / Fraction(mech.scale)
        return float(x) if Fraction(float(x)) >= x else math.nextafter(float(x), math.inf)

    fits = ReadingAccountant(mechanism=mech, epsilon_budget=budget)
    assert fits.remaining() == max(n for n in (k - 1, k, k + 1) if stated_after(n) <= budget) >= k - 1


def test_huge_counts_do_not_allocate() -> None:
    """Issue 18: charge(10**9) and readings=10**12 are O(1) in time and memory."""
    tracemalloc.start()
    try:
        eps = composed_epsilon(MECH, readings=10**12, delta=DELTA)
        acc = ReadingAccountant(mechanism=MECH)
        acc.charge(10**9)
        dg = DiscreteGaussianMechanism(epsilon=1.0, delta=1e-5, sensitivity=1.0)
        eps_dg = composed_epsilon(dg, readings=10**12, delta=1e-5)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000
    assert acc.readings == 10**9
    # k Gaussians: sqrt(k) Delta / sigma grows like 1e6 here; epsilon ~ mu^2 / 2 dominates
    mu = math.sqrt(10**12) * MECH.sensitivity / MECH.sigma
    assert mu**2 / 2 < eps < mu**2 / 2 + mu * 10
    assert math.isfinite(eps_dg) and eps_dg > 1e6


def test_privacy_report_event_and_pattern_level() -> None:
    report = privacy_report(MECH, releases=24, window=3, delta=DELTA)
    assert report.pattern == privacy_spent(MECH, readings=24, delta=DELTA)
    assert report.event == privacy_spent(MECH, readings=3, delta=DELTA)
    assert report.event.epsilon < report.pattern.epsilon
    early = ReadingAccountant(mechanism=MECH).report(releases=2, window=3)
    assert early.event.readings == 2 == early.pattern.readings


def test_accountant_without_budget_counts_and_reports() -> None:
    acc = ReadingAccountant(mechanism=MECH)
    assert acc.delta_budget == MECH.delta and acc.remaining() is None
    assert acc.spent().epsilon == 0.0
    for _ in range(5):
        acc.charge()
    assert acc.spent() == privacy_spent(MECH, readings=5, delta=MECH.delta)
    assert acc.report(window=2).event.readings == 2 and acc.report().pattern.readings == 5


def test_budget_refusal() -> None:
    acc = ReadingAccountant(mechanism=MECH, epsilon_budget=2.5, delta_budget=DELTA)
    allowed = acc.remaining()
    assert allowed is not None and allowed >= 2
    # the same count from dp_accounting's PLD at a fine discretisation (independent of the closed form)
    nm = MECH.sigma / MECH.sensitivity
    assert float(_pld(nm, allowed).get_epsilon(DELTA)) <= 2.5 < float(_pld(nm, allowed + 1).get_epsilon(DELTA))
    for _ in range(allowed):
        spent = acc.charge()
    assert acc.readings == allowed and spent.epsilon <= 2.5 and spent.readings == allowed
    with pytest.raises(BudgetExceededError, match="over the budget"):
        acc.charge()
    assert acc.readings == allowed  # nothing was charged by the refused release
    assert acc.remaining() == 0
    assert acc.spent() == spent
    with pytest.raises(BudgetExceededError):
        ReadingAccountant(mechanism=MECH, epsilon_budget=2.0, delta_budget=DELTA).charge(1000)


def test_ledger_shares_the_budget_across_objects_and_restarts(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "sensor-7.ledger"
    first = ReadingAccountant(mechanism=MECH, epsilon_budget=2.5, delta_budget=DELTA, ledger=path)
    allowed = first.remaining()
    assert allowed is not None
    first.charge(allowed - 1)
    second = ReadingAccountant(mechanism=MECH, epsilon_budget=2.5, delta_budget=DELTA, ledger=path)
    assert second.readings == allowed - 1  # a second object (or a restarted process) sees the spend
    second.charge()
    assert budget_total(path) == allowed  # on disk before charge() returned
    with pytest.raises(BudgetExceededError):
        first.charge()
    assert budget_total(path) == allowed  # a refused charge writes nothing
    with pytest.raises(InvalidParameterError, match="counts releases for"):
        ReadingAccountant(mechanism=MECH, epsilon_budget=5.0, delta_budget=DELTA, ledger=path)
    bad = tmp_path / "bad.ledger"  # not a database, next to a valid key file
    bad.write_text("{not json")
    (tmp_path / "bad.ledger.key").write_text((tmp_path / "sensor-7.ledger.key").read_text())
    with pytest.raises(InvalidParameterError, match="not a readable ledger"):
        ReadingAccountant(mechanism=MECH, epsilon_budget=2.5, delta_budget=DELTA, ledger=bad)
    with pytest.raises(InvalidParameterError, match="directory"):
        ReadingAccountant(mechanism=MECH, ledger=tmp_path / "missing" / "x.ledger")


def _charge_many(path: str, count: int) -> None:
    acc = ReadingAccountant(mechanism=MECH, ledger=path)
    for _ in range(count):
        acc.charge()


def test_ledger_loses_no_charge_under_concurrent_processes(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Two processes charging the same ledger at once: every charge is counted (lock + atomic replace)."""
    path = str(tmp_path / "shared.ledger")
    ReadingAccountant(mechanism=MECH, ledger=path)  # create it
    ctx = multiprocessing.get_context("fork")
    workers = [ctx.Process(target=_charge_many, args=(path, 25)) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=120)
    assert all(w.exitcode == 0 for w in workers)
    assert ReadingAccountant(mechanism=MECH, ledger=path).readings == 50
    names = {p.name for p in tmp_path.iterdir()}  # no temporary file left (SQLite's -wal/-shm may stay)
    assert {"shared.ledger", "shared.ledger.key"} <= names <= {"shared.ledger", "shared.ledger.key",
                                                               "shared.ledger-wal", "shared.ledger-shm"}


def test_dp_event_unwraps_privatizers() -> None:
    class Wrapper:
        mechanism = MECH

    assert dp_event(Wrapper()) == dp_event(MECH) == dp_accounting.GaussianDpEvent(MECH.sigma / MECH.sensitivity)


def test_bad_inputs() -> None:
    with pytest.raises(InvalidParameterError, match="epsilon_budget"):
        ReadingAccountant(mechanism=MECH, epsilon_budget=0.0, delta_budget=DELTA)
    with pytest.raises(InvalidParameterError, match="delta_budget"):
        ReadingAccountant(mechanism=MECH, epsilon_budget=1.0, delta_budget=1.0)
    with pytest.raises(InvalidParameterError, match="accountant"):
        ReadingAccountant(mechanism=MECH, epsilon_budget=1.0, delta_budget=DELTA, accountant="moments")
    with pytest.raises(InvalidParameterError, match="no \\(epsilon, delta\\) accounting"):
        ReadingAccountant(mechanism=object(), epsilon_budget=1.0, delta_budget=DELTA)
    with pytest.raises(InvalidParameterError, match="readings"):
        composed_epsilon(MECH, readings=-1, delta=DELTA)
    with pytest.raises(InvalidParameterError, match="count"):
        ReadingAccountant(mechanism=MECH, epsilon_budget=1.0, delta_budget=DELTA).charge(0)
    with pytest.raises(InvalidParameterError, match="window"):
        privacy_report(MECH, releases=3, window=0, delta=DELTA)
    with pytest.raises(InvalidParameterError, match="rho"):
        zcdp_epsilon(rho=-1.0, delta=1e-5)


def _zcdp_exact(rho: float, delta: float) -> mpmath.mpf:
    """The exact optimum over α > 1 at 60 digits: the root of ρ(α−1)² + log α = log(1/δ) (mpmath), then ε(α).

    The root is found by mpmath's bracketed Anderson–Björck iteration on [1, 1 + √(log(1/δ)/ρ)] (the left side
    increases in α) and certified: the left side is below log(1/δ) just under it and above just over it (a
    relative 1e-50 either way), so it is the bisection's root without its 400 steps."""
    with mpmath.workdps(60):
        r, big_l = mpmath.mpf(rho), -mpmath.log(mpmath.mpf(delta))

        def side(a: mpmath.mpf) -> mpmath.mpf:
            return r * (a - 1) ** 2 + mpmath.log(a) - big_l

        a = mpmath.findroot(side, (mpmath.mpf(1), 1 + mpmath.sqrt(big_l / r)), solver="anderson")
        step = (a - 1) * mpmath.mpf(10) ** -50
        assert side(a - step) < 0 < side(a + step), (rho, delta)
        return a * r + mpmath.log(1 - 1 / a) + (big_l - mpmath.log(a)) / (a - 1)


def test_zcdp_closed_form_is_never_below_its_exact_value() -> None:
    """Regression (issue 28, defect 8): ε at the optimal Rényi order sat up to 1 ulp below its exact value.

    Oracle: the optimum by mpmath at 60 digits (bisection on the derivative's root), over 1,000 random (ρ, δ).
    """
    rng = np.random.default_rng(28)
    below = 0
    for _ in range(1000):
        rho, delta = float(10 ** rng.uniform(-8, 3)), float(10 ** rng.uniform(-15, -1))
        got = zcdp_epsilon(rho=rho, delta=delta)
        exact = _zcdp_exact(rho, delta)
        with mpmath.workdps(60):
            exact = max(exact, 0)  # a bound below 0 at the optimal order means ε = 0
            below += mpmath.mpf(got) < exact
            assert mpmath.mpf(got) <= exact * (1 + mpmath.mpf(10) ** -10) + 1e-15  # rounded outward, not loose
    assert below == 0


def test_split_epsilon_parts_sum_exactly_to_at_most_epsilon() -> None:
    """split_epsilon / total_epsilon against Fraction arithmetic: parts never sum above ε, and the total covers them."""
    from fractions import Fraction

    from dpcloak.privacy.accounting import split_epsilon, total_epsilon

    rng = np.random.default_rng(8)
    for _ in range(3000):
        eps = float(10 ** rng.uniform(-4, 3))
        weights = rng.uniform(0, 1, int(rng.integers(1, 12))).tolist()
        parts = split_epsilon(eps, weights)
        exact = sum(map(Fraction, parts))
        assert exact <= Fraction(eps) and exact >= Fraction(eps) * (1 - Fraction(1, 10**14))
        assert exact <= Fraction(total_epsilon(parts)) <= Fraction(eps)
        for p, w in zip(parts, weights, strict=True):
            assert p == pytest.approx(eps * w / sum(weights), rel=1e-12, abs=1e-300)
    with pytest.raises(InvalidParameterError, match="weights"):
        split_epsilon(1.0, [0.0, 0.0])


# --- issue 28 "one privacy core": release events and the one accountant ---------------------------------------------


def test_one_release_reports_one_epsilon() -> None:
    """The accountant's ε for one event at the mechanism's δ is the mechanism's own ε (was 0.99993 against 1.0).

    Oracle: the calibration target itself, and the zCDP optimum by mpmath from the exact rational σ².
    """
    from dpcloak.privacy.accounting import compose, release_event

    for eps, delta, sens in ((1.0, 1e-6, 1.0), (0.3, 1e-5, 2.5), (4.0, 1e-9, 0.7)):
        mech = DiscreteGaussianMechanism(epsilon=eps, delta=delta, sensitivity=sens)
        one = compose([release_event(mech)], delta=delta).epsilon
        assert eps * (1 - 1e-8) <= one <= eps == mech.guarantee().epsilon
        rho = Fraction(mech.grid_sensitivity) ** 2 / (2 * mech.sigma2)
        assert float(_zcdp_exact(float(rho), delta)) == pytest.approx(one, rel=1e-12)
    for mech in (GaussianMechanism(epsilon=0.8, delta=1e-5, sensitivity=1.0), LaplaceMechanism(epsilon=0.8,
                                                                                                sensitivity=1.0)):
        one = compose([release_event(mech)], delta=mech.guarantee().delta).epsilon
        assert one == pytest.approx(0.8, rel=1e-12)  # the Gaussian profile's inverse is found to a few ulps


def test_heterogeneous_gaussian_events_compose_exactly() -> None:
    """Gaussians with different σ and Δ: one Gaussian with μ = √Σμ_i² (oracle: Balle & Wang's profile in mpmath)."""
    from dpcloak.privacy.accounting import GaussianEvent, compose

    events = [(GaussianEvent(sensitivity=1.0, scale=3.0), 5), (GaussianEvent(sensitivity=0.5, scale=1.0), 2),
              (GaussianEvent(sensitivity=2.0, scale=9.0, sensors=(0, 3), window=7), 1)]
    mu = math.sqrt(5 / 9 + 2 * 0.25 + 4 / 81)
    got = compose(events, delta=1e-6)
    with mpmath.workdps(40):
        m = mpmath.mpf(mu)

        def delta_of(e: mpmath.mpf) -> mpmath.mpf:
            return mpmath.ncdf(m / 2 - e / m) - mpmath.exp(e) * mpmath.ncdf(-m / 2 - e / m)

        assert delta_of(mpmath.mpf(got.epsilon)) <= 1e-6 < delta_of(mpmath.mpf(got.epsilon) * (1 - 1e-9))
    pld = PLDAccountant()
    for event, n in events:
        pld.compose(event.dp_accounting_event(), n)
    assert got.epsilon == pytest.approx(pld.get_epsilon(1e-6), rel=1e-3) and got.readings == 8


def test_mixed_events_take_the_better_of_two_valid_bounds() -> None:
    """Laplace + discrete Gaussian: ≤ both zCDP-of-everything and pure-sum + zCDP-of-the-rest (mpmath oracles)."""
    from dpcloak.privacy.accounting import DiscreteGaussianEvent, LaplaceEvent, compose

    lap, dg = LaplaceEvent(sensitivity=1.0, scale=20.0), DiscreteGaussianEvent(sensitivity=4.0, scale=40.0)
    for n_lap, n_dg in ((1, 1), (10, 3), (200, 50), (3, 400)):
        got = compose([(lap, n_lap), (dg, n_dg)], delta=1e-6).epsilon
        rho_dg, eps_lap = n_dg * 16 / (2 * 1600), n_lap / 20
        with mpmath.workdps(60):
            all_zcdp = _zcdp_exact(rho_dg + n_lap * (1 / 20) ** 2 / 2, 1e-6)
            basic = eps_lap + _zcdp_exact(rho_dg, 1e-6)
            best = min(all_zcdp, basic)
            assert best <= mpmath.mpf(got) <= best * (1 + mpmath.mpf(10) ** -10)
        rdp = RdpAccountant()
        rdp.compose(dp_accounting.ZCDpEvent(rho_dg + n_lap / 800))
        assert got <= rdp.get_epsilon(1e-6) * (1 + 1e-12)  # dp_accounting's RDP on the same zCDP


def test_a_new_mechanism_needs_no_change_to_the_accountant() -> None:
    """No type switch: an event family defined here (pure ε by its own method) is composed like the built-in ones."""
    from dataclasses import dataclass

    from dpcloak.privacy.accounting import ReleaseEvent, compose, release_event

    @dataclass(frozen=True)
    class RandomisedResponseEvent(ReleaseEvent):
        kind = "randomised-response"

        def pure_epsilon(self) -> Fraction:  # ε = log((1 − p)/p) taken here as the rational scale
            return Fraction(self.scale)

    class Privatizer:
        mechanism = type("Inner", (), {"release_event": lambda self: RandomisedResponseEvent(1.0, Fraction(1, 4))})()

    event = release_event(Privatizer())
    assert compose([(event, 4)], delta=0.0).epsilon == 1.0
    assert hash(event) == hash(RandomisedResponseEvent(1.0, Fraction(1, 4)))
    with pytest.raises(AttributeError):
        event.scale = 2.0  # type: ignore[misc]
    with pytest.raises(InvalidParameterError, match="no \\(epsilon, delta\\) accounting"):
        release_event(object())


def test_accounting_module_has_no_type_switch() -> None:
    """The accountant dispatches on event methods: no isinstance over mechanism or event classes in accounting.py."""
    import ast
    import inspect

    import dpcloak.privacy.accounting as accounting

    tree = ast.parse(inspect.getsource(accounting))
    checked = [ast.unparse(node.args[1]) for node in ast.walk(tree)
               if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "isinstance"]
    assert set(checked) <= {"Fraction", "tuple", "ReleaseEvent"}  # input validation only

r"""The audit suite: dpcloak's own mechanisms, tested at their claimed parameters, and broken variants.

Every entry runs :func:`~dpcloak.audit.blackbox.audit_blackbox` on a mechanism of dpcloak and one
worst-case neighbouring pair and states the verdict it *must* get: ACCEPT for the shipped
mechanisms, REJECT for deliberately broken variants (noise scale halved, sensitivity
underestimated by a factor). The suite fails if any entry gets the other verdict.

Databases of the scalar mechanisms are represented by their query answers ``0`` and ``Δ`` (a
neighbouring pair at the sensitivity, the worst case for additive noise). The per-sensor privatizer
is audited on :func:`dpcloak.models.heat_kernel_1d` ``(100, 50, 0.1)`` with the source vectors
``e_i, e_j`` of :func:`dpcloak.privacy.sensitivity.worst_neighbours`; the heatmap on a 4 × 4 grid
with one user added. Continual counting (:mod:`dpcloak.privacy.continual`, T = 8 windows) is audited on
what the node releases (the noisy integers; the running totals are post-processing) for all-zero counts
against the first window's count raised by the sensitivity, with the simulation noise (so "idealised
noise"); its broken variant is calibrated to a quarter of the sensitivity.

Claims are chosen where auditing is feasible: by thesis Theorem 10.2 a claim is only verifiable
with as many queries as it takes to break it, so ``(ε, δ) = (0.5, 0.05)`` is audited rather than a
deployment-grade ``δ = 10⁻⁵`` (which would need ~10¹⁰ queries per database). The mechanisms are
the same code at every parameter.

Which tester each entry uses is printed with it; full-information entries (Algorithms 5 and 6)
get the side information from the mechanism's own claimed noise distribution (σ, Laplace scale),
so a broken noise scale is caught as "samples do not match the claim" and a wrong sensitivity as
"the claimed distributions are not private for these neighbours".

Every entry also runs the event tests of :mod:`dpcloak.audit.events` (exact atoms and the lowest
mantissa bits, which binning discards). The float samplers' claims hold for idealised real-valued
noise, so their entries are audited with ``claim_scope="idealised"`` (bits tolerate the rounding
structure); the exact grid samplers are held to their claim on the released doubles. Broken
variants only these tests see must be rejected: a secret bit written into the lowest mantissa bit
of a correct Gaussian output, or into bit 9 (true ``δ = 1``), a Gaussian that releases its input
exactly with probability 0.04 (true ``δ_ε = 0.04 + 0.96·0.05 = 0.088`` against the claimed 0.05), a
second coordinate whose noise scale is ×3 for one input while its mean stays 0 (``δ_ε = 0.43``) and a
discrete Laplace whose grid index's parity is the input (data-dependent rounding, ``δ_ε = 1``). One
``UNCLAIMED`` entry reads the float Gaussian's *released doubles* against its claim, which they do
not meet (Mironov 2012: the lowest bit alone has ``δ_ε ≈ 0.12``): it must be rejected, and shows why
releases default to the exact samplers.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from dpcloak._rng import RngLike, as_generator
from dpcloak.audit.blackbox import EVENT_SHARE, Binning, BlackBoxAudit, audit_blackbox
from dpcloak.audit.events import (
    FAMILIES,
    LOW_BITS,
    MIN_ATOM_COUNT,
    RESIDUE_MODULI,
    ROUNDING_TOLERANCE,
    event_margin,
    event_queries_needed,
)
from dpcloak.audit.testers import ACCEPT, REJECT, adp_tester_queries
from dpcloak.errors import DpcloakError, InvalidParameterError

__all__ = ["SuiteCase", "SuiteRow", "SuiteReport", "suite_cases", "run_suite", "out_of_reach"]

#: Claims audited (see the module docstring for why these values).
GAUSS_EPS, GAUSS_DELTA = 0.5, 0.05
LAPLACE_EPS = 1.0
HEATMAP_EPS = 1.0
#: Accuracy of the no-information tester (rejects δ_ε ≥ δ + 2α) and of the full-information ones.
ALPHA_NO_INFO = 0.025
ALPHA_IDENTITY = 0.02
ALPHA_PURE = 0.1
#: Fresh outputs per database of the atom and low-bit event tests (the heatmap release is slower per query).
EVENT_QUERIES = 50_000
HEATMAP_EVENT_QUERIES = 5_000
#: Pilot outputs per database (binning and event selection).
PILOT = 2000
#: Probability with which the broken "exact release" variant outputs its input unchanged.
EXACT_RELEASE_PROBABILITY = 0.04

#: ``progress(done, total, label)``: called before each audit (label = its mechanism) and at the end.
Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class SuiteCase:
    """One audit to run: a name, the claim, the verdict it must get and how to run it.

    Examples
    --------
    >>> cases, _, _ = suite_cases()
    >>> case = cases[0]
    >>> isinstance(case, SuiteCase), case.mechanism, case.expected
    (True, 'Gaussian (analytic), σ=2.03', 'ACCEPT')
    """

    mechanism: str
    claim: str
    expected: str
    run: Callable[[np.random.Generator], BlackBoxAudit]


@dataclass(frozen=True)
class SuiteRow:
    """One line of the suite's table.

    Attributes
    ----------
    mechanism, claim : str
        What was audited and the claim tested.
    tester : str
        Algorithm used.
    expected, verdict : str
        Required and obtained verdicts.
    queries : int
        Calls of the mechanism (pilot included).
    seconds : float
        Wall time.
    detects : str
        The tester's guarantee: the size of violation it rejects with probability ≥ 2/3.
    events_detect : str
        The event tests' guarantee (atoms, mantissa bits, grid residues, coordinate spread): the excess of
        the selected event's ``δ_ε``
        they reject, ``"-"`` if they did not run.
    evidence : str
        The statistic against its threshold (of the check that rejected, if one did).

    Examples
    --------
    >>> row = run_suite(select="Laplace calibrated to").rows[0]
    >>> isinstance(row, SuiteRow), row.expected, row.verdict, row.passed
    (True, 'REJECT', 'REJECT', True)
    """

    mechanism: str
    claim: str
    tester: str
    expected: str
    verdict: str
    queries: int
    seconds: float
    detects: str
    events_detect: str
    evidence: str

    @property
    def passed(self) -> bool:
        """The verdict is the required one."""
        return self.verdict == self.expected


@dataclass(frozen=True)
class SuiteReport:
    """Result of :func:`run_suite`.

    Attributes
    ----------
    rows : tuple of SuiteRow
        One per audit run (verdict ``"ERROR"`` if the mechanism raised while being audited).
    missing : tuple of str
        Groups whose mechanism module is not installed (not a failure), with the reason.
    errors : tuple of str
        Groups whose mechanisms could not be built at their claimed parameters (a failure).
    seed : int
        The suite's seed (−1 when a Generator was passed).
    seconds : float
        Total wall time.
    limits : tuple of str
        What these query budgets cannot verify (:func:`out_of_reach`).

    Examples
    --------
    >>> report = run_suite(select="Laplace, b=")
    >>> isinstance(report, SuiteReport), report.passed, report.seed, report.errors
    (True, True, 0, ())
    """

    rows: tuple[SuiteRow, ...]
    missing: tuple[str, ...]
    errors: tuple[str, ...]
    seed: int
    seconds: float
    limits: tuple[str, ...]

    @property
    def passed(self) -> bool:
        """Every shipped mechanism accepted, every broken variant rejected, nothing failed to build."""
        return not self.errors and all(r.passed for r in self.rows)


# --------------------------------------------------------------------------------------------------
# side information: claimed output distributions, binned


def _bin_probabilities(cdf: Callable[[NDArray[np.float64]], NDArray[np.float64]], binning: Binning) -> NDArray[Any]:
    edges = np.concatenate([[-np.inf], binning.edges, [np.inf]])
    p = np.clip(np.diff(cdf(edges)), 0.0, None)
    return p / p.sum()


def _gaussian_side(sigma: float, center: Callable[[Any, Binning], float]) -> Callable[[Any, Binning], NDArray[Any]]:
    def side(database: Any, binning: Binning) -> NDArray[Any]:
        return _bin_probabilities(lambda e: stats.norm.cdf(e, loc=center(database, binning), scale=sigma), binning)
    return side


def _laplace_side(scale: float, center: Callable[[Any, Binning], float]) -> Callable[[Any, Binning], NDArray[Any]]:
    def side(database: Any, binning: Binning) -> NDArray[Any]:
        return _bin_probabilities(lambda e: stats.laplace.cdf(e, loc=center(database, binning), scale=scale), binning)
    return side


def _scalar_center(database: Any, binning: Binning) -> float:
    return float(database)


def _column(index: int) -> Callable[[NDArray[Any]], NDArray[Any]]:
    """Feature: one coordinate of vector outputs."""
    def feature(values: NDArray[Any]) -> NDArray[Any]:
        return values[:, index]
    return feature


def _laplace_edges(low: float, high: float, scale: float) -> NDArray[np.float64]:
    """Four bins around two centres: both tails (where the likelihood ratio is extreme) and the middle."""
    return np.array([low - scale, 0.5 * (low + high), high + scale])


# --------------------------------------------------------------------------------------------------
# the cases


def _audit(mechanism: Callable[..., Any], neighbours: Any, *, scope: str,
           **options: Any) -> Callable[[np.random.Generator], Any]:
    """Deferred :func:`audit_blackbox` of a vectorized mechanism, run with the suite's generator.

    ``scope`` is the claim's scope: ``"idealised"`` for the float samplers, ``"released"`` for the exact ones.
    """
    def run(gen: np.random.Generator) -> BlackBoxAudit:
        settings = {"event_queries": EVENT_QUERIES, "pilot": PILOT, **options}
        return audit_blackbox(mechanism, neighbours, vectorized=True, rng=gen, claim_scope=scope, **settings)
    return run


def _additive(privatize: Callable[..., NDArray[Any]], factor: float = 1.0) -> Callable[..., NDArray[Any]]:
    """Vectorized scalar mechanism ``(value, rng, size) ->`` outputs; ``factor ≠ 1`` scales the noise (a bug).

    With ``factor = 1`` the outputs are the mechanism's own doubles, untouched (the event tests read their bits).
    """
    def mechanism(value: float, rng: np.random.Generator, size: int) -> NDArray[Any]:
        x = np.full((size, 1), float(value))  # size independent one-coordinate releases
        out = np.asarray(privatize(x, rng=rng), dtype=float)
        return (out if factor == 1.0 else x + factor * (out - x)).ravel()
    return mechanism


def _secret_in_bit(mechanism: Callable[..., NDArray[Any]], bit: int = 0) -> Callable[..., NDArray[Any]]:
    """BROKEN: the correct output with mantissa bit ``bit`` set to the database's bit (0 or 1): ``δ = 1``."""
    mask = np.uint64(1) << np.uint64(bit)

    def broken(value: float, rng: np.random.Generator, size: int) -> NDArray[Any]:
        bits = np.ascontiguousarray(mechanism(value, rng, size), dtype=np.float64).view(np.uint64)
        return ((bits & ~mask) | (np.uint64(int(value) & 1) << np.uint64(bit))).view(np.float64)
    return broken


def _spread_leak(sigma: float, scale: float) -> Callable[..., NDArray[Any]]:
    """BROKEN: coordinate 0 the Gaussian release of the value, coordinate 1 pure noise of σ·scale^value (mean 0)."""
    def broken(value: float, rng: np.random.Generator, size: int) -> NDArray[Any]:
        return np.stack([value + sigma * rng.standard_normal(size),
                         sigma * scale ** float(value) * rng.standard_normal(size)], axis=1)
    return broken


def _parity_leak(privatize: Callable[..., NDArray[Any]], resolution: float) -> Callable[..., NDArray[Any]]:
    """BROKEN: data-dependent rounding, grid index ``2Y + value`` (Y the exact noise): its parity is the input."""
    def broken(value: float, rng: np.random.Generator, size: int) -> NDArray[Any]:
        noise = np.asarray(privatize(np.zeros((size, 1)), rng=rng), dtype=float).ravel()
        return 2.0 * noise + resolution * (int(value) & 1)
    return broken


def _exact_release(mechanism: Callable[..., NDArray[Any]], probability: float) -> Callable[..., NDArray[Any]]:
    """BROKEN: with probability ``probability`` the input itself, else the correct output."""
    def broken(value: float, rng: np.random.Generator, size: int) -> NDArray[Any]:
        out = mechanism(value, rng, size)
        return np.where(rng.random(size) < probability, float(value), out)
    return broken


def _gaussian_cases() -> list[SuiteCase]:
    from dpcloak.privacy.mechanisms import GaussianMechanism

    claim = f"({GAUSS_EPS:g}, {GAUSS_DELTA:g})-DP, Δ2 = 1"
    pair = (0.0, 1.0)
    no_info: dict[str, Any] = {"epsilon": GAUSS_EPS, "delta": GAUSS_DELTA, "alpha": ALPHA_NO_INFO}
    float_claim = f"{claim}, idealised noise"
    cases = []
    for calibration in ("analytic", "classic", "paper"):
        mech = GaussianMechanism(epsilon=GAUSS_EPS, delta=GAUSS_DELTA, sensitivity=1.0, calibration=calibration)
        cases.append(SuiteCase(f"Gaussian ({calibration}), σ={mech.sigma:.3g}", float_claim, ACCEPT,
                               _audit(_additive(mech.privatize), pair, scope="idealised", **no_info)))
    mech = GaussianMechanism(epsilon=GAUSS_EPS, delta=GAUSS_DELTA, sensitivity=1.0)
    full_info: dict[str, Any] = {"epsilon": GAUSS_EPS, "delta": GAUSS_DELTA, "alpha": ALPHA_IDENTITY,
                 "side_information": _gaussian_side(mech.sigma, _scalar_center)}
    wrong = GaussianMechanism(epsilon=GAUSS_EPS, delta=GAUSS_DELTA, sensitivity=0.25)
    correct = _additive(mech.privatize)
    p = EXACT_RELEASE_PROBABILITY
    true_delta = p + (1 - p) * GAUSS_DELTA  # the atom, plus the continuous part (analytic: δ_ε = δ exactly)
    cases += [
        SuiteCase(f"Gaussian (analytic), σ={mech.sigma:.3g}", float_claim, ACCEPT,
                  _audit(correct, pair, scope="idealised", **full_info)),
        SuiteCase("BROKEN Gaussian (analytic), noise σ halved", float_claim, REJECT,
                  _audit(_additive(mech.privatize, 0.5), pair, scope="idealised", **no_info)),
        SuiteCase("BROKEN Gaussian (analytic), noise σ halved", float_claim, REJECT,
                  _audit(_additive(mech.privatize, 0.5), pair, scope="idealised", **full_info)),
        SuiteCase("BROKEN Gaussian (analytic) calibrated to Δ2/4", float_claim, REJECT,
                  _audit(_additive(wrong.privatize), pair, scope="idealised", **no_info)),
        SuiteCase("BROKEN Gaussian (analytic), secret bit in the lowest mantissa bit (δ = 1)", float_claim, REJECT,
                  _audit(_secret_in_bit(correct), pair, scope="idealised", **no_info)),
        SuiteCase("BROKEN Gaussian (analytic), secret bit in mantissa bit 9 (δ = 1)", float_claim, REJECT,
                  _audit(_secret_in_bit(correct, 9), pair, scope="idealised", **no_info)),
        SuiteCase("BROKEN Gaussian (analytic) plus a coordinate whose noise is x3 for one input (δ_ε = 0.43)",
                  float_claim, REJECT, _audit(_spread_leak(mech.sigma, 3.0), pair, scope="idealised", **no_info)),
        SuiteCase(f"BROKEN Gaussian (analytic), input released exactly w.p. {p:g} (δ_ε = {true_delta:.3g})",
                  float_claim, REJECT, _audit(_exact_release(correct, p), pair, scope="idealised", **no_info)),
        SuiteCase("UNCLAIMED float Gaussian (analytic) read bit by bit (Mironov 2012)",
                  f"{claim}, released doubles", REJECT, _audit(correct, pair, scope="released", **no_info)),
    ]
    return cases


def _laplace_cases() -> list[SuiteCase]:
    from dpcloak.privacy.mechanisms import LaplaceMechanism

    claim = f"{LAPLACE_EPS:g}-DP, Δ1 = 1, idealised noise"
    pair = (0.0, 1.0)
    mech = LaplaceMechanism(epsilon=LAPLACE_EPS, sensitivity=1.0)
    wrong = LaplaceMechanism(epsilon=LAPLACE_EPS, sensitivity=1 / 3)
    no_info: dict[str, Any] = {"epsilon": LAPLACE_EPS, "alpha": ALPHA_NO_INFO}
    full_info: dict[str, Any] = {"epsilon": LAPLACE_EPS, "alpha": ALPHA_PURE,
                                 "bins": _laplace_edges(0.0, 1.0, mech.scale),
                                 "side_information": _laplace_side(mech.scale, _scalar_center)}
    # the broken mechanism's own (wrong) claim: Laplace of scale Δ1/(3ε)
    wrong_info: dict[str, Any] = {**full_info, "side_information": _laplace_side(wrong.scale, _scalar_center)}
    return [
        SuiteCase(f"Laplace, b={mech.scale:.3g}", claim, ACCEPT,
                  _audit(_additive(mech.privatize), pair, scope="idealised", **full_info)),
        SuiteCase(f"Laplace, b={mech.scale:.3g}", claim, ACCEPT,
                  _audit(_additive(mech.privatize), pair, scope="idealised", **no_info)),
        SuiteCase("BROKEN Laplace, noise scale halved", claim, REJECT,
                  _audit(_additive(mech.privatize, 0.5), pair, scope="idealised", **full_info)),
        SuiteCase("BROKEN Laplace calibrated to Δ1/3", claim, REJECT,
                  _audit(_additive(wrong.privatize), pair, scope="idealised", **wrong_info)),
        SuiteCase("BROKEN Laplace calibrated to Δ1/3", claim, REJECT,
                  _audit(_additive(wrong.privatize), pair, scope="idealised", **no_info)),
    ]


def _discrete_laplace_side(grid_scale: float, resolution: float) -> Callable[[Any, Binning], NDArray[Any]]:
    """Binned exact discrete Laplace ``P(K = k) ∝ e^{−|k|/t}`` around the grid-rounded value."""
    r = math.exp(-1.0 / grid_scale)

    def cdf(k: NDArray[np.float64]) -> NDArray[np.float64]:  # P(K ≤ k) for integer (or ±inf) k
        with np.errstate(over="ignore"):
            low = np.power(r, np.abs(k)) / (1 + r)
            high = 1 - np.power(r, k + 1) / (1 + r)
        return np.where(k < 0, low, high)

    def side(database: Any, binning: Binning) -> NDArray[Any]:
        center = round(float(database) / resolution)
        return _bin_probabilities(lambda e: cdf(np.floor(e / resolution) - center), binning)

    return side


def _discrete_cases() -> list[SuiteCase]:
    from dpcloak.privacy.discrete import DiscreteGaussianMechanism, DiscreteLaplaceMechanism

    pair = (0.0, 1.0)
    lap = DiscreteLaplaceMechanism(epsilon=LAPLACE_EPS, sensitivity=1.0)
    res = lap.resolution
    full_info: dict[str, Any] = {
        "epsilon": LAPLACE_EPS, "alpha": ALPHA_PURE,
        # edges on half-grid points so no output sits on an edge
        "bins": (np.round(_laplace_edges(0.0, 1.0, lap.scale_value) / res) + 0.5) * res,
        "side_information": _discrete_laplace_side(float(lap.scale), res),
    }
    gauss = DiscreteGaussianMechanism(epsilon=GAUSS_EPS, delta=GAUSS_DELTA, sensitivity=1.0)
    lap_claim = f"{LAPLACE_EPS:g}-DP, Δ1 = 1, released doubles"
    gauss_claim = f"({GAUSS_EPS:g}, {GAUSS_DELTA:g})-DP, Δ2 = 1, released doubles"
    gauss_info: dict[str, Any] = {"epsilon": GAUSS_EPS, "delta": GAUSS_DELTA, "alpha": ALPHA_NO_INFO}
    return [
        SuiteCase(f"discrete Laplace (exact sampler), b={lap.scale_value:.3g}", lap_claim, ACCEPT,
                  _audit(_additive(lap.privatize), pair, scope="released", **full_info)),
        SuiteCase("BROKEN discrete Laplace, noise scale halved", lap_claim, REJECT,
                  _audit(_additive(lap.privatize, 0.5), pair, scope="released", **full_info)),
        SuiteCase("BROKEN discrete Laplace, parity of the grid index leaks", lap_claim, REJECT,
                  _audit(_parity_leak(lap.privatize, res), pair, scope="released", epsilon=LAPLACE_EPS,
                         alpha=ALPHA_PURE)),
        SuiteCase(f"discrete Gaussian (exact sampler), σ={gauss.sigma:.3g}", gauss_claim, ACCEPT,
                  _audit(_additive(gauss.privatize), pair, scope="released", **gauss_info)),
    ]


def _heatmap_cases() -> list[SuiteCase]:
    from dpcloak.heatmaps import bound_users, hierarchical_laplace, level_budget, pyramid_levels, snap

    resolution, w = 4, 1
    xs = np.array([0.1, 0.6, 0.9, 0.35])
    ys = np.array([0.2, 0.7, 0.3, 0.8])
    added = (0.1, 0.1)
    users0 = (np.arange(xs.size), xs, ys)
    users1 = (np.arange(xs.size + 1), np.append(xs, added[0]), np.append(ys, added[1]))
    aggs = [bound_users(*u, resolution=resolution) for u in (users0, users1)]
    budget = level_budget(HEATMAP_EPS, depth=2, w=w)

    def counts(u: tuple[NDArray[Any], NDArray[Any], NDArray[Any]]) -> NDArray[np.float64]:
        grid = np.zeros(resolution * resolution)
        np.add.at(grid, snap(u[1], u[2], resolution=resolution), 1.0)
        flat = pyramid_levels(grid.reshape(resolution, resolution), start_level=budget.levels[0])
        return np.concatenate([level.ravel() for level in flat])

    exact = [counts(users0), counts(users1)]
    changed = np.flatnonzero(exact[1] != exact[0])  # one cell per level

    def release(eps: float) -> Callable[..., NDArray[Any]]:
        def mechanism(k: int, rng: np.random.Generator, size: int) -> NDArray[Any]:
            releases = (hierarchical_laplace(aggs[k], epsilon=eps, w=w, rng=rng, noise="float") for _ in range(size))
            return np.asarray([np.concatenate([lv.ravel() for lv in r.levels]) for r in releases])
        return mechanism

    def level_audit(name: str, expected: str, release_eps: float, k: int) -> SuiteCase:
        """Audit level ``budget.levels[k]`` through the one pyramid cell the added user changes."""
        level, eps_i, cell = budget.levels[k], budget.epsilons[k], int(changed[k])
        scale = 1.0 / eps_i
        edges = _laplace_edges(exact[0][cell], exact[1][cell], scale)
        side = _laplace_side(scale, lambda db, b: float(exact[db][cell]))
        claim = f"level {level}: {eps_i:.3g}-DP (of ε={HEATMAP_EPS:g}), add/remove a user, idealised noise"
        return SuiteCase(name.format(level=level, scale=scale), claim, expected,
                         _audit(release(release_eps), (0, 1), scope="idealised", epsilon=eps_i, alpha=0.15,
                                bins=edges, feature=_column(cell), side_information=side,
                                event_queries=HEATMAP_EVENT_QUERIES))

    cases = [level_audit("heatmap pyramid level {level}, b={scale:.3g}", ACCEPT, HEATMAP_EPS, k)
             for k in range(len(budget.levels))]
    cases.append(level_audit("BROKEN heatmap, every level's noise halved", REJECT, 2 * HEATMAP_EPS,
                             len(budget.levels) - 1))
    return cases


def _privatizer_cases() -> list[SuiteCase]:
    from dpcloak.models import heat_kernel_1d
    from dpcloak.privacy.local import SensorPrivatizer
    from dpcloak.privacy.sensitivity import l2_sensitivity, worst_neighbours

    model = heat_kernel_1d(100, 50, 0.1)
    i, j = worst_neighbours(model)
    readings = {k: model.columns(np.array([k]))[:, 0] for k in (i, j)}
    delta2 = l2_sensitivity(model)
    claim = f"({GAUSS_EPS:g}, {GAUSS_DELTA:g})-DP, neighbours e_{i}, e_{j}"
    good = SensorPrivatizer.from_model(model, epsilon=GAUSS_EPS, delta=GAUSS_DELTA, noise="float")
    bad = SensorPrivatizer.from_model(model, epsilon=GAUSS_EPS, delta=GAUSS_DELTA, sensitivity=delta2 / 3,
                                      noise="float")

    def mechanism(priv: SensorPrivatizer[Any]) -> Callable[..., NDArray[Any]]:
        def run(source: int, rng: np.random.Generator, size: int) -> NDArray[Any]:
            return priv.privatize_all(np.tile(readings[source], (size, 1)), rng=rng)
        return run

    def projected_mean(source: int, binning: Binning) -> float:
        if binning.direction is None:  # the harness projects vector outputs unless given a feature
            raise InvalidParameterError("the privatizer audit needs the harness's projection direction",
                                        parameter="harness")
        return float(readings[source] @ binning.direction)

    sigma = good.mechanism.sigma
    name = f"per-sensor privatizer, heat1d(100, 50, 0.1), σ={sigma:.3g}"
    claim += ", idealised noise"
    no_info: dict[str, Any] = {"epsilon": GAUSS_EPS, "delta": GAUSS_DELTA, "alpha": ALPHA_NO_INFO, "pilot": 20000}
    full_info: dict[str, Any] = {**no_info, "alpha": ALPHA_IDENTITY,
                                 "side_information": _gaussian_side(sigma, projected_mean)}
    return [
        SuiteCase(name, claim, ACCEPT, _audit(mechanism(good), (i, j), scope="idealised", **no_info)),
        SuiteCase(name, claim, ACCEPT, _audit(mechanism(good), (i, j), scope="idealised", **full_info)),
        SuiteCase("BROKEN per-sensor privatizer calibrated to Δ2/3", claim, REJECT,
                  _audit(mechanism(bad), (i, j), scope="idealised", **no_info)),
    ]


def _continual_cases() -> list[SuiteCase]:
    from dpcloak.privacy.continual import ContinualCounter

    horizon = 8
    pair = (0, 1)  # all-zero counts, and the first window's count raised by the sensitivity (the widest column)
    streams = (np.zeros(horizon), np.eye(horizon)[0])

    def release(counter: ContinualCounter) -> Callable[..., NDArray[Any]]:
        def mechanism(k: int, rng: np.random.Generator, size: int) -> NDArray[Any]:
            # what the node releases: the noisy integers V_t (the running totals are post-processing of them)
            out = counter.release(np.tile(streams[k], (size, 1)), simulation=True, rng=rng)
            return np.asarray(out.released, dtype=float) * counter.grid
        return mechanism

    claim = f"({GAUSS_EPS:g}, {GAUSS_DELTA:g})-DP, one window's count changed by 1, idealised noise"
    no_info: dict[str, Any] = {"epsilon": GAUSS_EPS, "delta": GAUSS_DELTA, "alpha": ALPHA_NO_INFO}
    cases = []
    for method in ("factorization", "tree"):
        counter = ContinualCounter(horizon=horizon, epsilon=GAUSS_EPS, delta=GAUSS_DELTA, method=method)
        cases.append(SuiteCase(f"continual counting ({method}), T={horizon}", claim, ACCEPT,
                               _audit(release(counter), pair, scope="idealised", **no_info)))
    weak = ContinualCounter(horizon=horizon, epsilon=GAUSS_EPS, delta=GAUSS_DELTA, sensitivity=0.25)
    cases.append(SuiteCase("BROKEN continual counting (factorization) calibrated to sensitivity/4", claim, REJECT,
                           _audit(release(weak), pair, scope="idealised", **no_info)))
    return cases


_GROUPS: tuple[tuple[str, Callable[[], list[SuiteCase]]], ...] = (
    ("Gaussian mechanisms", _gaussian_cases),
    ("Laplace mechanism", _laplace_cases),
    ("exact discrete samplers", _discrete_cases),
    ("heatmap levels", _heatmap_cases),
    ("per-sensor privatizer", _privatizer_cases),
    ("continual counting", _continual_cases),
)


def suite_cases() -> tuple[list[SuiteCase], list[str], list[str]]:
    """All cases that can be built; notes for groups not installed and for groups that failed to build.

    Examples
    --------
    >>> cases, not_installed, failed = suite_cases()
    >>> len(cases) > 5, failed
    (True, [])
    >>> sorted({c.expected for c in cases})
    ['ACCEPT', 'REJECT']
    """
    cases: list[SuiteCase] = []
    missing: list[str] = []
    errors: list[str] = []
    for name, build in _GROUPS:
        try:
            cases.extend(build())
        except ImportError as exc:  # a mechanism module not available in this installation
            missing.append(f"{name}: {exc}")
        except DpcloakError as exc:  # a shipped mechanism refused its own claimed parameters
            errors.append(f"{name}: {exc}")
    return cases, missing, errors


def _detects(audit: BlackBoxAudit) -> str:
    test = audit.worst.test
    if test.proximity_metric == "delta_epsilon":
        return f"δ_ε ≥ δ + {test.proximity:.3g}"
    if test.proximity_metric == "epsilon":
        return f"ε' ≥ ε + {test.proximity:.3g}"
    return f"TV ≥ {test.proximity:.3g}"


def _events_detect(audit: BlackBoxAudit) -> str:
    events = audit.worst.events
    if not events:
        return "-"
    text = f"δ_ε ≥ δ + {2 * events[0].margin:.3g} (m = {events[0].queries:,})"
    tolerance = max(e.tolerance for e in events)
    return text + f", bits + {tolerance:g}" if tolerance else text


def out_of_reach(
    *, epsilon: float = GAUSS_EPS, delta: float = 1e-5, failure_probability: float = 1 / 3
) -> tuple[str, ...]:
    r"""What the suite's query budgets cannot verify, with the numbers (printed by ``dpcloak audit``).

    * Algorithm 4 with ``n = 10`` bins and ``α = ALPHA_NO_INFO`` detects ``δ_ε ≥ δ + 2α``; a violation
      of size ``delta`` needs ``α = delta/2`` (:func:`~dpcloak.audit.testers.adp_tester_queries`).
    * The event tests with ``m = EVENT_QUERIES`` detect an excess ``2t`` of the selected event
      (:func:`~dpcloak.audit.events.event_margin`); an excess ``delta`` needs
      :func:`~dpcloak.audit.events.event_queries_needed` queries. Atoms lighter than about
      ``MIN_ATOM_COUNT/(2·PILOT)`` are not located; under an idealised (float) claim a bit biased by
      less than ``1/2`` is invisible.
    * Pure DP without side information is not verifiable at all (thesis Theorem 10.5).

    Examples
    --------
    >>> notes = out_of_reach()
    >>> len(notes), notes[-1].split(";")[0]
    (4, 'Pure ε-DP is not verifiable without side information (Theorem 10.5)')
    """
    f_tester = (1 - EVENT_SHARE) * failure_probability
    f_event = EVENT_SHARE * failure_probability / (2 * len(FAMILIES))
    now = adp_tester_queries(n=10, epsilon=epsilon, alpha=ALPHA_NO_INFO, failure_probability=f_tester)
    needed = adp_tester_queries(n=10, epsilon=epsilon, alpha=delta / 2, failure_probability=f_tester)
    t = event_margin(queries=EVENT_QUERIES, epsilon=epsilon, failure_probability=f_event)
    event_needed = event_queries_needed(excess=delta, epsilon=epsilon, failure_probability=f_event)
    return (
        f"Binned tester (Alg. 4, 10 bins, ε = {epsilon:g}): {now:,.0f} queries per database detect δ_ε ≥ δ + "
        f"{2 * ALPHA_NO_INFO:g}; a violation of δ by {delta:g} would need {needed:.2g} queries per database.",
        f"Event tests (atoms, all {LOW_BITS} mantissa bits, grid residues mod {RESIDUE_MODULI}, each coordinate's "
        f"spread; ε = {epsilon:g}): {EVENT_QUERIES:,} fresh queries per database reject the event each family "
        f"selects on the pilot when its δ_ε ≥ δ + {2 * t:.3g}; an excess of {delta:g} would need "
        f"{event_needed:.2g}. Guaranteed for the selected events only, not for every event.",
        f"Atoms of mass below about {MIN_ATOM_COUNT / (2 * PILOT):.1g} are not located by a {PILOT:,}-output pilot "
        "per database; a leak spread over many values, bits or residues, in a joint event of several "
        "coordinates, in a residue modulo other than "
        f"{RESIDUE_MODULI} of the smallest spacing seen, or in the shape of a distribution whose spread "
        "quantiles match is not selected; under an idealised (float) claim a bit carrying the input with "
        f"a bias below {ROUNDING_TOLERANCE:g} is tolerated as rounding.",
        "Pure ε-DP is not verifiable without side information (Theorem 10.5); verifying is as hard as breaking "
        "(Theorem 10.2), so claims are audited at (ε, δ) where a violation is detectable.",
    )


def _tester_name(audit: BlackBoxAudit) -> str:
    return audit.worst.test.algorithm.split(" (")[0].replace("Algorithm", "Alg.") + (
        " (no info)" if "no information" in audit.worst.test.algorithm else " (full info)")


def run_suite(*, rng: RngLike = 0, select: str | None = None, progress: Progress | None = None) -> SuiteReport:
    """Run every audit of the suite (or those whose mechanism name contains ``select``).

    Parameters
    ----------
    rng : Generator, int or None
        Seed of the whole suite (default 0: the reported table is reproducible).
    select : str, optional
        Case-insensitive substring of the mechanism names to run.
    progress : callable, optional
        ``progress(done, total, label)``, called before each audit (``label`` = its mechanism) and
        once at the end with ``done == total``.

    Returns
    -------
    SuiteReport
        One row per audit; ``passed`` iff shipped mechanisms are accepted and broken ones rejected.

    Examples
    --------
    One group of the suite: the shipped Laplace mechanism must be accepted by both testers, and one
    calibrated to a third of its sensitivity rejected by both:

    >>> [(row.mechanism, row.verdict) for row in run_suite(select="Laplace, b=").rows]
    [('Laplace, b=1', 'ACCEPT'), ('Laplace, b=1', 'ACCEPT')]
    >>> [(row.mechanism, row.verdict) for row in run_suite(select="Laplace calibrated to").rows]
    [('BROKEN Laplace calibrated to Δ1/3', 'REJECT'), ('BROKEN Laplace calibrated to Δ1/3', 'REJECT')]
    """
    gen = as_generator(rng)
    seed = int(rng) if isinstance(rng, int | np.integer) else -1
    cases, missing, errors = suite_cases()
    if select is not None:
        cases = [c for c in cases if select.lower() in c.mechanism.lower()]
    rows = []
    start = time.perf_counter()
    for done, case in enumerate(cases):
        if progress is not None:
            progress(done, len(cases), case.mechanism)
        t0 = time.perf_counter()
        try:
            audit = case.run(gen)
        except DpcloakError as exc:  # the mechanism itself failed while being queried
            rows.append(SuiteRow(case.mechanism, case.claim, "-", case.expected, "ERROR", 0,
                                 time.perf_counter() - t0, "-", "-", str(exc)))
            continue
        rows.append(SuiteRow(case.mechanism, case.claim, _tester_name(audit), case.expected, audit.verdict,
                             audit.queries, time.perf_counter() - t0, _detects(audit), _events_detect(audit),
                             audit.worst.reason))
    if progress is not None:
        progress(len(cases), len(cases), "done")
    return SuiteReport(tuple(rows), tuple(missing), tuple(errors), seed, time.perf_counter() - start, out_of_reach())

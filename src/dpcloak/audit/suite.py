r"""The audit suite: dpcloak's own mechanisms, tested at their claimed parameters, and broken variants.

Every entry runs :func:`~dpcloak.audit.blackbox.audit_blackbox` on a mechanism of dpcloak and one
worst-case neighbouring pair and states the verdict it *must* get: ACCEPT for the shipped
mechanisms, REJECT for deliberately broken variants (noise scale halved, sensitivity
underestimated by a factor). The suite fails if any entry gets the other verdict.

Databases of the scalar mechanisms are represented by their query answers ``0`` and ``Δ`` (a
neighbouring pair at the sensitivity, the worst case for additive noise). The per-sensor privatizer
is audited on :func:`dpcloak.models.heat_kernel_1d` ``(100, 50, 0.1)`` with the source vectors
``e_i, e_j`` of :func:`dpcloak.privacy.sensitivity.worst_neighbours`; the heatmap on a 4 × 4 grid
with one user added.

Claims are chosen where auditing is feasible: by thesis Theorem 10.2 a claim is only verifiable
with as many queries as it takes to break it, so ``(ε, δ) = (0.5, 0.05)`` is audited rather than a
deployment-grade ``δ = 10⁻⁵`` (which would need ~10¹⁰ queries per database). The mechanisms are
the same code at every parameter.

Which tester each entry uses is printed with it; full-information entries (Algorithms 5 and 6)
get the side information from the mechanism's own claimed noise distribution (σ, Laplace scale),
so a broken noise scale is caught as "samples do not match the claim" and a wrong sensitivity as
"the claimed distributions are not private for these neighbours".
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
from dpcloak.audit.blackbox import Binning, BlackBoxAudit, audit_blackbox
from dpcloak.audit.testers import ACCEPT, REJECT
from dpcloak.errors import DpcloakError, InvalidParameterError

__all__ = ["SuiteCase", "SuiteRow", "SuiteReport", "suite_cases", "run_suite"]

#: Claims audited (see the module docstring for why these values).
GAUSS_EPS, GAUSS_DELTA = 0.5, 0.05
LAPLACE_EPS = 1.0
HEATMAP_EPS = 1.0
#: Accuracy of the no-information tester (rejects δ_ε ≥ δ + 2α) and of the full-information ones.
ALPHA_NO_INFO = 0.025
ALPHA_IDENTITY = 0.02
ALPHA_PURE = 0.1


@dataclass(frozen=True)
class SuiteCase:
    """One audit to run: a name, the claim, the verdict it must get and how to run it."""

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
    evidence : str
        The statistic against its threshold.
    """

    mechanism: str
    claim: str
    tester: str
    expected: str
    verdict: str
    queries: int
    seconds: float
    detects: str
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
    """

    rows: tuple[SuiteRow, ...]
    missing: tuple[str, ...]
    errors: tuple[str, ...]
    seed: int
    seconds: float

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


def _audit(mechanism: Callable[..., Any], neighbours: Any, **options: Any) -> Callable[[np.random.Generator], Any]:
    """Deferred :func:`audit_blackbox` of a vectorized mechanism, run with the suite's generator."""
    def run(gen: np.random.Generator) -> BlackBoxAudit:
        return audit_blackbox(mechanism, neighbours, vectorized=True, rng=gen, **options)
    return run


def _additive(privatize: Callable[..., NDArray[Any]], factor: float = 1.0) -> Callable[..., NDArray[Any]]:
    """Vectorized scalar mechanism ``(value, rng, size) ->`` outputs; ``factor`` scales the noise (a bug)."""
    def mechanism(value: float, rng: np.random.Generator, size: int) -> NDArray[Any]:
        x = np.full((size, 1), float(value))  # size independent one-coordinate releases
        out = np.asarray(privatize(x, rng=rng), dtype=float)
        return (x + factor * (out - x)).ravel()
    return mechanism


def _gaussian_cases() -> list[SuiteCase]:
    from dpcloak.privacy.mechanisms import GaussianMechanism

    claim = f"({GAUSS_EPS:g}, {GAUSS_DELTA:g})-DP, Δ2 = 1"
    pair = (0.0, 1.0)
    no_info = {"epsilon": GAUSS_EPS, "delta": GAUSS_DELTA, "alpha": ALPHA_NO_INFO}
    cases = []
    for calibration in ("analytic", "classic", "paper"):
        mech = GaussianMechanism(epsilon=GAUSS_EPS, delta=GAUSS_DELTA, sensitivity=1.0, calibration=calibration)
        cases.append(SuiteCase(f"Gaussian ({calibration}), σ={mech.sigma:.3g}", claim, ACCEPT,
                               _audit(_additive(mech.privatize), pair, **no_info)))
    mech = GaussianMechanism(epsilon=GAUSS_EPS, delta=GAUSS_DELTA, sensitivity=1.0)
    full_info = {"epsilon": GAUSS_EPS, "delta": GAUSS_DELTA, "alpha": ALPHA_IDENTITY,
                 "side_information": _gaussian_side(mech.sigma, _scalar_center)}
    wrong = GaussianMechanism(epsilon=GAUSS_EPS, delta=GAUSS_DELTA, sensitivity=0.25)
    cases += [
        SuiteCase(f"Gaussian (analytic), σ={mech.sigma:.3g}", claim, ACCEPT,
                  _audit(_additive(mech.privatize), pair, **full_info)),
        SuiteCase("BROKEN Gaussian (analytic), noise σ halved", claim, REJECT,
                  _audit(_additive(mech.privatize, 0.5), pair, **no_info)),
        SuiteCase("BROKEN Gaussian (analytic), noise σ halved", claim, REJECT,
                  _audit(_additive(mech.privatize, 0.5), pair, **full_info)),
        SuiteCase("BROKEN Gaussian (analytic) calibrated to Δ2/4", claim, REJECT,
                  _audit(_additive(wrong.privatize), pair, **no_info)),
    ]
    return cases


def _laplace_cases() -> list[SuiteCase]:
    from dpcloak.privacy.mechanisms import LaplaceMechanism

    claim = f"{LAPLACE_EPS:g}-DP, Δ1 = 1"
    pair = (0.0, 1.0)
    mech = LaplaceMechanism(epsilon=LAPLACE_EPS, sensitivity=1.0)
    wrong = LaplaceMechanism(epsilon=LAPLACE_EPS, sensitivity=1 / 3)
    no_info = {"epsilon": LAPLACE_EPS, "alpha": ALPHA_NO_INFO}
    full_info = {"epsilon": LAPLACE_EPS, "alpha": ALPHA_PURE, "bins": _laplace_edges(0.0, 1.0, mech.scale),
                 "side_information": _laplace_side(mech.scale, _scalar_center)}
    # the broken mechanism's own (wrong) claim: Laplace of scale Δ1/(3ε)
    wrong_info = {**full_info, "side_information": _laplace_side(wrong.scale, _scalar_center)}
    return [
        SuiteCase(f"Laplace, b={mech.scale:.3g}", claim, ACCEPT, _audit(_additive(mech.privatize), pair, **full_info)),
        SuiteCase(f"Laplace, b={mech.scale:.3g}", claim, ACCEPT, _audit(_additive(mech.privatize), pair, **no_info)),
        SuiteCase("BROKEN Laplace, noise scale halved", claim, REJECT,
                  _audit(_additive(mech.privatize, 0.5), pair, **full_info)),
        SuiteCase("BROKEN Laplace calibrated to Δ1/3", claim, REJECT,
                  _audit(_additive(wrong.privatize), pair, **wrong_info)),
        SuiteCase("BROKEN Laplace calibrated to Δ1/3", claim, REJECT,
                  _audit(_additive(wrong.privatize), pair, **no_info)),
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
    full_info = {
        "epsilon": LAPLACE_EPS, "alpha": ALPHA_PURE,
        # edges on half-grid points so no output sits on an edge
        "bins": (np.round(_laplace_edges(0.0, 1.0, lap.scale_value) / res) + 0.5) * res,
        "side_information": _discrete_laplace_side(float(lap.scale), res),
    }
    gauss = DiscreteGaussianMechanism(epsilon=GAUSS_EPS, delta=GAUSS_DELTA, sensitivity=1.0)
    return [
        SuiteCase(f"discrete Laplace (exact sampler), b={lap.scale_value:.3g}", f"{LAPLACE_EPS:g}-DP, Δ1 = 1", ACCEPT,
                  _audit(_additive(lap.privatize), pair, **full_info)),
        SuiteCase("BROKEN discrete Laplace, noise scale halved", f"{LAPLACE_EPS:g}-DP, Δ1 = 1", REJECT,
                  _audit(_additive(lap.privatize, 0.5), pair, **full_info)),
        SuiteCase(f"discrete Gaussian (exact sampler), σ={gauss.sigma:.3g}",
                  f"({GAUSS_EPS:g}, {GAUSS_DELTA:g})-DP, Δ2 = 1", ACCEPT,
                  _audit(_additive(gauss.privatize), pair, epsilon=GAUSS_EPS, delta=GAUSS_DELTA, alpha=ALPHA_NO_INFO)),
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
            releases = (hierarchical_laplace(aggs[k], epsilon=eps, w=w, rng=rng) for _ in range(size))
            return np.asarray([np.concatenate([lv.ravel() for lv in r.levels]) for r in releases])
        return mechanism

    def level_audit(name: str, expected: str, release_eps: float, k: int) -> SuiteCase:
        """Audit level ``budget.levels[k]`` through the one pyramid cell the added user changes."""
        level, eps_i, cell = budget.levels[k], budget.epsilons[k], int(changed[k])
        scale = 1.0 / eps_i
        edges = _laplace_edges(exact[0][cell], exact[1][cell], scale)
        side = _laplace_side(scale, lambda db, b: float(exact[db][cell]))
        claim = f"level {level}: {eps_i:.3g}-DP (of ε={HEATMAP_EPS:g}), add/remove a user"
        return SuiteCase(name.format(level=level, scale=scale), claim, expected,
                         _audit(release(release_eps), (0, 1), epsilon=eps_i, alpha=0.15, bins=edges,
                                feature=_column(cell), side_information=side))

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
    good = SensorPrivatizer.from_model(model, epsilon=GAUSS_EPS, delta=GAUSS_DELTA)
    bad = SensorPrivatizer.from_model(model, epsilon=GAUSS_EPS, delta=GAUSS_DELTA, sensitivity=delta2 / 3)

    def mechanism(priv: SensorPrivatizer[Any]) -> Callable[..., NDArray[Any]]:
        def run(source: int, rng: np.random.Generator, size: int) -> NDArray[Any]:
            return priv.privatize_all(np.tile(readings[source], (size, 1)), rng=rng)
        return run

    def projected_mean(source: int, binning: Binning) -> float:
        if binning.direction is None:  # the harness projects vector outputs unless given a feature
            raise InvalidParameterError("the privatizer audit needs the harness's projection direction")
        return float(readings[source] @ binning.direction)

    sigma = good.mechanism.sigma
    name = f"per-sensor privatizer, heat1d(100, 50, 0.1), σ={sigma:.3g}"
    no_info = {"epsilon": GAUSS_EPS, "delta": GAUSS_DELTA, "alpha": ALPHA_NO_INFO, "pilot": 20000}
    full_info = {**no_info, "alpha": ALPHA_IDENTITY, "side_information": _gaussian_side(sigma, projected_mean)}
    return [
        SuiteCase(name, claim, ACCEPT, _audit(mechanism(good), (i, j), **no_info)),
        SuiteCase(name, claim, ACCEPT, _audit(mechanism(good), (i, j), **full_info)),
        SuiteCase("BROKEN per-sensor privatizer calibrated to Δ2/3", claim, REJECT,
                  _audit(mechanism(bad), (i, j), **no_info)),
    ]


_GROUPS: tuple[tuple[str, Callable[[], list[SuiteCase]]], ...] = (
    ("Gaussian mechanisms", _gaussian_cases),
    ("Laplace mechanism", _laplace_cases),
    ("exact discrete samplers", _discrete_cases),
    ("heatmap levels", _heatmap_cases),
    ("per-sensor privatizer", _privatizer_cases),
)


def suite_cases() -> tuple[list[SuiteCase], list[str], list[str]]:
    """All cases that can be built; notes for groups not installed and for groups that failed to build."""
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


def _tester_name(audit: BlackBoxAudit) -> str:
    return audit.worst.test.algorithm.split(" (")[0].replace("Algorithm", "Alg.") + (
        " (no info)" if "no information" in audit.worst.test.algorithm else " (full info)")


def run_suite(*, rng: RngLike = 0, select: str | None = None) -> SuiteReport:
    """Run every audit of the suite (or those whose mechanism name contains ``select``).

    Parameters
    ----------
    rng : Generator, int or None
        Seed of the whole suite (default 0: the reported table is reproducible).
    select : str, optional
        Case-insensitive substring of the mechanism names to run.

    Returns
    -------
    SuiteReport
        One row per audit; ``passed`` iff shipped mechanisms are accepted and broken ones rejected.
    """
    gen = as_generator(rng)
    seed = int(rng) if isinstance(rng, int | np.integer) else -1
    cases, missing, errors = suite_cases()
    if select is not None:
        cases = [c for c in cases if select.lower() in c.mechanism.lower()]
    rows = []
    start = time.perf_counter()
    for case in cases:
        t0 = time.perf_counter()
        try:
            audit = case.run(gen)
        except DpcloakError as exc:  # the mechanism itself failed while being queried
            rows.append(SuiteRow(case.mechanism, case.claim, "-", case.expected, "ERROR", 0,
                                 time.perf_counter() - t0, "-", str(exc)))
            continue
        rows.append(SuiteRow(case.mechanism, case.claim, _tester_name(audit), case.expected, audit.verdict,
                             audit.queries, time.perf_counter() - t0, _detects(audit), audit.worst.test.reason))
    return SuiteReport(tuple(rows), tuple(missing), tuple(errors), seed, time.perf_counter() - start)

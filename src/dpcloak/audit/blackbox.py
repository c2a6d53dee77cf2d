r"""Black-box auditing: test a privacy claim of any callable mechanism from its outputs alone.

:func:`audit_blackbox` takes ``mechanism(database, rng) -> output`` (or, with ``vectorized=True``,
``mechanism(database, rng, size) -> size outputs``), one neighbouring pair ``(d0, d1)`` or several,
and the claimed ``(ε, δ)``, and runs a property tester of :mod:`dpcloak.audit.testers` on the two
output distributions:

* no side information → Algorithm 4 (aDP, no information). With ``δ = 0`` this only tests
  ``δ_ε ≤ 2α``: pure DP cannot be verified from samples (thesis Theorem 10.5);
* ``side_information`` and ``δ > 0`` → Algorithm 5; ``side_information`` and ``δ = 0`` → Algorithm 6.

Next to the tester, two **event tests** look at what binning throws away (:mod:`dpcloak.audit.events`):
exact atoms (repeated output values, compared between the two inputs, together with the bins) and
the low-order mantissa bits of the released doubles. Each selects a distinguishing event on the
pilot and tests ``P_a(E) − e^ε P_b(E) ≤ δ`` on ``event_queries`` fresh outputs per database with a
Hoeffding threshold; with ``claim_scope="idealised"`` (float samplers, whose claims hold for
real-valued noise only) the bit events get the rounding tolerance ``1/2``. The audit's failure
probability is split: ``2/3`` to the tester, ``1/3`` to the four events (union bound).

**What the tester sees is the discretised mechanism.** Outputs are mapped to a real number (the output
itself if scalar; with ``feature`` a user map; otherwise the projection onto the direction
``mean(pilot₁) − mean(pilot₀)`` estimated from a pilot sample) and then to one of ``n`` bins
``(−∞, e₁], (e₁, e₂], …, (e_{n−1}, ∞)`` with user edges or, by default, the quantiles of a pooled
pilot sample. The pilot samples are fresh (not reused by the tester), so the tester's guarantees
hold conditionally on the binning. By post-processing, a mechanism that is ``(ε, δ)``-DP stays so
after any projection and binning, so an honest mechanism is accepted with the stated probability;
but a violation that the projection/binning hides (an event not a union of bins) cannot be seen —
a REJECT is evidence against the claim, an ACCEPT is evidence only about the binned outputs.

:func:`audit_random_pairs` is the random-pair conversion of §10.2 (Algorithm 3, Theorem 10.3) for
random-DP notions: draw neighbouring pairs from a data distribution, test each pair repeatedly,
and accept iff the fraction of rejected pairs is at most ``γ + α/λ``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from dpcloak._rng import RngLike, as_generator
from dpcloak._validation import check_choice, check_int, check_real, check_vector
from dpcloak.audit.events import LOW_BITS, ROUNDING_TOLERANCE, EventCheck, plan_events, run_event_checks
from dpcloak.audit.testers import (
    ACCEPT,
    REJECT,
    TesterResult,
    adp_fi_tester,
    adp_tester,
    pdp_fi_tester,
)
from dpcloak.errors import InvalidParameterError

__all__ = [
    "Binning",
    "PairAudit",
    "BlackBoxAudit",
    "RandomPairAudit",
    "RandomPairPlan",
    "audit_blackbox",
    "audit_random_pairs",
    "random_pair_plan",
]

#: ``mechanism(database, rng)`` → one output; vectorized: ``mechanism(database, rng, size)``.
Mechanism = Callable[..., Any]
#: ``side_information(database, binning)`` → the claimed probability of each bin.
SideInformation = Callable[[Any, "Binning"], ArrayLike]

#: What a claim is stated for: the released doubles, or idealised real-valued noise (float samplers).
CLAIM_SCOPES = ("released", "idealised")
#: Share of the audit's failure probability given to the event tests (the tester gets the rest).
EVENT_SHARE = 1 / 3


@dataclass(frozen=True)
class Binning:
    """How outputs are discretised before testing (part of what is tested).

    Attributes
    ----------
    edges : ndarray
        Increasing interior edges ``e₁ < … < e_{n−1}``; bin ``k`` is ``(e_k, e_{k+1}]`` with
        ``e₀ = −∞`` and ``e_n = +∞``.
    direction : ndarray or None
        Unit vector vector outputs are projected on (``None`` for scalar outputs or a user feature).
    source : str
        ``"user edges"`` or ``"pilot quantiles"``, plus how outputs became scalars.

    Examples
    --------
    How :func:`audit_blackbox` discretised the outputs (pilot quantiles by default):

    >>> def laplace(database, rng, size):
    ...     return database + rng.laplace(0.0, 1.0, size)
    >>> binning = audit_blackbox(laplace, (0.0, 1.0), epsilon=1.0, rng=0, alpha=0.2, vectorized=True,
    ...                          event_queries=0).pairs[0].binning
    >>> isinstance(binning, Binning), binning.n_bins, len(binning.edges)
    (True, 10, 9)
    >>> binning.index(np.array([-100.0, 100.0])).tolist()  # the two unbounded end bins
    [0, 9]
    """

    edges: NDArray[np.float64]
    direction: NDArray[np.float64] | None
    source: str

    @property
    def n_bins(self) -> int:
        """Number of bins ``n``."""
        return int(self.edges.size) + 1

    def index(self, values: ArrayLike) -> NDArray[np.int64]:
        """Bin index in ``[0, n)`` of each scalar value."""
        return np.searchsorted(self.edges, np.asarray(values, dtype=float), side="left").astype(np.int64)


@dataclass(frozen=True)
class PairAudit:
    """The audit of one neighbouring pair.

    Attributes
    ----------
    test : TesterResult
        The property tester on the binned outputs.
    binning : Binning
        How outputs were binned.
    pilot_queries : int
        Calls used to choose the binning and the events (both databases).
    events : tuple of EventCheck
        The atom and low-bit event tests (empty when ``event_queries = 0``).
    event_queries : int
        Fresh calls per database used by the event tests.

    Examples
    --------
    >>> def laplace(database, rng, size):
    ...     return database + rng.laplace(0.0, 1.0, size)
    >>> pair = audit_blackbox(laplace, (0.0, 1.0), epsilon=1.0, rng=0, alpha=0.2, vectorized=True,
    ...                       event_queries=0).pairs[0]
    >>> isinstance(pair, PairAudit), pair.accepted, pair.test.algorithm, pair.events
    (True, True, 'Algorithm 4 (aDP, no information)', ())
    """

    test: TesterResult
    binning: Binning
    pilot_queries: int
    events: tuple[EventCheck, ...] = ()
    event_queries: int = 0

    @property
    def accepted(self) -> bool:
        """The tester and every event test accepted."""
        return self.test.accepted and all(e.accepted for e in self.events)

    @property
    def queries(self) -> int:
        """All calls of the mechanism for this pair."""
        return self.pilot_queries + sum(self.test.queries) + 2 * self.event_queries

    @property
    def reason(self) -> str:
        """The first rejecting check's reason, else the tester's."""
        rejected = [e.reason for e in self.events if not e.accepted]
        return rejected[0] if rejected and self.test.accepted else self.test.reason


@dataclass(frozen=True)
class BlackBoxAudit:
    """Result of :func:`audit_blackbox`.

    Attributes
    ----------
    verdict : {"ACCEPT", "REJECT"}
        REJECT iff, for some pair, the tester or one of the event tests (atoms, mantissa bits, grid
        residues, coordinate spread) rejected.
    epsilon, delta : float
        The claim tested.
    pairs : tuple of PairAudit
        One entry per neighbouring pair, with the evidence (statistic, threshold, queries, proximity).
    queries : int
        Total calls of the mechanism (pilot samples included).
    notes : str
        What the verdict does and does not establish (tester used, pure-DP caveat, what the event
        tests detect at their query budget and how the low bits were read).

    Examples
    --------
    >>> def laplace(database, rng, size):
    ...     return database + rng.laplace(0.0, 1.0, size)
    >>> audit = audit_blackbox(laplace, (0.0, 1.0), epsilon=1.0, rng=0, alpha=0.2, vectorized=True)
    >>> isinstance(audit, BlackBoxAudit), audit.verdict, audit.accepted, len(audit.pairs)
    (True, 'ACCEPT', True, 1)
    >>> audit.queries == sum(pair.queries for pair in audit.pairs)
    True

    Several pairs: the audit rejects when one pair does, and names the worst:

    >>> refuted = audit_blackbox(laplace, [(0.0, 1.0), (0.0, 0.5)], epsilon=0.1, rng=0, alpha=0.2, vectorized=True)
    >>> refuted.verdict, len(refuted.pairs), refuted.worst.accepted
    ('REJECT', 2, False)
    >>> refuted.worst.reason.startswith("z = ")  # the tester's statistic against its threshold
    True
    """

    verdict: str
    epsilon: float
    delta: float
    pairs: tuple[PairAudit, ...]
    queries: int
    notes: str

    @property
    def accepted(self) -> bool:
        """``True`` when the verdict is ACCEPT."""
        return self.verdict == ACCEPT

    @property
    def worst(self) -> PairAudit:
        """The first rejected pair, else the pair whose tester statistic is closest to its threshold."""
        rejected = [p for p in self.pairs if not p.accepted]
        return rejected[0] if rejected else max(self.pairs, key=lambda p: p.test.statistic - p.test.threshold)


@dataclass(frozen=True)
class RandomPairAudit:
    """Result of :func:`audit_random_pairs` (thesis Algorithm 3).

    Attributes
    ----------
    verdict : {"ACCEPT", "REJECT"}
        ACCEPT iff ``fraction_rejected ≤ threshold``.
    fraction_rejected : float
        ``y``: fraction of sampled pairs whose majority vote was REJECT.
    threshold : float
        ``γ + α/λ``.
    n_pairs, repeats : int
        Pairs sampled and tests per pair (majority vote).
    queries : int
        Total calls of the mechanism.
    proximity : float
        ``2α`` in the random-DP metric ``min{|δ_ε − δ'_ε|, λ|γ − γ'|}`` (Theorem 10.3).

    Examples
    --------
    Returned by :func:`audit_random_pairs`:

    >>> def laplace(database, rng, size):
    ...     return database + rng.laplace(0.0, 1.0, size)
    >>> audit = audit_random_pairs(laplace, lambda rng: (0.0, rng.uniform(-1.0, 1.0)), epsilon=1.0, delta=0.0,
    ...                            gamma=0.1, alpha=0.2, n_pairs=3, repeats=3, rng=0, vectorized=True,
    ...                            event_queries=0)
    >>> isinstance(audit, RandomPairAudit), audit.n_pairs, audit.repeats
    (True, 3, 3)
    """

    verdict: str
    fraction_rejected: float
    threshold: float
    n_pairs: int
    repeats: int
    queries: int
    proximity: float


# --------------------------------------------------------------------------------------------------
# sampling and binning


def _draw(mechanism: Mechanism, database: Any, size: int, rng: np.random.Generator, vectorized: bool) -> NDArray[Any]:
    if vectorized:
        out = np.asarray(mechanism(database, rng, size))
        if out.shape[:1] != (size,):
            raise InvalidParameterError(
                f"a vectorized mechanism asked for {size} outputs returned an array of shape {out.shape}",
                parameter="mechanism", got=tuple(out.shape)
            )
    else:
        out = np.asarray([mechanism(database, rng) for _ in range(size)])
    try:
        values = out.reshape(size, -1).astype(float)
    except (TypeError, ValueError):
        raise InvalidParameterError("mechanism outputs must be numbers or arrays of numbers",
                                    parameter="mechanism") from None
    if not np.all(np.isfinite(values)):
        raise InvalidParameterError("mechanism outputs must be finite", parameter="mechanism")
    return values


class _Scalarizer:
    """Maps raw outputs (rows) to one real number each: identity, user feature or projection."""

    def __init__(self, feature: Callable[[NDArray[Any]], ArrayLike] | None, direction: NDArray[np.float64] | None):
        self.feature = feature
        self.direction = direction

    def __call__(self, values: NDArray[Any]) -> NDArray[np.float64]:
        if self.feature is not None:
            z = np.asarray(self.feature(values), dtype=float).reshape(-1)
            if z.shape != (values.shape[0],):
                raise InvalidParameterError(
                    f"feature must map {values.shape[0]} outputs to {values.shape[0]} numbers, got shape {z.shape}",
                    parameter="feature", got=tuple(z.shape)
                )
            return z
        if values.shape[1] == 1:
            return values[:, 0]
        if self.direction is None or self.direction.size != values.shape[1]:
            raise InvalidParameterError("vector outputs changed dimension between queries", parameter="vector")
        return values @ self.direction


def _plan_binning(
    pilot0: NDArray[Any], pilot1: NDArray[Any], *, bins: int | ArrayLike,
    feature: Callable[[NDArray[Any]], ArrayLike] | None,
) -> tuple[Binning, _Scalarizer]:
    direction: NDArray[np.float64] | None = None
    how = "scalar outputs"
    if feature is not None:
        how = "user feature"
    elif pilot0.shape[1] > 1:
        diff = pilot1.mean(axis=0) - pilot0.mean(axis=0)
        norm = float(np.linalg.norm(diff))
        direction = diff / norm if norm > 0 else np.eye(pilot0.shape[1])[0]
        how = "projection on the pilot mean difference"
    scal = _Scalarizer(feature, direction)
    if isinstance(bins, int | np.integer) and not isinstance(bins, bool):
        k = check_int("bins", bins, minimum=1)
        pooled = np.concatenate([scal(pilot0), scal(pilot1)])
        edges = np.unique(np.quantile(pooled, np.arange(1, k) / k)) if k > 1 else np.empty(0)
        edges = edges[edges < pooled.max()]  # an edge at the maximum would only add an empty bin
        return Binning(edges, direction, f"pilot quantiles ({k} requested, {edges.size + 1} distinct); {how}"), scal
    edges = check_vector("bins", bins)
    if np.any(np.diff(edges) <= 0):
        raise InvalidParameterError("bins (interior edges) must be strictly increasing", parameter="bins")
    return Binning(edges, direction, f"user edges; {how}"), scal


def _audit_pair(
    mechanism: Mechanism, d0: Any, d1: Any, *, epsilon: float, delta: float, alpha: float | None,
    budget: float | None, bins: int | ArrayLike, feature: Callable[[NDArray[Any]], ArrayLike] | None, pilot: int,
    side_information: SideInformation | None, vectorized: bool, failure_probability: float,
    event_queries: int, bit_tolerance: float, rng: np.random.Generator,
) -> PairAudit:
    p0 = _draw(mechanism, d0, 2, rng, vectorized)
    p1 = _draw(mechanism, d1, 2, rng, vectorized)
    probe = 2
    user_edges = not isinstance(bins, int | np.integer) or isinstance(bins, bool)
    if event_queries or not user_edges or (feature is None and p0.shape[1] > 1):
        p0 = _draw(mechanism, d0, pilot, rng, vectorized)
        p1 = _draw(mechanism, d1, pilot, rng, vectorized)
        probe += pilot
    binning, scal = _plan_binning(p0, p1, bins=bins, feature=feature)
    n = binning.n_bins
    f_events = EVENT_SHARE * failure_probability if event_queries else 0.0
    f = failure_probability - f_events

    def sampler(database: Any) -> Callable[[int, np.random.Generator], NDArray[np.int64]]:
        def draw(size: int, gen: np.random.Generator) -> NDArray[np.int64]:
            if size == 0:
                return np.empty(0, dtype=np.int64)
            return binning.index(scal(_draw(mechanism, database, size, gen, vectorized)))
        return draw

    s0, s1 = sampler(d0), sampler(d1)
    if side_information is None:
        test = adp_tester(s0, s1, n=n, epsilon=epsilon, delta=delta, alpha=alpha, budget=budget,
                          failure_probability=f, rng=rng)
    else:
        q0 = side_information(d0, binning)
        q1 = side_information(d1, binning)
        if delta > 0:
            test = adp_fi_tester(s0, s1, q0=q0, q1=q1, epsilon=epsilon, delta=delta, alpha=alpha, budget=budget,
                                 failure_probability=f, rng=rng)
        else:
            test = pdp_fi_tester(s0, s1, q0=q0, q1=q1, epsilon=epsilon, alpha=alpha, budget=budget,
                                 failure_probability=f, rng=rng)
    if not event_queries:
        return PairAudit(test, binning, 2 * probe)
    plans = plan_events(p0, p1, epsilon=epsilon, bin_of=lambda rows: binning.index(scal(rows)), n_bins=n,
                        bit_tolerance=bit_tolerance)
    fresh0 = _draw(mechanism, d0, event_queries, rng, vectorized)
    fresh1 = _draw(mechanism, d1, event_queries, rng, vectorized)
    events = run_event_checks(plans, fresh0, fresh1, epsilon=epsilon, delta=delta, failure_probability=f_events)
    return PairAudit(test, binning, 2 * probe, events, event_queries)


def _pairs(neighbours: tuple[Any, Any] | Iterable[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    if isinstance(neighbours, tuple) and len(neighbours) == 2 and not _is_pair(neighbours[0]):
        return [neighbours]
    out = list(neighbours)
    if not out or not all(_is_pair(p) for p in out):
        raise InvalidParameterError("neighbours must be a pair (d0, d1) or a non-empty iterable of such pairs",
                                    parameter="neighbours")
    return out


def _is_pair(obj: Any) -> bool:
    return isinstance(obj, tuple) and len(obj) == 2


def audit_blackbox(
    mechanism: Mechanism,
    neighbours: tuple[Any, Any] | Iterable[tuple[Any, Any]],
    *,
    epsilon: float,
    delta: float = 0.0,
    rng: RngLike = None,
    alpha: float | None = None,
    budget: float | None = None,
    bins: int | ArrayLike = 10,
    feature: Callable[[NDArray[Any]], ArrayLike] | None = None,
    pilot: int = 2000,
    side_information: SideInformation | None = None,
    vectorized: bool = False,
    failure_probability: float = 1 / 3,
    event_queries: int = 50_000,
    claim_scope: str = "released",
) -> BlackBoxAudit:
    r"""Test the claim "``mechanism`` is ``(ε, δ)``-DP" on neighbouring databases, from samples.

    Parameters
    ----------
    mechanism : callable
        ``mechanism(database, rng) -> output`` (a number or an array of numbers); with
        ``vectorized=True``, ``mechanism(database, rng, size)`` returning ``size`` outputs stacked
        along axis 0 (much faster for numpy mechanisms).
    neighbours : (d0, d1) or iterable of (d0, d1)
        Neighbouring databases (any objects the mechanism accepts). An iterable is materialised;
        each pair is tested with failure probability ``failure_probability / #pairs`` (union bound),
        and the audit rejects if any pair is rejected.
    epsilon, delta : float
        The claim: ``ε ≥ 0``, ``δ ∈ [0, 1]``.
    rng : Generator, int or None
        All randomness (pilot, Poissonisation, the mechanism's noise) comes from here.
    alpha, budget : float
        Exactly one (default ``alpha = 0.05``): tester accuracy or expected queries per database.
    bins : int or array_like
        Number of pilot-quantile bins (default 10) or the interior bin edges.
    feature : callable, optional
        Vectorised map from an ``(size, d)`` array of outputs to ``size`` reals. Default: the output
        itself if scalar, else its projection onto the pilot mean difference.
    pilot : int
        Pilot queries per database used to choose the projection and the bins (not used by the test).
    side_information : callable, optional
        ``side_information(database, binning)`` → claimed bin probabilities; selects the
        full-information testers (Algorithm 5 if ``δ > 0``, Algorithm 6 if ``δ = 0``).
    vectorized : bool
        See ``mechanism``.
    failure_probability : float
        Bound on the probability that the audit errs, over all pairs (each pair: 2/3 of its share to
        the tester, 1/3 to the event tests).
    event_queries : int
        Fresh calls per database for the atom and low-bit event tests (:mod:`dpcloak.audit.events`);
        ``0`` runs the tester alone (the notes then say that atoms and bits were not examined).
    claim_scope : {"released", "idealised"}
        ``"released"`` (default): the claim is about the released doubles, bit by bit.
        ``"idealised"``: the claim holds for idealised real-valued noise (dpcloak's float samplers);
        the low-bit events then tolerate the single-bit ``δ_ε ≤ 1/2`` that correct rounding can
        produce, so only a strong input-dependent bias (a secret written into bits) is rejected.

    Returns
    -------
    BlackBoxAudit
        ``verdict``, the per-pair evidence, total queries and a note on what was verified.

    Notes
    -----
    Verifying is as hard as breaking (thesis Theorem 10.2): if ``r`` queries suffice to verify a
    claim, a violation of it can be exploited to distinguish two neighbours with ``r`` queries.
    Strong claims (tiny ``δ``) therefore need infeasibly many queries; choose ``alpha`` of the order
    of the violation you want to catch.

    Examples
    --------
    A Laplace mechanism of scale 1 on databases one apart is 1-DP; claiming ε = 0.1 is refuted:

    >>> def laplace(database, rng, size):
    ...     return database + rng.laplace(0.0, 1.0, size)
    >>> audit_blackbox(laplace, (0.0, 1.0), epsilon=1.0, rng=0, alpha=0.2, vectorized=True).verdict
    'ACCEPT'
    >>> audit_blackbox(laplace, (0.0, 1.0), epsilon=0.1, rng=0, alpha=0.2, vectorized=True).verdict
    'REJECT'
    """
    eps = check_real("epsilon", epsilon, low=0.0, low_inclusive=True)
    dlt = check_real("delta", delta, low=0.0, high=1.0, low_inclusive=True, high_inclusive=True)
    f = check_real("failure_probability", failure_probability, low=0.0, high=0.5)
    pilot = check_int("pilot", pilot, minimum=2)
    m = check_int("event_queries", event_queries, minimum=0)
    scope = check_choice("claim_scope", claim_scope, CLAIM_SCOPES)
    if alpha is None and budget is None:
        alpha = 0.05
    if not callable(mechanism):
        raise InvalidParameterError("mechanism must be callable as mechanism(database, rng)", parameter="mechanism")
    pairs = _pairs(neighbours)
    gen = as_generator(rng)
    results = tuple(
        _audit_pair(mechanism, d0, d1, epsilon=eps, delta=dlt, alpha=alpha, budget=budget, bins=bins,
                    feature=feature, pilot=pilot, side_information=side_information, vectorized=vectorized,
                    failure_probability=f / len(pairs), event_queries=m,
                    bit_tolerance=ROUNDING_TOLERANCE if scope == "idealised" else 0.0, rng=gen)
        for d0, d1 in pairs
    )
    verdict = ACCEPT if all(p.accepted for p in results) else REJECT
    queries = sum(p.queries for p in results)
    return BlackBoxAudit(verdict, eps, dlt, results, queries, _notes(results[0], side_information is None, dlt, scope))


def _notes(pair: PairAudit, no_information: bool, delta: float, scope: str) -> str:
    tester = pair.test.algorithm
    if no_information and delta == 0:
        text = (f"{tester} with delta = 0: only delta_eps <= 2 alpha is tested; pure DP is not verifiable "
                "without side information (thesis Theorem 10.5)")
    else:
        text = f"{tester}; its verdict concerns the binned outputs ({pair.binning.source})"
    if not pair.events:
        return text + "; atoms and low-order bits were not examined (event_queries = 0)"
    check = pair.events[0]
    bits = ("the low bits tolerate the single-bit delta_eps <= 1/2 of float rounding (claim for idealised noise)"
            if scope == "idealised" else "the low bits are held to the claim (released doubles)")
    return (f"{text}; event tests on atoms, the {LOW_BITS} mantissa bits, grid residues (parity) and each "
            f"coordinate's spread with {check.queries:,} fresh outputs per database detect the event each selects "
            f"on the pilot when its delta_eps >= delta + {2 * check.margin:.3g}; {bits}")


# --------------------------------------------------------------------------------------------------
# random pairs (thesis §10.2, Algorithm 3)


@dataclass(frozen=True)
class RandomPairPlan:
    """Sample sizes of Algorithm 3: ``n_pairs`` neighbouring pairs, each tested ``repeats`` times.

    Examples
    --------
    >>> plan = random_pair_plan(gamma=0.1, alpha=0.2)
    >>> isinstance(plan, RandomPairPlan), plan.repeats % 2  # an odd number of votes
    (True, 1)
    """

    n_pairs: int
    repeats: int


def random_pair_plan(*, gamma: float, alpha: float, lam: float = 1.0) -> RandomPairPlan:
    r"""``n_pairs`` and ``repeats`` of Algorithm 3 for ``γ``, proximity ``α`` and weight ``λ``.

    ``n_pairs`` makes Theorem 10.3's Bernstein bound ``exp(−m(α/λ)²/(2(α/(2λ)+γ)² + 2α/λ))`` at most
    1/3; ``repeats`` is the smallest odd ``k`` whose majority vote of 1/3-error tests errs with
    probability ≤ ``α/(2λ)`` (exact binomial tail; the thesis writes ``log(2λ/α)`` up to constants).

    Examples
    --------
    >>> random_pair_plan(gamma=0.1, alpha=0.2)
    RandomPairPlan(n_pairs=14, repeats=15)
    >>> random_pair_plan(gamma=0.1, alpha=0.1).n_pairs > 14  # finer proximity, more pairs
    True
    """
    g = check_real("gamma", gamma, low=0.0, high=1.0, low_inclusive=True)
    a = check_real("alpha", alpha, low=0.0)
    lm = check_real("lam", lam, low=0.0)
    t = a / lm
    n_pairs = math.ceil(math.log(3) * (2 * (t / 2 + g) ** 2 + 2 * t) / t**2)
    target = min(t / 2, 0.5)
    k = 1
    while stats.binom.sf(k // 2, k, 1 / 3) > target:
        k += 2
    return RandomPairPlan(n_pairs, k)


def audit_random_pairs(
    mechanism: Mechanism,
    sample_pair: Callable[[np.random.Generator], tuple[Any, Any]],
    *,
    epsilon: float,
    delta: float,
    gamma: float,
    alpha: float,
    lam: float = 1.0,
    n_pairs: int | None = None,
    repeats: int | None = None,
    rng: RngLike = None,
    bins: int | ArrayLike = 10,
    feature: Callable[[NDArray[Any]], ArrayLike] | None = None,
    pilot: int = 2000,
    vectorized: bool = False,
    event_queries: int = 50_000,
    claim_scope: str = "released",
) -> RandomPairAudit:
    r"""Test ``(ε, δ, γ)``-random approximate DP (thesis Algorithm 3, Theorem 10.3).

    A mechanism is ``(ε, δ, γ)``-random DP if a neighbouring pair drawn from the data distribution
    (``sample_pair(rng) -> (d0, d1)``) is ``(ε, δ)``-DP with probability ≥ ``1 − γ``. For each of
    ``n_pairs`` sampled pairs, Algorithm 4 (through :func:`audit_blackbox`, accuracy ``α/2`` so its
    proximity is ``α``) runs ``repeats`` times; ``x_i`` = majority REJECT; ACCEPT iff
    ``y = mean(x_i) ≤ γ + α/λ``. Defaults for ``n_pairs`` and ``repeats``: :func:`random_pair_plan`.
    ``bins``, ``feature``, ``pilot``, ``vectorized``, ``event_queries`` and ``claim_scope`` are passed
    to each :func:`audit_blackbox`.

    Returns
    -------
    RandomPairAudit
        Proximity ``2α`` in ``min{|δ_ε − δ'_ε|, λ|γ − γ'|}``.

    Examples
    --------
    Pairs drawn from a data distribution, each a Laplace mechanism's neighbours (at most 1 apart):

    >>> def laplace(database, rng, size):
    ...     return database + rng.laplace(0.0, 1.0, size)
    >>> audit = audit_random_pairs(laplace, lambda rng: (0.0, rng.uniform(-1.0, 1.0)), epsilon=1.0, delta=0.0,
    ...                            gamma=0.1, alpha=0.2, n_pairs=3, repeats=3, rng=0, vectorized=True,
    ...                            event_queries=0)
    >>> audit.verdict, audit.fraction_rejected <= audit.threshold
    ('ACCEPT', True)
    """
    g = check_real("gamma", gamma, low=0.0, high=1.0, low_inclusive=True)
    a = check_real("alpha", alpha, low=0.0)
    lm = check_real("lam", lam, low=0.0)
    plan = random_pair_plan(gamma=g, alpha=a, lam=lm)
    m = plan.n_pairs if n_pairs is None else check_int("n_pairs", n_pairs, minimum=1)
    k = plan.repeats if repeats is None else check_int("repeats", repeats, minimum=1)
    gen = as_generator(rng)
    votes = []
    queries = 0
    for _ in range(m):
        d0, d1 = sample_pair(gen)
        rejections = 0
        for _ in range(k):
            res = audit_blackbox(mechanism, [(d0, d1)], epsilon=epsilon, delta=delta, rng=gen, alpha=a / 2, bins=bins,
                                 feature=feature, pilot=pilot, vectorized=vectorized, event_queries=event_queries,
                                 claim_scope=claim_scope)
            rejections += not res.accepted
            queries += res.queries
        votes.append(2 * rejections > k)
    y = float(np.mean(votes))
    threshold = g + a / lm
    return RandomPairAudit(ACCEPT if y <= threshold else REJECT, y, threshold, m, k, queries, 2 * a)

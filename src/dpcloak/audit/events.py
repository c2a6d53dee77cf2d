r"""Event tests on what binning throws away: atoms, mantissa bits, grid residues and each coordinate's spread.

The property testers of :mod:`dpcloak.audit.testers` see a mechanism through a binning of its outputs
(for vectors, of their projection on the pilot mean difference), which discards what an attacker
reads directly (reviews of issues 12 and 28; Mironov 2012):

* **atoms** — exact output values that occur with positive probability. A continuous mechanism
  repeats a double with probability ≈ 0 (two draws of a density collide on one of ~2⁶² doubles), a
  grid mechanism repeats grid points under *both* inputs; a mechanism that releases its input
  exactly with probability ``p`` puts an atom of mass ``p`` on a value the neighbour never outputs;
* **mantissa bits** — a secret written into any of the 52 mantissa bits of a correct output (bit 0
  or bit 9 alike) leaves every bin's mass unchanged;
* **grid residues** — ``round(x/s) mod M`` for the smallest spacing ``s`` between pilot values and
  ``M ∈`` :data:`RESIDUE_MODULI`: a data-dependent rounding that makes the grid index's parity
  follow the input (``δ_ε = 1``) moves no bin and no atom heavy enough to be located;
* **coordinate spread** — ``|x_c − median_c| > q`` (or ``≤ q``) for pooled pilot quantiles ``q`` of
  each coordinate: a coordinate whose noise scale, not its mean, depends on the input (×3 in one
  coordinate: ``δ_ε = 0.43``) is invisible to a projection on the mean difference.

All are tested the same way, by a *distinguishing event* chosen on a pilot sample and tested on a
fresh one (the selection-then-test scheme of Ding et al., "Detecting violations of differential
privacy", CCS 2018):

1. **Selection (pilot).** From ``m₀`` pilot outputs per database choose, for each family and each
   order ``(a, b) ∈ {(0, 1), (1, 0)}``, the event ``E`` maximising the pilot estimate of
   ``P_a(E) − e^ε P_b(E)``:

   * *atoms and bins*: the cells are the exact values (whole output rows) seen at least
     :data:`MIN_ATOM_COUNT` times in the pooled pilot, each its own cell, and the harness's bins for
     every other output; ``E = {cells c : n_a(c) > e^ε n_b(c)}`` (the maximiser of eq. 10.1 on the
     pilot counts). The minimum count keeps a grid mechanism's many light grid points (seen once or
     twice, their ratio pure noise) in the bins: selected one by one they would fill ``E`` with cells
     whose true ``P_a − e^ε P_b`` is negative and drown a real atom;
   * *low bits*: ``E = {bit j of coordinate c equals v}`` for the bit ``j <`` :data:`LOW_BITS`
     (0 = the lowest mantissa bit), coordinate and value ``v ∈ {0, 1}`` with the largest estimate;
   * *grid residues*: ``E = {round(x_c/s_c) mod M = r}``, the coordinate, modulus and residue with
     the largest estimate;
   * *coordinate scale*: ``E = {|x_c − median_c| > q}`` or its complement, the coordinate,
     quantile :data:`SCALE_QUANTILES` and side with the largest estimate.

2. **Test (fresh sample).** With ``m`` fresh outputs per database,
   ``D̂ = P̂_a(E) − e^ε P̂_b(E)`` is a mean of independent terms in ``[0, 1/m]`` and
   ``[−e^ε/m, 0]``; Hoeffding's inequality gives

   .. math:: \Pr[\hat D - D \ge t] \le \exp\!\Big(-\frac{2 m t^2}{1 + e^{2\epsilon}}\Big),
             \qquad t = \sqrt{\frac{(1+e^{2\epsilon})\ln(1/f_E)}{2m}}

   (:func:`event_margin`, ``f_E`` the failure probability of one event). REJECT iff
   ``D̂ ≥ δ + τ + t``.

**Completeness.** An ``(ε, δ)``-DP mechanism has ``P_a(E) − e^ε P_b(E) ≤ δ`` for *every* event,
including one chosen from an independent pilot; so it is rejected with probability ``≤ f_E`` per
event tested, whatever its output space (grid mechanisms included: their atoms are compared, not
forbidden). **Soundness.** If the selected event has ``D ≥ δ + τ + 2t`` the test rejects with
probability ``≥ 1 − f_E`` — a guarantee about the event the pilot found, not about every event.
**Not guaranteed:** an atom lighter than about ``MIN_ATOM_COUNT/(2m₀)`` is not located; a leak
spread over many bits, values or residues, one only visible in a joint event of several coordinates,
a residue modulo another number or of another spacing than the pilot's smallest, or a change of
shape that keeps every tested spread quantile is not selected (a pilot too small to show the leak
selects a useless event); an ACCEPT is evidence at the stated size, not a proof.
The smallest excess detectable with ``m`` queries is ``2t`` (:func:`event_margin`), so a claim
``δ = 10⁻⁵`` needs ``m ≈ 2(1+e^{2ε})\ln(1/f_E)/δ²`` ≈ 10¹¹ queries (:func:`event_queries_needed`).

**Float mechanisms (tolerance τ).** The float samplers' claims hold for idealised real-valued
noise only. What they release, ``fl(x + W)``, is not the idealised value: round-half-even on an
exponent carry and exact cancellation (Sterbenz) force low bits to 0 under one input while they stay
fair under the other. Measured with numpy, inputs 0 vs 1, one bit event: the Gaussian at (0.5, 0.05)
gives ``P₀(lsb = 1) = 0.50`` against ``P₁(lsb = 1) = 0.23`` — a single-bit ``δ_ε ≈ 0.12`` above the
claimed 0.05, so the *released doubles* are not (0.5, 0.05)-DP, and the strict test (``τ = 0``,
``claim_scope="released"``) says so. For a claim stated for idealised noise the bit events get
``τ =`` :data:`ROUNDING_TOLERANCE` ``= 1/2``. The argument: rounding forces low bits to 0, never to 1,
so when the noise's own low bits are near fair, ``P(bit = 1) ≲ 1/2`` and ``P(bit = 0) ≳ 1/2`` under
either input; then ``P_a(bit = 1) − e^ε P_b(bit = 1) ≲ 1/2`` and
``P_a(bit = 0) − e^ε P_b(bit = 0) ≲ 1 − 1/2``. It is an argument about correct rounding of noise with
fair low bits, not a theorem about every sampler; measured (2·10⁶ outputs per input, inputs 0 vs 1),
the largest single-bit ``δ_ε`` of dpcloak's float Gaussian (δ = 0.05) and Laplace samplers for
``ε ∈ [0.05, 1]`` is 0.17. A secret written deterministically into a bit has ``δ_ε = 1`` and is
rejected whenever ``δ + 1/2 + 2t ≤ 1``. The trade-off: a bit that carries the input with a bias
below one half is invisible to an audit of an idealised claim (the strict scope sees it).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dpcloak._validation import check_int, check_real
from dpcloak.audit.testers import ACCEPT, REJECT

__all__ = [
    "LOW_BITS",
    "MIN_ATOM_COUNT",
    "ROUNDING_TOLERANCE",
    "RESIDUE_MODULI",
    "SCALE_QUANTILES",
    "EventCheck",
    "event_margin",
    "event_queries_needed",
]

#: Mantissa bits examined by the bit test (bit 0 is the least significant): all 52 of a double's.
LOW_BITS = 52
#: Moduli of the grid-residue test: ``round(x / step) mod M`` for the grid step seen on the pilot.
RESIDUE_MODULI = (2, 3, 4, 8)
#: Pooled-pilot quantiles of ``|x − median|`` that the per-coordinate scale test uses as thresholds.
SCALE_QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9, 0.99)
#: Pooled pilot count from which an exact output value becomes its own cell (an atom).
MIN_ATOM_COUNT = 10
#: Single-bit δ_ε that correct rounding of ``x + W`` can produce (see the module docstring).
ROUNDING_TOLERANCE = 0.5
#: The event families, in the order they are planned and reported.
FAMILIES = ("atoms and bins", "low bits", "grid residues", "coordinate scale")

#: Membership of each output row (``(size, d)`` float array) in an event.
Membership = Callable[[NDArray[np.float64]], NDArray[np.bool_]]


@dataclass(frozen=True)
class EventPlan:
    """One event selected on the pilot, to be tested on fresh outputs.

    Attributes
    ----------
    family : str
        ``"atoms and bins"`` or ``"low bits"``.
    order : tuple of int
        ``(a, b)``: the test is of ``P_a(E) − e^ε P_b(E)``.
    event : str
        Human description of ``E``.
    member : callable
        ``member(rows) -> bool array``: which outputs lie in ``E``.
    tolerance : float
        ``τ`` added to ``δ`` in the threshold (0, or :data:`ROUNDING_TOLERANCE` for the bits of an
        idealised claim).
    """

    family: str
    order: tuple[int, int]
    event: str
    member: Membership
    tolerance: float


@dataclass(frozen=True)
class EventCheck:
    """Result of testing one selected event on fresh outputs.

    Attributes
    ----------
    family, event : str
        Which family and which event (see :class:`EventPlan`).
    order : tuple of int
        ``(a, b)`` of ``D = P_a(E) − e^ε P_b(E)``.
    statistic : float
        ``D̂`` on the fresh outputs.
    threshold : float
        ``δ + τ + t``; REJECT iff ``statistic ≥ threshold``.
    tolerance, margin : float
        ``τ`` and the Hoeffding margin ``t``.
    detects : float
        ``δ + τ + 2t``: an event this far from the claim is rejected with probability ``≥ 1 − f_E``.
    queries : int
        Fresh outputs per database.
    failure_probability : float
        ``f_E`` of this event.
    verdict, reason : str
        The answer and one sentence with the numbers behind it.

    Examples
    --------
    The atom and low-bit tests of :func:`~dpcloak.audit.audit_blackbox` (``event_queries > 0``):

    >>> from dpcloak.audit import audit_blackbox
    >>> def laplace(database, rng, size):
    ...     return database + rng.laplace(0.0, 1.0, size)
    >>> audit = audit_blackbox(laplace, (0.0, 1.0), epsilon=1.0, rng=0, alpha=0.2, vectorized=True,
    ...                        event_queries=2000)
    >>> check = audit.pairs[0].events[0]
    >>> isinstance(check, EventCheck), check.queries, check.accepted
    (True, 2000, True)
    """

    family: str
    event: str
    order: tuple[int, int]
    statistic: float
    threshold: float
    tolerance: float
    margin: float
    detects: float
    queries: int
    failure_probability: float
    verdict: str
    reason: str

    @property
    def accepted(self) -> bool:
        """``True`` when the verdict is ACCEPT."""
        return self.verdict == ACCEPT


def event_margin(*, queries: int, epsilon: float, failure_probability: float) -> float:
    r"""Hoeffding margin ``t = √((1+e^{2ε}) ln(1/f) / (2m))`` of one event test with ``m`` queries per database.

    ``D̂ ≥ D + t`` has probability ``≤ f``; the test detects excesses ``≥ 2t`` over ``δ + τ``.

    Examples
    --------
    ``√(2 ln 20 / 20000)`` at ``ε = 0``:

    >>> round(event_margin(queries=10_000, epsilon=0.0, failure_probability=0.05), 6)
    0.017308
    """
    m = check_int("queries", queries, minimum=1)
    eps = check_real("epsilon", epsilon, low=0.0, low_inclusive=True)
    f = check_real("failure_probability", failure_probability, low=0.0, high=1.0)
    return math.sqrt((1.0 + math.exp(2 * eps)) * math.log(1 / f) / (2 * m))


def event_queries_needed(*, excess: float, epsilon: float, failure_probability: float) -> int:
    r"""Fresh queries per database for an event test to detect ``D ≥ δ + τ + excess``.

    The smallest ``m`` with ``2t ≤ excess`` (:func:`event_margin`): ``⌈2(1+e^{2ε}) ln(1/f) / excess²⌉``.

    Examples
    --------
    The smallest ``m`` whose margin is at most half the excess:

    >>> m = event_queries_needed(excess=0.05, epsilon=0.0, failure_probability=0.05)
    >>> m, 2 * event_margin(queries=m, epsilon=0.0, failure_probability=0.05) <= 0.05
    (4794, True)
    """
    x = check_real("excess", excess, low=0.0)
    eps = check_real("epsilon", epsilon, low=0.0, low_inclusive=True)
    f = check_real("failure_probability", failure_probability, low=0.0, high=1.0)
    return math.ceil(2 * (1.0 + math.exp(2 * eps)) * math.log(1 / f) / x**2)


# --------------------------------------------------------------------------------------------------
# selection on the pilot


def _row_keys(rows: NDArray[np.float64]) -> NDArray[np.void]:
    """Exact identity of each output row (its bytes: −0.0 and 0.0 differ, as released)."""
    contiguous = np.ascontiguousarray(rows, dtype=np.float64)
    return contiguous.view(np.dtype((np.void, 8 * rows.shape[1]))).ravel()


def _describe_atoms(atoms: NDArray[np.void]) -> str:
    """``"k exact values (e.g. …)"``, listing up to three when outputs are scalars."""
    text = f"{atoms.size} exact values"
    if atoms.size and atoms.dtype.itemsize == 8:
        shown = np.frombuffer(atoms[:3].tobytes(), dtype=np.float64)
        text += " (e.g. " + ", ".join(f"{v:.17g}" for v in shown) + ("…)" if atoms.size > 3 else ")")
    return text


def _atom_plans(
    pilot: tuple[NDArray[np.float64], NDArray[np.float64]], factor: float, bin_of: Callable[[NDArray[np.float64]],
                                                                                           NDArray[np.int64]],
    n_bins: int,
) -> list[EventPlan]:
    keys = [_row_keys(p) for p in pilot]
    values, counts = np.unique(np.concatenate(keys), return_counts=True)
    atoms = values[counts >= MIN_ATOM_COUNT]

    def cell(rows: NDArray[np.float64]) -> NDArray[np.int64]:
        k = _row_keys(rows)
        pos = np.minimum(np.searchsorted(atoms, k), max(atoms.size - 1, 0))
        is_atom = atoms[pos] == k if atoms.size else np.zeros(k.size, dtype=bool)
        return np.where(is_atom, pos, atoms.size + bin_of(rows))

    n_cells = atoms.size + n_bins
    n = [np.bincount(cell(p), minlength=n_cells) / p.shape[0] for p in pilot]
    plans = []
    for a, b in ((0, 1), (1, 0)):
        chosen = n[a] > factor * n[b]
        atom_in = chosen[: atoms.size]
        text = f"{_describe_atoms(atoms[atom_in])} and {int(chosen[atoms.size:].sum())} of {n_bins} bins"

        def member(rows: NDArray[np.float64], chosen: NDArray[np.bool_] = chosen) -> NDArray[np.bool_]:
            return chosen[cell(rows)]

        plans.append(EventPlan(FAMILIES[0], (a, b), text, member, 0.0))
    return plans


def _bits(rows: NDArray[np.float64]) -> NDArray[np.uint8]:
    """``(size, d, LOW_BITS)`` array of the mantissa bits of every coordinate (bit 0 the lowest)."""
    raw = np.ascontiguousarray(rows, dtype=np.float64).view(np.uint64)
    shifts = np.arange(LOW_BITS, dtype=np.uint64)
    return ((raw[:, :, None] >> shifts) & np.uint64(1)).astype(np.uint8)


def _best_plans(
    family: str, gains: list[NDArray[np.float64]], describe: Callable[[tuple[int, ...]], str],
    member_of: Callable[[tuple[int, ...]], Membership], tolerance: float = 0.0,
) -> list[EventPlan]:
    """For each order, the candidate event (an index into ``gains[order]``) with the largest pilot gain."""
    plans = []
    for (a, b), gain in zip(((0, 1), (1, 0)), gains, strict=True):
        best = tuple(int(i) for i in np.unravel_index(int(np.argmax(gain)), gain.shape))
        plans.append(EventPlan(family, (a, b), describe(best), member_of(best), tolerance))
    return plans


def _grid_steps(pooled: NDArray[np.float64]) -> NDArray[np.float64]:
    """Per coordinate, the smallest positive gap between distinct pilot values: the grid step of a lattice output."""
    steps = np.full(pooled.shape[1], np.nan)
    for c in range(pooled.shape[1]):
        gaps = np.diff(np.unique(pooled[:, c]))
        gaps = gaps[gaps > 0]
        if gaps.size and float(np.max(np.abs(pooled[:, c]))) < 2.0**52 * float(gaps.min()):
            steps[c] = gaps.min()  # indices stay exact integers
    return steps


def _residue_plans(pilot: tuple[NDArray[np.float64], NDArray[np.float64]], factor: float) -> list[EventPlan]:
    """``round(x_c / step_c) mod M = r``: a parity or residue a data-dependent rounding leaves in grid outputs."""
    steps = _grid_steps(np.concatenate(pilot))
    usable = np.flatnonzero(np.isfinite(steps))
    top = max(RESIDUE_MODULI)

    def residues(rows: NDArray[np.float64], c: int, modulus: int) -> NDArray[np.int64]:
        return np.asarray(np.rint(rows[:, c] / steps[c]).astype(np.int64) % modulus)

    # share[o][k, c, r]: pilot share of residue r modulo RESIDUE_MODULI[k] in coordinate usable[c]
    shape = (len(RESIDUE_MODULI), max(usable.size, 1), top)
    share = [np.zeros(shape) for _ in pilot]
    possible = np.zeros(shape, dtype=bool)
    for k, modulus in enumerate(RESIDUE_MODULI):
        possible[k, : usable.size, :modulus] = True
        for o, rows in enumerate(pilot):
            for ci, c in enumerate(usable):
                share[o][k, ci, :modulus] = np.bincount(residues(rows, int(c), modulus), minlength=modulus) / len(rows)
    gains = [np.where(possible, share[a] - factor * share[b], -np.inf) for a, b in ((0, 1), (1, 0))]

    def describe(i: tuple[int, ...]) -> str:
        k, ci, r = i
        c = int(usable[ci]) if usable.size else 0
        return f"round(x / {steps[c]:.6g}) mod {RESIDUE_MODULI[k]} = {r} in coordinate {c}"

    def member_of(i: tuple[int, ...]) -> Membership:
        k, ci, r = i
        if not usable.size:
            return lambda rows: np.zeros(len(rows), dtype=bool)
        c = int(usable[ci])
        return lambda rows: residues(rows, c, RESIDUE_MODULI[k]) == r

    return _best_plans(FAMILIES[2], gains, describe, member_of)


def _scale_plans(pilot: tuple[NDArray[np.float64], NDArray[np.float64]], factor: float) -> list[EventPlan]:
    """``|x_c − median_c| > q`` or ``≤ q``: a coordinate whose spread, not its mean, depends on the input."""
    pooled = np.concatenate(pilot)
    centre = np.median(pooled, axis=0)
    cuts = np.quantile(np.abs(pooled - centre), SCALE_QUANTILES, axis=0)  # (quantiles, d)
    far = [(np.abs(p - centre)[None, :, :] > cuts[:, None, :]).mean(axis=1) for p in pilot]  # (quantiles, d)
    share = [np.stack([f, 1.0 - f]) for f in far]  # (outside/inside, quantiles, d)
    gains = [share[a] - factor * share[b] for a, b in ((0, 1), (1, 0))]

    def describe(i: tuple[int, ...]) -> str:
        side, q, c = i
        return f"|x − {centre[c]:.6g}| {'>' if side == 0 else '<='} {cuts[q, c]:.6g} in coordinate {c}"

    def member_of(i: tuple[int, ...]) -> Membership:
        side, q, c = i
        return lambda rows: (np.abs(rows[:, c] - centre[c]) > cuts[q, c]) == (side == 0)

    return _best_plans(FAMILIES[3], gains, describe, member_of)


def _bit_plans(
    pilot: tuple[NDArray[np.float64], NDArray[np.float64]], factor: float, tolerance: float
) -> list[EventPlan]:
    ones = [_bits(p).mean(axis=0) for p in pilot]  # P(bit = 1) per (coordinate, bit)
    plans = []
    for a, b in ((0, 1), (1, 0)):
        # D for the event "bit = 1" and for "bit = 0", per (coordinate, bit)
        gain = np.stack([ones[a] - factor * ones[b], (1 - ones[a]) - factor * (1 - ones[b])])
        value_is_zero, coord, bit = np.unravel_index(int(np.argmax(gain)), gain.shape)
        value = 0 if value_is_zero else 1
        text = f"bit {bit} (0 = lowest mantissa bit) of coordinate {coord} is {value}"

        def member(
            rows: NDArray[np.float64], c: int = int(coord), j: int = int(bit), v: int = value
        ) -> NDArray[np.bool_]:
            return _bits(rows[:, c : c + 1])[:, 0, j] == v

        plans.append(EventPlan(FAMILIES[1], (a, b), text, member, tolerance))
    return plans


def plan_events(
    pilot0: NDArray[np.float64],
    pilot1: NDArray[np.float64],
    *,
    epsilon: float,
    bin_of: Callable[[NDArray[np.float64]], NDArray[np.int64]],
    n_bins: int,
    bit_tolerance: float,
) -> list[EventPlan]:
    """Select, on pilot outputs ``(size, d)`` of the two databases, the four events to test.

    Parameters
    ----------
    pilot0, pilot1 : ndarray, shape (size, d)
        Pilot outputs (not reused by the test).
    epsilon : float
        The claimed ``ε`` (selection maximises ``P_a(E) − e^ε P_b(E)``).
    bin_of : callable
        The harness's bin index of output rows (cells for outputs that are not atoms).
    n_bins : int
        Number of bins ``bin_of`` maps to.
    bit_tolerance : float
        ``τ`` of the low-bit events (0 for a claim about the released values).

    Returns
    -------
    list of EventPlan
        Atoms and bins, mantissa bits, grid residues and coordinate scale, each in both orders.
    """
    factor = math.exp(epsilon)
    pilot = (pilot0, pilot1)
    return (_atom_plans(pilot, factor, bin_of, n_bins) + _bit_plans(pilot, factor, bit_tolerance)
            + _residue_plans(pilot, factor) + _scale_plans(pilot, factor))


def run_event_checks(
    plans: list[EventPlan],
    fresh0: NDArray[np.float64],
    fresh1: NDArray[np.float64],
    *,
    epsilon: float,
    delta: float,
    failure_probability: float,
) -> tuple[EventCheck, ...]:
    """Test every planned event on fresh outputs (``m`` rows per database), failure split evenly (union bound)."""
    m = fresh0.shape[0]
    f = failure_probability / len(plans)
    t = event_margin(queries=m, epsilon=epsilon, failure_probability=f)
    factor = math.exp(epsilon)
    fresh = (fresh0, fresh1)
    checks = []
    for plan in plans:
        a, b = plan.order
        pa, pb = float(plan.member(fresh[a]).mean()), float(plan.member(fresh[b]).mean())
        stat = pa - factor * pb
        threshold = delta + plan.tolerance + t
        verdict = REJECT if stat >= threshold else ACCEPT
        tol = f" + τ {plan.tolerance:g}" if plan.tolerance else ""
        reason = (f"{plan.family}: P{a}(E) − e^ε P{b}(E) = {pa:.4g} − {factor:.4g}·{pb:.4g} = {stat:.3g} "
                  f"{'>=' if verdict == REJECT else '<'} δ{tol} + t = {threshold:.3g}, E = {plan.event}")
        checks.append(EventCheck(plan.family, plan.event, plan.order, stat, threshold, plan.tolerance, t,
                                 delta + plan.tolerance + 2 * t, m, f, verdict, reason))
    return tuple(checks)

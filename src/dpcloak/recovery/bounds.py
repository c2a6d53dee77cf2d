"""EMD error bounds for basis pursuit denoising with the 1-D heat kernel (seeds 000 and 002).

Every function returns a :class:`dpcloak.bound.Bound`. The papers state these results with
``O(·)`` / ``Ω(·)``: the hidden constants are **not specified** (Gilbert & McMillan Appendices B–C only bound
them by further ``Ω``'s), so each ``value`` is the bracketed expression with constant 1 — the
*shape* of the bound, good for comparing trends against experiments, not a certified number. Each
``reason`` says so. Assumptions are checked at the given parameters; when one fails the bound has
``applies=False``, ``value=nan`` and the ``reason`` names the failed assumption.

Notation: ``T = μ t``; ``k`` sources of unit intensity; ``A > 0`` the separation margin of
assumption 3 (``|x_i − x_j| > √(2T) + 2A``); ``separation`` the smallest distance between two true
sources (``None`` for one source).
"""

from __future__ import annotations

import math

from dpcloak._validation import check_int, check_probability, check_real
from dpcloak.bound import Bound

__all__ = ["theorem8_bound", "corollary9_bound", "theorem10_lower_bound", "theorem86_bound", "THEOREM10_CONSTANT"]

_UNSPECIFIED = "O(·) constant not specified by the paper; value is the bracket with constant 1"


def _common(m: int, t: float, mu: float, k: int, A: float, separation: float | None) -> tuple[float, list[str]]:
    """``T`` and the failed assumptions among 1–3 of Gilbert & McMillan Theorem 8."""
    T = mu * t
    failed = []
    if not m * math.sqrt(T / 2.0) > 1.0:
        failed.append(f"assumption 1 (m·√(T/2) > 1) fails: m·√(T/2) = {m * math.sqrt(T / 2.0):.4g}")
    if not math.sqrt(2.0 * T) < 1.0:
        failed.append(f"assumption 2 (√(2T) < 1) fails: √(2T) = {math.sqrt(2.0 * T):.4g}")
    if k > 1 and separation is not None and not separation > math.sqrt(2.0 * T) + 2.0 * A:
        need = math.sqrt(2 * T) + 2 * A
        failed.append(f"assumption 3 (|x_i − x_j| > √(2T) + 2A) fails: separation {separation:.4g} ≤ {need:.4g}")
    if k > 1 and separation is None:
        failed.append("assumption 3 cannot be checked: give the smallest distance between sources (separation)")
    return T, failed


def _validate(m: int, t: float, mu: float, k: int, A: float, separation: float | None) -> tuple[int, float, float, int,
                                                                                                 float, float | None]:
    m = check_int("m", m, minimum=1)
    t = check_real("t", t, low=0.0)
    mu = check_real("mu", mu, low=0.0)
    k = check_int("k", k, minimum=1)
    A = check_real("A", A, low=0.0)
    sep = None if separation is None else check_real("separation", separation, low=0.0)
    return m, t, mu, k, A, sep


def theorem8_bound(*, m: int, t: float, sigma: float, k: int, A: float, separation: float | None = None,
                   mu: float = 0.5) -> Bound:
    """Gilbert & McMillan Theorem 8: EMD upper bound for Algorithm 1 with Gaussian noise of level σ.

    .. math::

        \\mathrm{EMD} ≤ O\\Big[\\frac{1}{1−c}\\Big(\\frac1k e^{−1/(2m²T)} T^{0.75}\\sqrt{B}
        + \\big(k\\sqrt T + \\tfrac{T^2}{k}\\big) e^{−1/(4m²T)} B\\Big)\\Big],
        \\quad B = 2σ + \\tfrac{k}{\\sqrt{2π}} e^{−A²/(4T)},

    under assumptions 1. ``m√(T/2) > 1``, 2. ``√(2T) < 1``, 3. ``|x_i − x_j| > √(2T) + 2A`` and
    4. ``c := √T · B < 1`` (the paper's "``≤ c < 1`` for some constant ``c``"; dpcloak takes the
    smallest admissible ``c``). The result is independent of ``n``.

    Examples
    --------
    >>> b = theorem8_bound(m=100, t=0.01, sigma=0.01, k=2, A=0.05, separation=0.5)
    >>> b.kind, b.applies, round(b.value, 4)
    ('upper', True, 0.1158)
    >>> theorem8_bound(m=5, t=0.01, sigma=0.01, k=2, A=0.05).reason.split(";")[0]  # m√(T/2) ≤ 1
    'assumption 1 (m·√(T/2) > 1) fails: m·√(T/2) = 0.25'
    """
    m, t, mu, k, A, sep = _validate(m, t, mu, k, A, separation)
    sigma = check_real("sigma", sigma, low=0.0, low_inclusive=True)
    T, failed = _common(m, t, mu, k, A, sep)
    return _upper_bound(
        T, m, k, A, noise=2.0 * sigma, failed=failed, source="Gilbert & McMillan Theorem 8",
        c_failure="assumption 4 (√T(2σ + k e^(−A²/4T)/√(2π)) ≤ c < 1) fails: it equals {c:.4g}",
    )


def _upper_bound(
    T: float, m: int, k: int, A: float, *, noise: float, failed: list[str], source: str, c_failure: str,
    detail: str = "",
) -> Bound:
    """Theorem 8's bracket with ``B = noise + k e^{−A²/4T}/√(2π)`` and ``c = √T B < 1`` (shared by Corollary 9)."""
    B = noise + k / math.sqrt(2.0 * math.pi) * math.exp(-(A**2) / (4.0 * T))
    c = math.sqrt(T) * B
    if not c < 1.0:
        failed.append(c_failure.format(c=c))
    if failed:
        return Bound(value=math.nan, kind="upper", source=source, applies=False, reason="; ".join(failed))
    return Bound(value=_bracket(T, m, k, B, c), kind="upper", source=source, applies=True,
                 reason=f"{_UNSPECIFIED}; {detail}c = {c:.4g}")


def _bracket(T: float, m: int, k: int, B: float, c: float) -> float:
    first = math.exp(-1.0 / (2.0 * m * m * T)) * T**0.75 * math.sqrt(B) / k
    second = (k * math.sqrt(T) + T**2 / k) * math.exp(-1.0 / (4.0 * m * m * T)) * B
    return (first + second) / (1.0 - c)


def corollary9_bound(*, n: int, m: int, t: float, epsilon: float, delta: float, k: int, A: float,
                     separation: float | None = None, mu: float = 0.5) -> Bound:
    """Gilbert & McMillan Corollary 9: Theorem 8 with the noise of the locally private mechanism.

    As published, ``2σ`` is replaced by ``2√m log(1/δ) / (ε n T^{1.5})`` (Proposition 4's
    sensitivity ``O(√m/(nT^{1.5}))`` times a Gaussian-mechanism factor). Note: the Gaussian
    mechanism's factor is ``√(2 log(1.25/δ))/ε``, not ``log(1/δ)/ε``; the corollary's ``log(1/δ)``
    is an upper bound on it only for small δ (δ ≤ 0.1: ``√(2 log 12.5) = 2.25 < log 10 = 2.30``
    holds barely). dpcloak implements the published expression.

    Assumptions: 1–3 of Theorem 8, and in place of 4: (i) ``√m/(nT) = o(1)`` — an asymptotic
    statement that cannot be checked at one point; dpcloak requires ``√m/(nT) < 1`` and reports
    its value — and (ii) ``k√T ≤ √π``. The paper also needs Theorem 8's ``c < 1`` implicitly
    (the ``1/(1 − c)`` factor), which is checked too.

    Examples
    --------
    >>> b = corollary9_bound(n=10**6, m=100, t=0.01, epsilon=1.0, delta=1e-5, k=2, A=0.05, separation=0.5)
    >>> b.kind, b.applies, round(b.value, 4)
    ('upper', True, 0.2229)
    >>> corollary9_bound(n=1000, m=100, t=0.01, epsilon=1.0, delta=1e-5, k=2, A=0.05, separation=0.5).applies
    False
    """
    n = check_int("n", n, minimum=1)
    m, t, mu, k, A, sep = _validate(m, t, mu, k, A, separation)
    epsilon = check_real("epsilon", epsilon, low=0.0)
    delta = check_probability("delta", delta)
    T, failed = _common(m, t, mu, k, A, sep)
    ratio = math.sqrt(m) / (n * T)
    if not ratio < 1.0:
        failed.append(f"assumption (i) √m/(nT) = o(1) is not met: √m/(nT) = {ratio:.4g} ≥ 1")
    if not k * math.sqrt(T) <= math.sqrt(math.pi):
        failed.append(f"assumption (ii) k√T ≤ √π fails: k√T = {k * math.sqrt(T):.4g}")
    noise = 2.0 * math.sqrt(m) * math.log(1.0 / delta) / (epsilon * n * T**1.5)
    return _upper_bound(
        T, m, k, A, noise=noise, failed=failed, source="Gilbert & McMillan Corollary 9",
        c_failure="the factor 1/(1 − c) needs c = √T·(noise + k e^(−A²/4T)/√(2π)) < 1; c = {c:.4g}",
        detail=f"√m/(nT) = {ratio:.4g}; ",
    )


#: Theorem 10's constant from a correct proof: ``E[EMD] ≥ (a/4)(1 − (1/8 + ln 2)/ln 4) = a(1/8 − 1/(64 ln 2))``.
THEOREM10_CONSTANT = 0.125 - 1.0 / (64.0 * math.log(2.0))


def theorem10_lower_bound(*, m: int, t: float, sigma: float, mu: float = 0.5, C: float | None = None,
                          lipschitz: float | None = None, n: int | None = None) -> Bound:
    r"""Gilbert & McMillan Theorem 10 (thesis Theorem 8.7): minimax lower bound on the expected EMD.

    ``inf_f̂ sup_f₀ E[EMD(f₀, f̂)] = Ω(min{1/2, T^{1.5} σ / √m})``, returned with the constant of the
    corrected proof below: ``a (1/8 − 1/(64 ln 2)) ≈ 0.1025 a``. The printed proof (Appendix C; thesis
    §8.2) concludes ``≥ 3a/4``, which does not follow (see "Discrepancies"). EMD is that of the
    normalised vectors (:func:`dpcloak.metrics.emd`), a metric on probability vectors.

    **Proof (corrected).**

    1. *KL.* ``P_f = N(Af, σ² I_m)``, so ``D(P_f ‖ P_f') = ‖Af − Af'‖²/(2σ²)`` (nats). With a
       Lipschitz constant ``L`` (``‖Af − Af'‖ ≤ L · EMD(f, f')`` on probability vectors): Lemma 14's
       ``L = √(2Cm) T^{−1.5}``, or the explicit ``L = n Δ₂(A)`` of its proof
       (``‖Ae_i − Ae_j‖ ≤ |i − j| Δ₂`` and ``EMD(e_i, e_j) = |i − j|/n``, then the optimal flow).
       Hence ``D ≤ L² EMD²/(2σ²)``.
    2. *Test vectors.* ``a = min{1/2, σ/L}`` and, in units of ``a`` around 1/2,
       ``v₁ = δ₀``, ``v₂ = ½δ_{−1/2} + ½δ_{1/2}``, ``v₃ = ¼δ_{−1} + ½δ₀ + ¼δ₁``, ``v₄ = ½δ₀ + ½δ₁``.
       The 1-D EMD is ``∫|F_i − F_j|`` over the cumulative distributions, which gives **every
       pairwise EMD equal to a/2** (not ``a`` as printed): e.g. ``EMD(v₂, v₃) = 4 · ¼ · (a/2)``
       (four pieces of length ``a/2`` where the CDFs differ by ``1/4``), ``EMD(v₁, v₄) = ½ · a``.
    3. *KL diameter.* ``D ≤ L² (a/2)²/(2σ²) ≤ 1/8`` (nats), since ``a ≤ σ/L``.
    4. *Packing.* The four vectors are ``a/2``-separated: balls of radius ``a/4`` around them are
       disjoint (packing radius ``a/4``), ``M = 4``.
    5. *Fano* (Yu 1997, Lemma 3; natural logarithms throughout): for ``M`` hypotheses pairwise at
       distance ``≥ 2δ`` with KL diameter ``β``,
       ``max_v E_v[d(θ̂, θ_v)] ≥ δ (1 − (β + ln 2)/ln M)``. With ``δ = a/4``, ``β = 1/8``, ``M = 4``:
       ``P(EMD ≥ a/4) ≥ 1/2 − 1/(16 ln 2) ≈ 0.4098`` and
       ``E[EMD] ≥ (a/4)(1/2 − 1/(16 ln 2)) = a(1/8 − 1/(64 ln 2)) ≈ 0.1025 a``.

    The supremum over all sources is at least the maximum over the four. (Averaging the KL over
    pairs, ``I ≤ (12/16)·(1/8)``, would give ``0.108 a``; dpcloak keeps the KL-diameter form of the
    paper's lemma.)

    **Discrepancies in the printed proof.** (i) The pairwise EMDs are ``a/2``, not ``a``, so the
    printed ``d_KL + 1 ≤ 3/2`` should read ``d_KL ≤ 1/8``. (ii) Lemma 15 (the thesis's Lemma 3.2)
    is the base-2 form ``1 − (d_KL + 1)/log₂ M``; the proof uses ``log M = 2`` (bits) with a KL in
    nats. Consistently in bits (``d_KL = 1/(8 ln 2)``) it gives ``P ≥ 0.4098``, the same as the
    natural-log form above; the mixed ``1 − (1/8 + 1)/2 = 7/16`` overstates it. (iii) Read
    literally (packing radius ``ε = a/4``, event ``EMD ≥ ε/2``), Lemma 15 gives
    ``(a/8)·0.4098 ≈ 0.0512 a`` (``7a/128 ≈ 0.0547 a`` with the mixed bases); Yu's form with
    separation ``2δ`` gives the event ``EMD ≥ a/4`` and so twice that. (iv) ``3a/4`` cannot follow
    from any argument on these four vectors: the constant estimator ``f̂ = v₁`` has risk exactly
    ``a/2`` on each of them. Checked in ``tests/recovery/test_bounds.py`` (EMDs with
    :func:`dpcloak.metrics.emd`, POT and an LP; KL by Monte Carlo; Fano against a simulated
    four-way test).

    Parameters
    ----------
    C : float, optional
        Lemma 14's constant. Default: 1 (shape only; the reason says so).
    lipschitz : float, optional
        An explicit ``L`` with ``‖A f − A f'‖ ≤ L · EMD(f, f')`` for probability vectors, e.g.
        ``n · Δ₂(A)`` from :func:`dpcloak.privacy.sensitivity.l2_sensitivity` (Lemma 14's proof).
        Then ``a = min{1/2, σ/L}`` and the bound is fully explicit (overrides ``C``).
    n : int, optional
        Sources on the grid ``i/n``, ``i = 1..n`` (:class:`~dpcloak.domains.Line`): the test vectors
        must be grid vectors, so ``a`` is rounded down to a multiple ``2k/n`` with ``4k ≤ n − 1``
        (a smaller ``a`` keeps every step valid). If ``a < 2/n`` the construction does not fit on
        the grid and the bound does not apply. Without ``n`` sources are measures on ``[0, 1]``.

    Examples
    --------
    >>> b = theorem10_lower_bound(m=100, t=0.01, sigma=0.1)
    >>> b.kind, round(b.value, 8)
    ('lower', 2.6e-07)
    """
    m = check_int("m", m, minimum=1)
    t = check_real("t", t, low=0.0)
    mu = check_real("mu", mu, low=0.0)
    sigma = check_real("sigma", sigma, low=0.0)
    T = mu * t
    source = ("Gilbert & McMillan Theorem 10 / thesis Theorem 8.7 (constant re-derived: a(1/8 − 1/(64 ln 2)), "
              "printed 3a/4)")
    if lipschitz is not None:
        L = check_real("lipschitz", lipschitz, low=0.0)
        a = min(0.5, sigma / L)
        reason = f"explicit: a = min(1/2, σ/L) with L = {L:.4g}"
    else:
        const = 1.0 if C is None else check_real("C", C, low=0.0)
        a = min(0.5, T**1.5 * sigma / (math.sqrt(2.0 * const) * math.sqrt(m)))
        reason = ("Lemma 14's constant C not specified by the paper; C = 1 used (shape only)" if C is None
                  else f"with Lemma 14's constant C = {const:g}")
    if n is not None:
        n = check_int("n", n, minimum=1)
        k = min(math.floor(a * n / 2.0), (n - 1) // 4)
        if k < 1:
            return Bound(value=math.nan, kind="lower", source=source, applies=False,
                         reason=f"{reason}; a = {a:.4g} < 2/n = {2 / n:.4g} (or n < 5): the four test vectors "
                                "do not fit on the grid i/n")
        a = 2.0 * k / n
        reason = f"{reason}; a rounded down to the grid: a = 2·{k}/{n}"
    return Bound(value=THEOREM10_CONSTANT * a, kind="lower", source=source, applies=True,
                 reason=f"{reason}; a = {a:.6g}")


def theorem86_bound(*, m: int, t: float, sigma: float, k: int, A: float, separation: float | None = None,
                    mu: float = 0.5) -> Bound:
    """McMillan's thesis, Theorem 8.6: the alternative EMD upper bound, assumptions 1–3 only.

    .. math::

        \\mathrm{EMD} ≤ \\min\\Big\\{1, O\\Big[\\frac{1}{1 − \\min\\{1, C\\}}\\Big(\\frac1k
        \\sqrt{\\frac{T^{1.5} C}{\\sqrt T + 1}} + k\\min\\{1, C\\} + \\frac{T^2 C}{(T+1)k}\\Big)\\Big]\\Big\\},
        \\quad C = \\min\\{k, \\sqrt T(σ + k e^{−A²/(4T)})\\}.

    When ``C ≥ 1`` the bracket's prefactor is infinite and the bound is the trivial 1.

    Examples
    --------
    >>> b = theorem86_bound(m=100, t=0.01, sigma=0.01, k=2, A=0.05, separation=0.5)
    >>> b.kind, b.applies, round(b.value, 4)
    ('upper', True, 0.2907)
    >>> theorem86_bound(m=100, t=0.01, sigma=100.0, k=2, A=0.05, separation=0.5).value  # C ≥ 1: the trivial bound
    1.0
    """
    m, t, mu, k, A, sep = _validate(m, t, mu, k, A, separation)
    sigma = check_real("sigma", sigma, low=0.0, low_inclusive=True)
    T, failed = _common(m, t, mu, k, A, sep)
    source = "McMillan's thesis Theorem 8.6"
    if failed:
        return Bound(value=math.nan, kind="upper", source=source, applies=False, reason="; ".join(failed))
    C = min(float(k), math.sqrt(T) * (sigma + k * math.exp(-(A**2) / (4.0 * T))))
    cap = min(1.0, C)
    if cap >= 1.0:
        return Bound(value=1.0, kind="upper", source=source, applies=True, reason=f"C = {C:.4g} ≥ 1: trivial bound 1")
    inner = math.sqrt(T**1.5 * C / (math.sqrt(T) + 1.0)) / k + k * cap + T**2 * C / ((T + 1.0) * k)
    return Bound(value=min(1.0, inner / (1.0 - cap)), kind="upper", source=source, applies=True,
                 reason=f"{_UNSPECIFIED}; C = {C:.4g}")

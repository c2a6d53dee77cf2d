r"""Privacy accounting over repeated releases (continual monitoring): closed forms first, ``dp_accounting`` on request.

A sensor that reports every minute releases a new noisy reading every minute, and every release
spends privacy. The composition of k releases of one mechanism is computed here in closed form
(``accountant="closed"``, the default: microseconds per query, constant memory for any k) or by
``dp_accounting`` (``"pld"``: privacy-loss distributions, ``"rdp"``: Rényi DP) for comparison.

Release events: the one privacy core
------------------------------------
Every mechanism describes one release as an immutable :class:`ReleaseEvent` (its
``release_event()`` method): the noise family (the subclass), the sensitivity and noise scale
actually sampled, the dimension and optionally which sensors and which window. :func:`compose`
is the one accountant: it adds the events' parameters in exact rational arithmetic and converts
once, rounded outward; it dispatches only on the events' methods (``gdp_mu2``, ``zcdp_rho``,
``pure_epsilon``), never on types, so a new mechanism needs no change here. Describing one:

>>> from dataclasses import dataclass, fields
>>> from fractions import Fraction
>>> @dataclass(frozen=True)
... class SkellamEvent(ReleaseEvent):  # Skellam noise of variance scale² is (Δ²/(2 scale²))-zCDP to first order
...     kind = "skellam"
...     def zcdp_rho(self) -> Fraction:
...         return Fraction(self.sensitivity) ** 2 / (2 * Fraction(self.scale) ** 2)
>>> class SkellamMechanism:
...     def release_event(self) -> SkellamEvent:
...         return SkellamEvent(sensitivity=1.0, scale=20.0, dimension=8)
>>> spent = compose([(release_event(SkellamMechanism()), 100)], delta=1e-6)
>>> spent.readings, round(spent.epsilon, 4) == round(zcdp_epsilon(rho=100 / 800, delta=1e-6), 4)
(100, True)

**One ε per release.** A mechanism calibrated to (ε, δ) states exactly that pair for one
release, and the accountant states the same ε for that one event at that δ (the discrete
Gaussian is calibrated with the accountant's own zCDP conversion, so both are one number, up to
the calibration's 2⁻³⁰ step). A stated total is at the *budget's* δ: the same single release of
a mechanism calibrated to (1.0, 1e-6) is also (0.884, 1e-5) — another point of the same privacy
profile, not a second opinion. Both are right; the per-release pair is the calibration target,
totals over many releases are stated at the budget's δ.

Closed forms (``accountant="closed"``)
--------------------------------------
* **Gaussian** (:class:`~dpcloak.privacy.GaussianMechanism`, σ, ℓ2 sensitivity Δ): k independent
  releases of a query of sensitivity Δ are one Gaussian release of the concatenated query, whose
  sensitivity is :math:`\sqrt{k}\,\Delta` (the ℓ2 norm of k blocks of norm ≤ Δ); so the k-fold
  composition is *exactly* the Gaussian mechanism with Δ → √k·Δ (Dong, Roth & Su 2022, Cor. 3.3:
  μ-GDP composes to √k·μ-GDP), and its privacy profile is Balle & Wang's (2018, Theorem 8)

  .. math:: \delta(\varepsilon) = \Phi\Big(\frac{\mu_k}{2} - \frac{\varepsilon}{\mu_k}\Big)
            - e^{\varepsilon}\,\Phi\Big(-\frac{\mu_k}{2} - \frac{\varepsilon}{\mu_k}\Big),
            \qquad \mu_k = \frac{\sqrt{k}\,\Delta}{\sigma},

  inverted for ε by :func:`~dpcloak.privacy.gaussian_epsilon` (rounding-safe: the ε returned
  meets δ under exact evaluation). This is tight: no accountant can report less.
* **Discrete Gaussian** (:class:`~dpcloak.privacy.DiscreteGaussianMechanism`): its guarantee is
  ρ-zCDP with ρ = Δ_grid²/(2σ²) (Canonne, Kamath & Steinke 2020, Theorem 14); zCDP composes
  additively (Bun & Steinke 2016, Lemma 2.3), ρ_total = kρ, converted to (ε, δ) by
  :func:`zcdp_epsilon` (CKS 2020 Proposition 12 / Asoodeh et al. 2020, optimised over *every*
  Rényi order α > 1 in closed form). This is the same conversion ``dp_accounting``'s RDP
  accountant applies on its fixed list of orders, so the closed form is never above it. It is an
  upper bound, not the exact profile of the discrete Gaussian.
* **Laplace / discrete Laplace** (pure ε-DP): k·ε at δ = 0 (basic composition, Dwork & Roth 2014
  Thm 3.16; exact at δ = 0, an upper bound at δ > 0 — ask ``"pld"`` for the tighter value there).

The closed forms are O(1) in k: ``readings=10**12`` costs the same as one reading. The
``dp_accounting`` PLD accountant is O(1) in k for the Gaussian (it uses the same √k identity) but
grows with k for Laplace events (149 MB and 6 s at k = 1000, 1 GB at k = 10 000 measured), so
``"pld"`` refuses more than :data:`PLD_MAX_SELF_COMPOSITIONS` non-Gaussian readings up front.

Event-level vs. pattern-level privacy (Gilbert & McMillan's slides, slides "Continual Monitoring" and
"Individual vs. Event Level Privacy")
------------------------------------------------------------------------------------------------
The neighbouring relation of one release protects one *event*: a change of the source vector at
one time (Gilbert & McMillan's slides' "Mary had a party on Friday night"). What must be composed depends on what
the secret is:

* **Event-level privacy** protects a single event. The releases it meaningfully affects are those
  taken while its heat is still visible — for a diffusion that is a window of w releases, not the
  whole history (the slides' point: the party hardly affects Saturday's measurements). The
  guarantee is the w-fold composition and does not degrade further as time goes on.
* **Pattern-level privacy** protects a pattern of behaviour ("Mary has such a party every week"):
  every release is affected, so the guarantee after k releases is the k-fold composition over all
  of them, degrading roughly like √k (the slides' "privacy degrades over time at a rate of about
  √t"). A budget then caps the number of releases a sensor may ever send.

:func:`privacy_report` answers both at once ("a day of hourly readings, an event visible for
three of them"). A release here is one privatized vector of all sensors at one time step; a single
sensor's readings are part of those vectors, so what one sensor alone reveals over k time steps is
bounded by the same k-fold numbers (post-processing).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from fractions import Fraction
from os import PathLike
from typing import Any, ClassVar

from dpcloak._validation import check_choice, check_int, check_probability, check_real
from dpcloak.errors import BudgetExceededError, InvalidParameterError
from dpcloak.privacy.ledger import BudgetLedger
from dpcloak.privacy.mechanisms import gaussian_epsilon

__all__ = [
    "ACCOUNTANTS",
    "ReleaseEvent",
    "GaussianEvent",
    "DiscreteGaussianEvent",
    "LaplaceEvent",
    "DiscreteLaplaceEvent",
    "compose",
    "release_event",
    "PLD_MAX_SELF_COMPOSITIONS",
    "PrivacySpent",
    "PrivacyReport",
    "ReadingAccountant",
    "dp_event",
    "distinct_digits",
    "composed_epsilon",
    "privacy_spent",
    "privacy_report",
    "zcdp_epsilon",
    "split_epsilon",
    "total_epsilon",
    "advanced_composition",
    "accountable",
]

ACCOUNTANTS = ("closed", "pld", "rdp")
PLD_MAX_SELF_COMPOSITIONS = 1000


@dataclass(frozen=True)
class PrivacySpent:
    """Cumulative privacy loss after a number of releases.

    Attributes
    ----------
    readings : int
        Number of releases composed.
    epsilon : float
        Cumulative ε at ``delta`` (``inf`` when no finite ε achieves it).
    delta : float
        The δ at which ε is reported.
    accountant : str
        ``"closed"``, ``"pld"`` or ``"rdp"``.
    method : str
        How the composition was computed (closed form and its source, or the ``dp_accounting`` accountant).

    Examples
    --------
    >>> from dpcloak.privacy import LaplaceMechanism
    >>> spent = privacy_spent(LaplaceMechanism(epsilon=0.5, sensitivity=1.0), readings=3, delta=0.0)
    >>> spent.readings, round(spent.epsilon, 12), spent.delta, spent.accountant
    (3, 1.5, 0.0, 'closed')
    """

    readings: int
    epsilon: float
    delta: float
    accountant: str
    method: str


@dataclass(frozen=True)
class PrivacyReport:
    """Event-level and pattern-level spending after ``releases`` releases (module docstring).

    Attributes
    ----------
    releases : int
        Releases made (e.g. 24 for a day of hourly readings).
    window : int
        Releases one event meaningfully affects (event-level privacy).
    pattern : PrivacySpent
        All ``releases`` composed: protects a pattern of behaviour present in every release.
    event : PrivacySpent
        ``min(window, releases)`` composed: protects one event.

    Examples
    --------
    >>> from dpcloak.privacy import GaussianMechanism
    >>> r = privacy_report(GaussianMechanism(epsilon=1.0, delta=1e-5, sensitivity=1.0),
    ...                    releases=24, window=3, delta=1e-5)
    >>> r.pattern.readings, r.event.readings  # all 24 releases vs. a 3-release event window
    (24, 3)
    >>> r.event.epsilon < r.pattern.epsilon
    True
    """

    releases: int
    window: int
    pattern: PrivacySpent
    event: PrivacySpent


def dp_event(mechanism: Any) -> Any:
    """The ``dp_accounting`` event of one release of ``mechanism`` (sensitivity normalised to 1).

    Gaussian → ``GaussianDpEvent(σ/Δ2)``; Laplace → ``LaplaceDpEvent(b/Δ1)``; discrete Gaussian →
    ``ZCDpEvent(ρ = (Δ_grid/σ_grid)²/2)`` (Canonne–Kamath–Steinke Thm 14; RDP accountant only);
    discrete Laplace → ``DiscreteLaplaceDpEvent(1/b, Δ_grid)``: each :class:`ReleaseEvent`'s
    ``dp_accounting_event()``. Privatizers are unwrapped to their mechanism.

    Raises
    ------
    InvalidParameterError
        For a mechanism without a DP accounting (e.g. a Fisher-information guarantee).

    Examples
    --------
    >>> from dpcloak.privacy import GaussianMechanism, LaplaceMechanism
    >>> dp_event(LaplaceMechanism(epsilon=0.5, sensitivity=1.0))
    LaplaceDpEvent(noise_multiplier=2.0)
    >>> type(dp_event(GaussianMechanism(epsilon=1.0, delta=1e-5, sensitivity=1.0))).__name__
    'GaussianDpEvent'
    """
    return release_event(mechanism).dp_accounting_event()


def zcdp_epsilon(*, rho: float, delta: float) -> float:
    r"""ε at δ of a ρ-zCDP mechanism, optimised over every Rényi order α > 1.

    ρ-zCDP is Rényi DP of order α at level αρ for all α > 1; each α gives the (ε, δ) bound of
    Canonne, Kamath & Steinke 2020, Proposition 12 (also Asoodeh et al. 2020)

    .. math:: \varepsilon(\alpha) = \alpha\rho + \log(1 - 1/\alpha) - \frac{\log\delta + \log\alpha}{\alpha - 1}.

    Its derivative is :math:`\rho - (\log(1/\delta) - \log\alpha)/(\alpha-1)^2`, so the optimal α is
    the unique root of :math:`\rho(\alpha-1)^2 + \log\alpha = \log(1/\delta)` in
    :math:`(1, 1 + \sqrt{\log(1/\delta)/\rho}]`, found by safeguarded Newton steps. Any α > 1 gives a
    valid bound, so an inexact root only costs tightness; ε at the float α found is then rounded
    outward by a bound on its floating-point error, so the result is never below the exact optimum
    (checked against mpmath at 60 digits), and above it by about 10⁻¹⁴ relative at most.

    Parameters
    ----------
    rho : float
        ρ ≥ 0.
    delta : float
        δ in [0, 1); δ = 0 gives ∞ for ρ > 0.

    Examples
    --------
    Tighter than the textbook conversion ε = ρ + 2√(ρ ln(1/δ)):

    >>> import math
    >>> round(zcdp_epsilon(rho=0.5, delta=1e-5), 4)
    4.7284
    >>> round(0.5 + 2 * math.sqrt(0.5 * math.log(1e5)), 4)
    5.2985
    """
    r = check_real("rho", rho, low=0.0, low_inclusive=True)
    dlt = check_probability("delta", delta, open_low=False)
    return _zcdp_epsilon(r, dlt)


def _zcdp_epsilon(rho: float, delta: float) -> float:
    if rho == 0.0:
        return 0.0
    if delta == 0.0:
        return math.inf
    log_inv = -math.log(delta)
    lo, hi = 1.0, 1.0 + math.sqrt(log_inv / rho)
    a = hi
    for _ in range(60):
        h = rho * (a - 1.0) ** 2 + math.log(a) - log_inv
        if h > 0.0:
            hi = a
        else:
            lo = a
        step = a - h / (2.0 * rho * (a - 1.0) + 1.0 / a)
        a_next = step if lo < step < hi else 0.5 * (lo + hi)
        if abs(a_next - a) <= 1e-15 * a:
            a = a_next
            break
        a = a_next
    a = max(a, math.nextafter(1.0, 2.0))
    gap, log_a = a - 1.0, math.log(a)  # gap exact for a ≤ 2 (Sterbenz), else within half an ulp
    # log(1 − 1/α): two logs of the same sign for α ≤ 2 (gap exact), log1p of |x| < 1/2 beyond (well conditioned)
    log_frac = math.log(gap) - log_a if a <= 2.0 else math.log1p(-1.0 / a)
    terms = (a * rho, log_frac, (log_inv - log_a) / gap)  # αρ, log(1 − 1/α), (log(1/δ) − log α)/(α − 1)
    # Rounded outward: each term is within a few ulps of its magnitude (libm's log within 1 ulp, the rest
    # correctly rounded; the cancellation in log(1/δ) − log α is counted at its operands' size): at most 4u of
    # the sum of those magnitudes in all (u = 2⁻⁵³); 16u of it bounds the error of ε at this float α.
    size = abs(terms[0]) + abs(log_frac) + (log_inv + abs(log_a)) / gap
    eps = math.fsum(terms) + 2.0**-49 * size
    return 0.0 if eps <= 0.0 else math.nextafter(eps, math.inf)  # ε ≤ 0 at some α: the mechanism leaks nothing


def _float_at_least(exact: Fraction) -> float:
    """The smallest float ≥ ``exact``: a stated ε never rounds below the exact composition, nor above it needlessly."""
    nearest = float(exact)
    return nearest if Fraction(nearest) >= exact else math.nextafter(nearest, math.inf)


def _float_at_most(exact: Fraction) -> float:
    """The largest float ≤ ``exact``: a share of a budget never rounds above its exact share."""
    nearest = float(exact)
    return nearest if Fraction(nearest) <= exact else math.nextafter(nearest, -math.inf)


def split_epsilon(epsilon: float, weights: Sequence[float | Fraction]) -> tuple[float, ...]:
    r"""Split ``epsilon`` in proportion to ``weights`` so that the parts' EXACT sum never exceeds it.

    Part ``i`` is the largest double ≤ ``ε wᵢ / Σw`` (rational arithmetic), except the largest part,
    which takes what the others leave, ``ε − Σ_{j≠i} part_j`` rounded down. So
    ``Σ Fraction(part) ≤ Fraction(ε)`` always (basic composition of the parts spends at most ε), and
    :func:`total_epsilon` of the parts, the float a guarantee states, is ≤ ε too.

    Parameters
    ----------
    epsilon : float
        The budget ε > 0.
    weights : sequence of float or Fraction
        Non-negative weights (not all zero), taken as exact rationals.

    Examples
    --------
    >>> from fractions import Fraction
    >>> parts = split_epsilon(1.0, [0.1, Fraction(9, 10)])
    >>> sum(map(Fraction, parts)) <= 1, round(parts[0], 12), round(parts[1], 12)
    (True, 0.1, 0.9)
    """
    eps = Fraction(check_real("epsilon", epsilon, low=0.0))
    exact = [Fraction(w) for w in weights]
    if not exact or any(w < 0 for w in exact) or sum(exact) == 0:
        raise InvalidParameterError(f"weights must be non-negative and not all zero, got {list(weights)!r}",
                                    parameter="weights")
    whole = sum(exact)
    parts = [_float_at_most(eps * w / whole) for w in exact]
    top = max(range(len(parts)), key=lambda i: exact[i])
    parts[top] = _float_at_most(eps - sum(Fraction(p) for i, p in enumerate(parts) if i != top))
    return tuple(parts)


def total_epsilon(parts: Sequence[float]) -> float:
    """The ε that basic composition of ``parts`` states: their exact sum, rounded up to a double.

    Examples
    --------
    >>> total_epsilon([0.1, 0.2]), 0.1 + 0.2 == total_epsilon([0.1, 0.2])
    (0.30000000000000004, True)
    """
    return _float_at_least(sum((Fraction(float(p)) for p in parts), Fraction(0)))


def distinct_digits(spent: float, budget: float) -> tuple[str, str]:
    """``spent`` and ``budget`` printed with the fewest significant digits (≥ 6) that tell them apart.

    A refusal must not read "would spend epsilon=1, over the budget epsilon=1" when the total exceeds
    the budget by one ulp.

    Examples
    --------
    >>> distinct_digits(1.0000000000000002, 1.0)
    ('1.0000000000000002', '1')
    >>> distinct_digits(1.2, 1.0)
    ('1.2', '1')
    """
    for digits in range(6, 18):
        a, b = f"{spent:.{digits}g}", f"{budget:.{digits}g}"
        if a != b or spent == budget:
            return a, b
    return repr(spent), repr(budget)


# --- the one privacy core: release events and their exact composition ---------------------------------------------


@dataclass(frozen=True)
class ReleaseEvent:
    """One release, described by what was sampled: an immutable, hashable record the accountant composes.

    Subclasses name the noise family and answer, in exact rational arithmetic, the privacy parameters
    their closed forms need: :meth:`gdp_mu2` (μ² of μ-GDP, Gaussian noise), :meth:`zcdp_rho` (ρ-zCDP)
    and :meth:`pure_epsilon` (ε-DP, δ = 0). :func:`compose` dispatches on these methods only.

    Attributes
    ----------
    sensitivity : float
        The sensitivity of the released vector in the units of ``scale`` (grid steps for the exact
        integer samplers), in the family's norm (ℓ2 for Gaussians, ℓ1 for Laplace).
    scale : float or Fraction
        The noise scale actually sampled: σ (Gaussians) or b (Laplace); exact for the integer samplers.
    dimension : int
        Coordinates released together (the vector's length).
    sensors : tuple of int, optional
        Which sensors (coordinates) took part, when a release covers only some of them.
    window : int, optional
        The time window released, when the release belongs to one.

    Examples
    --------
    Events are values: two descriptions of the same release are equal and hash alike.

    >>> event = LaplaceEvent(sensitivity=1.0, scale=2.0, window=3)
    >>> event == LaplaceEvent(sensitivity=1.0, scale=2.0, window=3), event.kind, event.window
    (True, 'laplace', 3)
    >>> len({event, LaplaceEvent(sensitivity=1.0, scale=2.0, window=3)})
    1
    """

    sensitivity: float
    scale: float | Fraction
    dimension: int = 1
    sensors: tuple[int, ...] | None = None
    window: int | None = None

    #: The noise family's name (``key`` and the ``method`` texts use it).
    kind: ClassVar[str] = "release"

    def __post_init__(self) -> None:
        check_real("sensitivity", self.sensitivity, low=0.0)
        if not (isinstance(self.scale, Fraction) and self.scale > 0):
            check_real("scale", float(self.scale), low=0.0)
        check_int("dimension", self.dimension, minimum=1)
        if self.sensors is not None:
            object.__setattr__(self, "sensors", tuple(check_int("sensor", s, minimum=0) for s in self.sensors))
        if self.window is not None:
            check_int("window", self.window, minimum=0)

    def gdp_mu2(self) -> Fraction | None:
        """μ² when the release is μ-GDP (Gaussian noise), else ``None``."""
        return None

    def pure_epsilon(self) -> Fraction | None:
        """The exact ε when the release is ε-DP with δ = 0, else ``None``."""
        return None

    def zcdp_rho(self) -> Fraction:
        """ρ of ρ-zCDP: μ²/2 for μ-GDP, ε²/2 for pure ε-DP (Bun & Steinke 2016, Prop. 1.4)."""
        mu2, eps = self.gdp_mu2(), self.pure_epsilon()
        if mu2 is not None:
            return mu2 / 2
        if eps is not None:
            return eps * eps / 2
        raise NotImplementedError(f"{type(self).__name__} must define gdp_mu2, pure_epsilon or zcdp_rho")

    def dp_accounting_event(self) -> Any:
        """The equivalent ``dp_accounting`` event (for cross-checks; sensitivity normalised to 1)."""
        import dp_accounting

        return self._dp_accounting(dp_accounting)

    def _dp_accounting(self, dpa: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no dp_accounting equivalent")

    @property
    def key(self) -> str:
        """Canonical text of the event (bound into a ledger's configuration): its family and every field."""
        return f"{self.kind} " + " ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self))


@dataclass(frozen=True)
class GaussianEvent(ReleaseEvent):
    """Continuous Gaussian noise N(0, σ²) per coordinate, ℓ2 sensitivity Δ: μ-GDP with μ = Δ/σ.

    Examples
    --------
    >>> event = GaussianEvent(sensitivity=1.0, scale=2.0)
    >>> event.gdp_mu2(), event.zcdp_rho()  # μ² = (Δ/σ)² and ρ = μ²/2, exactly
    (Fraction(1, 4), Fraction(1, 8))
    """

    kind: ClassVar[str] = "gaussian"

    def gdp_mu2(self) -> Fraction:
        return (Fraction(self.sensitivity) / Fraction(self.scale)) ** 2

    def _dp_accounting(self, dpa: Any) -> Any:
        return dpa.GaussianDpEvent(float(self.scale) / self.sensitivity)


@dataclass(frozen=True)
class DiscreteGaussianEvent(ReleaseEvent):
    """Exact discrete Gaussian noise of σ = ``scale`` grid steps; ``sigma2``, when given, is σ² exactly.

    ½(Δ/σ)²-zCDP (Canonne, Kamath & Steinke 2020, Theorem 14), Δ the ℓ2 grid sensitivity.

    Examples
    --------
    >>> from fractions import Fraction
    >>> DiscreteGaussianEvent(sensitivity=3, scale=Fraction(6)).zcdp_rho()  # 3² / (2 · 6²)
    Fraction(1, 8)
    >>> DiscreteGaussianEvent(sensitivity=3, scale=Fraction(6), sigma2=Fraction(9)).zcdp_rho()  # σ² given exactly
    Fraction(1, 2)
    """

    sigma2: Fraction | None = None
    kind: ClassVar[str] = "discrete-gaussian"

    def zcdp_rho(self) -> Fraction:
        var = Fraction(self.scale) ** 2 if self.sigma2 is None else Fraction(self.sigma2)
        return Fraction(self.sensitivity) ** 2 / (2 * var)

    def _dp_accounting(self, dpa: Any) -> Any:
        return dpa.ZCDpEvent(_float_at_least(self.zcdp_rho()))



@dataclass(frozen=True)
class LaplaceEvent(ReleaseEvent):
    """Continuous Laplace noise of scale b per coordinate, ℓ1 sensitivity Δ: ε-DP with ε = Δ/b exactly.

    Examples
    --------
    >>> LaplaceEvent(sensitivity=1.0, scale=2.0).pure_epsilon()
    Fraction(1, 2)
    """

    kind: ClassVar[str] = "laplace"

    def pure_epsilon(self) -> Fraction:
        return Fraction(self.sensitivity) / Fraction(self.scale)

    def _dp_accounting(self, dpa: Any) -> Any:
        return dpa.LaplaceDpEvent(float(self.scale) / self.sensitivity)



@dataclass(frozen=True)
class DiscreteLaplaceEvent(LaplaceEvent):
    """Exact discrete Laplace noise P(y) ∝ e^{−|y|/b} on ℤ (b = ``scale``, rational), integer ℓ1 grid sensitivity.

    Examples
    --------
    >>> from fractions import Fraction
    >>> event = DiscreteLaplaceEvent(sensitivity=2, scale=Fraction(4))
    >>> event.pure_epsilon(), event.kind  # ε = Δ/b
    (Fraction(1, 2), 'discrete-laplace')
    """

    kind: ClassVar[str] = "discrete-laplace"

    def _dp_accounting(self, dpa: Any) -> Any:
        return dpa.dp_event.DiscreteLaplaceDpEvent(float(1 / Fraction(self.scale)), int(self.sensitivity))


def _sqrt_at_least(x: Fraction) -> float:
    """The smallest double whose square is ≥ ``x`` (x ≥ 0)."""
    root = math.sqrt(float(x))
    while Fraction(root) ** 2 < x:
        root = math.nextafter(root, math.inf)
    return root


def compose(events: Iterable[ReleaseEvent | tuple[ReleaseEvent, int]], *, delta: float) -> PrivacySpent:
    r"""ε at ``delta`` of all ``events`` together (independent noise), in closed form: the one accountant.

    ``events`` holds :class:`ReleaseEvent` objects or ``(event, count)`` pairs. The parameters are
    added in exact rational arithmetic and converted once, rounded outward:

    * all pure ε-DP: ``Σ ε_i`` (basic composition, exact at δ = 0), the smallest double not below it;
    * all Gaussian: μ-GDP composes to ``√(Σ μ_i²)``-GDP exactly (Dong, Roth & Su 2022, Cor. 3.3), whose
      profile is Balle & Wang's (:func:`~dpcloak.privacy.gaussian_epsilon`) — tight;
    * otherwise zCDP adds up, ``ρ = Σ ρ_i`` (Bun & Steinke 2016, Lemma 2.3), converted by
      :func:`zcdp_epsilon`; with pure events among others, also the pure part added to the rest's
      ε (basic composition), and the smaller of the two valid bounds is reported.

    Examples
    --------
    Four Gaussian releases are one Gaussian with twice the sensitivity; a Laplace event adds its ε:

    >>> g, lap = GaussianEvent(sensitivity=1.0, scale=4.0), LaplaceEvent(sensitivity=1.0, scale=10.0)
    >>> four, double = compose([(g, 4)], delta=1e-5), compose([GaussianEvent(sensitivity=2.0, scale=4.0)], delta=1e-5)
    >>> four.epsilon == double.epsilon, four.readings
    (True, 4)
    >>> compose([(lap, 3)], delta=0.0).epsilon
    0.30000000000000004
    >>> mixed = compose([(g, 4), lap], delta=1e-5)
    >>> mixed.readings, round(mixed.epsilon - compose([(g, 4)], delta=1e-5).epsilon, 9)  # the Laplace ε on top
    (5, 0.1)
    """
    dlt = check_probability("delta", delta, open_low=False)
    counts: dict[ReleaseEvent, int] = {}
    for item in events:
        event, n = item if isinstance(item, tuple) else (item, 1)
        if not isinstance(event, ReleaseEvent):
            raise InvalidParameterError(f"events must be ReleaseEvent objects, got {type(event).__name__}",
                                        parameter="events")
        counts[event] = counts.get(event, 0) + check_int("count", n, minimum=0)
    counts = {e: n for e, n in counts.items() if n}
    total = sum(counts.values())
    pure = {e: e.pure_epsilon() for e in counts}
    pure_sum = sum((n * p for e, n in counts.items() if (p := pure[e]) is not None), Fraction(0))
    rest = {e: n for e, n in counts.items() if pure[e] is None}
    if not rest:
        return PrivacySpent(readings=total, epsilon=_float_at_least(pure_sum), delta=dlt, accountant="closed",
                            method=_METHODS["pure"])
    if dlt == 0.0:
        return PrivacySpent(readings=total, epsilon=math.inf, delta=dlt, accountant="closed",
                            method="no finite epsilon at delta=0 for Gaussian noise")
    mu2 = [e.gdp_mu2() for e in rest]
    if all(m is not None for m in mu2):
        mu2_sum = sum((n * m for (e, n), m in zip(rest.items(), mu2, strict=True) if m is not None), Fraction(0))
        rest_eps, method = gaussian_epsilon(delta=dlt, sigma=1.0, sensitivity=_sqrt_at_least(mu2_sum)), "gaussian"
    else:
        rho = sum((n * e.zcdp_rho() for e, n in rest.items()), Fraction(0))
        rest_eps, method = _zcdp_epsilon(_float_at_least(rho), dlt), "zcdp"
    eps = _float_at_least(pure_sum + Fraction(rest_eps))
    if pure_sum:
        rho_all = sum((n * e.zcdp_rho() for e, n in counts.items()), Fraction(0))
        eps = min(eps, _zcdp_epsilon(_float_at_least(rho_all), dlt))
        method = "mixed"
    return PrivacySpent(readings=total, epsilon=eps, delta=dlt, accountant="closed", method=_METHODS[method])


_METHODS = {
    "gaussian": "closed form: Gaussian releases compose to one Gaussian with mu = sqrt(sum mu_i^2) (k equal ones: "
                "sensitivity sqrt(k)*Delta), exact profile (Balle & Wang 2018 Thm 8; Dong, Roth & Su 2022 Cor. 3.3)",
    "zcdp": "closed form: zCDP adds up, rho_total = sum rho_i (Bun & Steinke 2016 Lemma 2.3; CKS 2020 Thm 14), "
            "converted by CKS 2020 Prop. 12 at the optimal Renyi order",
    "pure": "closed form: basic composition sum epsilon_i of pure epsilon-DP (Dwork & Roth 2014 Thm 3.16)",
    "mixed": "closed form: the smaller of zCDP over all releases (pure epsilon as epsilon^2/2-zCDP, Bun & Steinke "
             "2016 Prop. 1.4) and the pure releases' sum added to the rest's epsilon (basic composition)",
}


def release_event(mechanism: Any) -> ReleaseEvent:
    """The :class:`ReleaseEvent` of one release of ``mechanism`` (its ``release_event()``; privatizers unwrapped).

    An object that neither has ``release_event`` nor wraps (``.mechanism``) one that does is refused
    with :class:`~dpcloak.errors.InvalidParameterError`: it has no (ε, δ) accounting.

    Examples
    --------
    >>> from dpcloak.privacy import LaplaceMechanism
    >>> release_event(LaplaceMechanism(epsilon=0.5, sensitivity=1.0))
    LaplaceEvent(sensitivity=1.0, scale=2.0, dimension=1, sensors=None, window=None)
    """
    seen = mechanism
    while not hasattr(seen, "release_event") and hasattr(seen, "mechanism"):
        seen = seen.mechanism
    if not hasattr(seen, "release_event"):
        raise InvalidParameterError(
            f"mechanism {type(mechanism).__name__} has no (epsilon, delta) accounting: it describes no release "
            "event (GaussianMechanism, LaplaceMechanism, DiscreteGaussianMechanism and DiscreteLaplaceMechanism "
            "do, and so does a privatizer wrapping one)", parameter="mechanism"
        )
    event: ReleaseEvent = seen.release_event()
    return event


def accountable(mechanism: Any) -> bool:
    """Whether ``mechanism`` (or the privatizer's) has an (ε, δ) accounting here (see :func:`privacy_spent`).

    Examples
    --------
    >>> from dpcloak.privacy import GaussianMechanism, LaplaceMechanism
    >>> accountable(GaussianMechanism(epsilon=1.0, delta=1e-5, sensitivity=1.0))
    True
    >>> accountable(LaplaceMechanism(epsilon=1.0, sensitivity=1.0)), accountable(object())
    (True, False)
    """
    try:
        release_event(mechanism)
    except InvalidParameterError:
        return False
    return True


def _dp_accounting_epsilon(mechanism: Any, k: int, delta: float, kind: str) -> float:

    event = dp_event(mechanism)
    if kind == "pld":
        if k > PLD_MAX_SELF_COMPOSITIONS and release_event(mechanism).gdp_mu2() is None:
            raise InvalidParameterError(
                f"readings must be <= {PLD_MAX_SELF_COMPOSITIONS} for the pld accountant with "
                f"{type(event).__name__} (its memory grows with the count: about 1 GB at 10000), got {k}; "
                "use accountant='closed'", parameter="readings"
            )
        from dp_accounting.pld import PLDAccountant

        acc: Any = PLDAccountant()
    else:
        from dp_accounting.rdp import RdpAccountant

        acc = RdpAccountant()
    if not acc.supports(event):
        raise InvalidParameterError(
            f"the {kind} accountant does not support {type(event).__name__}; use accountant='closed' or 'rdp'",
            parameter="event", got=type(event).__name__
        )
    if k == 0:
        return 0.0
    acc.compose(event, k)
    return float(acc.get_epsilon(delta))


def privacy_spent(mechanism: Any, *, readings: int, delta: float, accountant: str = "closed") -> PrivacySpent:
    """Cumulative (ε at ``delta``) of ``readings`` independent releases of ``mechanism``.

    Parameters
    ----------
    mechanism : Mechanism or privatizer
        A Gaussian, Laplace, discrete Gaussian or discrete Laplace mechanism (or a privatizer wrapping one).
    readings : int
        k ≥ 0 (k = 0 gives ε = 0).
    delta : float
        δ in [0, 1). At δ = 0 only pure-DP mechanisms with ``"closed"`` give a finite ε
        (``dp_accounting`` truncates tails pessimistically and reports ∞).
    accountant : {"closed", "pld", "rdp"}
        Closed form (module docstring; default), ``dp_accounting``'s PLD or RDP accountant.

    Examples
    --------
    Four Gaussian releases are one Gaussian release with twice the sensitivity (the closed form):

    >>> from dpcloak.privacy import GaussianMechanism, gaussian_epsilon
    >>> m = GaussianMechanism(epsilon=1.0, delta=1e-5, sensitivity=1.0)
    >>> spent = privacy_spent(m, readings=4, delta=1e-5)
    >>> round(spent.epsilon, 4), round(gaussian_epsilon(delta=1e-5, sigma=m.sigma, sensitivity=2.0), 4)
    (2.1547, 2.1547)
    """
    k = check_int("readings", readings, minimum=0)
    dlt = check_probability("delta", delta, open_low=False)
    kind = check_choice("accountant", accountant, ACCOUNTANTS)
    if kind == "closed":
        return compose([(release_event(mechanism), k)], delta=dlt)
    eps = _dp_accounting_epsilon(mechanism, k, dlt, kind)
    return PrivacySpent(readings=k, epsilon=eps, delta=dlt, accountant=kind, method=f"dp_accounting {kind} accountant")


def composed_epsilon(mechanism: Any, *, readings: int, delta: float, accountant: str = "closed") -> float:
    """Cumulative ε at ``delta`` of ``readings`` releases: :func:`privacy_spent` ``.epsilon``.

    Examples
    --------
    >>> from dpcloak.privacy import LaplaceMechanism
    >>> round(composed_epsilon(LaplaceMechanism(epsilon=0.5, sensitivity=1.0), readings=4, delta=0.0), 12)
    2.0
    """
    return privacy_spent(mechanism, readings=readings, delta=delta, accountant=accountant).epsilon


def privacy_report(mechanism: Any, *, releases: int, window: int = 1, delta: float,
                   accountant: str = "closed") -> PrivacyReport:
    """What ``releases`` releases have spent, pattern-level and event-level, in one call.

    Example: a day of hourly readings where a party stays visible for three of them is
    ``privacy_report(mech, releases=24, window=3, delta=1e-6)``.

    Parameters
    ----------
    mechanism, delta, accountant
        As for :func:`privacy_spent`.
    releases : int
        Releases made so far (≥ 0).
    window : int
        Releases one event affects (≥ 1); the event-level guarantee composes ``min(window, releases)``.

    Examples
    --------
    >>> from dpcloak.privacy import LaplaceMechanism
    >>> r = privacy_report(LaplaceMechanism(epsilon=0.1, sensitivity=1.0), releases=24, window=3, delta=0.0)
    >>> round(r.pattern.epsilon, 12), round(r.event.epsilon, 12)  # a day of hourly releases; 3-hour events
    (2.4, 0.3)
    """
    k = check_int("releases", releases, minimum=0)
    w = check_int("window", window, minimum=1)
    pattern = privacy_spent(mechanism, readings=k, delta=delta, accountant=accountant)
    event = privacy_spent(mechanism, readings=min(w, k), delta=delta, accountant=accountant)
    return PrivacyReport(releases=k, window=w, pattern=pattern, event=event)


def advanced_composition(*, epsilon: float, delta: float, k: int, delta_prime: float) -> tuple[float, float]:
    r"""Advanced composition (thesis Theorem 2.6; Gilbert & McMillan's slides slides): k-fold (ε, δ)-DP is
    :math:`(\sqrt{2k\ln(1/\delta')}\,\varepsilon + k\varepsilon(e^\varepsilon - 1),\ k\delta + \delta')`-DP.

    A generic upper bound for comparison; :func:`privacy_spent` is tighter for the mechanisms here.
    Returns ``(epsilon_total, delta_total)``.

    Examples
    --------
    Ten (0.1, 1e-6)-DP releases, with slack δ' = 1e-6:

    >>> eps, delta = advanced_composition(epsilon=0.1, delta=1e-6, k=10, delta_prime=1e-6)
    >>> round(eps, 4), delta
    (1.7674, 1.1e-05)
    >>> eps < 10 * 0.1  # worse than basic composition kε = 1 for few releases...
    False
    >>> eps, _ = advanced_composition(epsilon=0.01, delta=1e-7, k=1000, delta_prime=1e-6)
    >>> round(eps, 4), eps < 1000 * 0.01  # ...better for many
    (1.7628, True)
    """
    eps = check_real("epsilon", epsilon, low=0.0)
    dlt = check_probability("delta", delta, open_low=False)
    n = check_int("k", k, minimum=1)
    dp = check_probability("delta_prime", delta_prime)
    return math.sqrt(2 * n * math.log(1 / dp)) * eps + n * eps * math.expm1(eps), n * dlt + dp


def _mechanism_delta(mechanism: Any) -> float:
    seen = mechanism
    while not hasattr(seen, "release_event") and hasattr(seen, "mechanism"):
        seen = seen.mechanism
    return float(getattr(seen, "delta", 0.0))


class ReadingAccountant:
    """Releases charged to one secret; states what they spent and refuses a release past the budget.

    Parameters
    ----------
    mechanism : Mechanism or privatizer
        What each release is made with (see :func:`privacy_spent`).
    epsilon_budget : float, optional
        Total ε allowed (> 0). ``None`` (default): no limit — the accountant only counts and reports.
    delta_budget : float, optional
        The δ at which totals are stated and the budget is checked, in [0, 1). Default: the
        mechanism's per-release δ (0 for pure ε-DP mechanisms).
    accountant : {"closed", "pld", "rdp"}
        How compositions are computed (module docstring); ``"closed"`` costs microseconds per check.
    ledger : str or os.PathLike, optional
        A ledger file (:class:`~dpcloak.privacy.ledger.BudgetLedger`) holding the count, so that
        every accountant opened on it — in this process or another, now or after a restart —
        shares one budget. Updates are atomic, durable and written *before* the release
        (write-ahead). Default: the count lives in this object only.
    purpose : str, optional
        What the releases are (e.g. a sensor network's configuration fingerprint), bound into the
        ledger with the event, the accountant and the budget: a ledger kept for another purpose is refused.

    Notes
    -----
    A release is one privatized vector (all sensors at one time step). Count the releases according
    to the privacy level promised (module docstring); :meth:`report` gives both levels at once.

    Examples
    --------
    >>> from dpcloak.privacy import LaplaceMechanism
    >>> acc = ReadingAccountant(mechanism=LaplaceMechanism(epsilon=0.3, sensitivity=1.0), epsilon_budget=1.0)
    >>> acc.remaining()
    3
    >>> round(acc.charge().epsilon, 12), acc.readings, acc.remaining()
    (0.3, 1, 2)
    >>> acc.charge(3)
    Traceback (most recent call last):
        ...
    dpcloak.errors.BudgetExceededError: releasing 3 more releases would spend epsilon=1.2 ...

    >>> round(acc.spent_after(2).epsilon, 12), acc.spent().readings  # a what-if; nothing charged
    (0.6, 1)
    >>> round(acc.report(releases=3, window=3).pattern.epsilon, 12)
    0.9
    """

    def __init__(self, *, mechanism: Any, epsilon_budget: float | None = None, delta_budget: float | None = None,
                 accountant: str = "closed", ledger: str | PathLike[str] | None = None,
                 purpose: str | None = None) -> None:
        self.mechanism = mechanism
        self.epsilon_budget = None if epsilon_budget is None else check_real("epsilon_budget", epsilon_budget,
                                                                             low=0.0)
        dlt = _mechanism_delta(mechanism) if delta_budget is None else delta_budget
        self.delta_budget = check_probability("delta_budget", dlt, open_low=False)
        self.accountant = check_choice("accountant", accountant, ACCOUNTANTS)
        event = release_event(mechanism)  # fails now, not at the first release, if it cannot be accounted
        self._readings = 0
        self._ledger = None if ledger is None else BudgetLedger(ledger, fingerprint=(
            ("" if purpose is None else f"{purpose}; ") + f"{event.key}; accountant={self.accountant}; "
            f"epsilon_budget={self.epsilon_budget!r}; delta_budget={self.delta_budget!r}"))

    @property
    def readings(self) -> int:
        """Releases charged so far (from the ledger file when there is one)."""
        return self._ledger.readings if self._ledger is not None else self._readings

    def spent_after(self, readings: int) -> PrivacySpent:
        """Cumulative (ε at ``delta_budget``) after ``readings`` releases."""
        return privacy_spent(self.mechanism, readings=readings, delta=self.delta_budget, accountant=self.accountant)

    def spent(self) -> PrivacySpent:
        """Cumulative (ε at ``delta_budget``) of the releases charged so far."""
        return self.spent_after(self.readings)

    def report(self, *, releases: int | None = None, window: int = 1) -> PrivacyReport:
        """Pattern- and event-level spending after ``releases`` releases (default: those charged so far).

        See :func:`privacy_report`; e.g. ``report(releases=24, window=3)`` for a day of hourly
        readings and an event visible for three hours.
        """
        k = self.readings if releases is None else releases
        return privacy_report(self.mechanism, releases=k, window=window, delta=self.delta_budget,
                              accountant=self.accountant)

    def _fits(self, total: int) -> bool:
        return self.epsilon_budget is None or self.spent_after(total).epsilon <= self.epsilon_budget

    def charge(self, count: int = 1) -> PrivacySpent:
        """Charge ``count`` more releases, or raise :class:`BudgetExceededError` (nothing is charged then).

        Call it *before* releasing; with a ledger the new count is on disk when this returns.
        """
        n = check_int("count", count, minimum=1)

        def admit(total: int) -> PrivacySpent:
            after = self.spent_after(total)
            if self.epsilon_budget is not None and not after.epsilon <= self.epsilon_budget:
                spent, budget = distinct_digits(after.epsilon, self.epsilon_budget)
                raise BudgetExceededError(
                    f"releasing {_count(n, 'more release')} would spend epsilon={spent} at "
                    f"delta={self.delta_budget:g} after {_count(total, 'release')}, over the budget "
                    f"epsilon={budget} ({_count(total - n, 'release')} already charged); nothing was released"
                )
            return after

        if self._ledger is not None:
            return self._ledger.reserve(n, admit)
        after = admit(self._readings + n)
        self._readings += n
        return after

    def remaining(self) -> int | None:
        """How many more releases fit in the budget (``None`` without a budget).

        Exponential then binary search on the count; with ``"pld"`` and a non-Gaussian mechanism the
        search stops at :data:`PLD_MAX_SELF_COMPOSITIONS` releases in total.
        """
        if self.epsilon_budget is None:
            return None
        done = self.readings
        if not self._fits(done + 1):
            return 0
        cap = 2**62
        if self.accountant == "pld" and release_event(self.mechanism).gdp_mu2() is None:
            cap = max(PLD_MAX_SELF_COMPOSITIONS - done, 1)
        lo, hi = 1, 2
        while hi <= cap and self._fits(done + hi):
            lo, hi = hi, hi * 2
        hi = min(hi, cap + 1)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if self._fits(done + mid) else (lo, mid)
        return lo

    def __repr__(self) -> str:
        budget = "none" if self.epsilon_budget is None else f"{self.epsilon_budget:g}"
        where = "" if self._ledger is None else f", ledger={str(self._ledger.path)!r}"
        return (f"ReadingAccountant(readings={self.readings}, epsilon_budget={budget}, "
                f"delta_budget={self.delta_budget:g}, accountant={self.accountant!r}{where})")


def _count(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1 ("1 release", "3 more releases")."""
    return f"{n} {noun}" + ("" if n == 1 else "s")

r"""Privacy accounting over repeated readings (continual monitoring), built on ``dp_accounting``.

A sensor that reports every minute releases a new noisy reading every minute, and every release
spends privacy. Composition is not written by hand here: each mechanism is mapped to a
``dp_accounting`` event (:func:`dp_event`) and k readings are the k-fold self-composition, evaluated
by the privacy-loss-distribution accountant (``"pld"``, tight for the Gaussian mechanism) or the
Rényi accountant (``"rdp"``). The textbook bounds — basic composition (thesis Lemma 2.5) and the
advanced composition theorem quoted on the slides (seed 001, "Continual Monitoring"; thesis
Theorem 2.6), :math:`(\sqrt{2k\ln(1/\delta')}\,\varepsilon + k\varepsilon(e^\varepsilon-1),\ k\delta+\delta')`
— are provided for comparison (:func:`advanced_composition`); the accountants are tighter.

Event-level vs. pattern-level privacy (seed 001, slides "Continual Monitoring" and
"Individual vs. Event Level Privacy")
------------------------------------------------------------------------------------------------
The neighbouring relation of one reading protects one *event*: a change of the source vector by at
most α in EMD at one time (seed 001's "Mary had a party on Friday night"). What must be composed
depends on what the secret is:

* **Event-level privacy** protects a single event. The readings it meaningfully affects are those
  taken while its heat is still visible — for a diffusion that is a window of w readings, not the
  whole history (the slides' point: the party hardly affects Saturday's measurements). Charge an
  accountant with the w readings of that window: the guarantee is the w-fold composition, and it
  does not degrade further as time goes on. (Using all readings is always valid, just loose.)
* **Pattern-level privacy** protects a pattern of behaviour ("Mary has such a party every week"):
  every reading is affected, so the guarantee after k readings is the k-fold composition over all
  of them, degrading roughly like √k (the slides' "privacy degrades over time at a rate of about
  √t"). A budget (ε_total, δ_total) then caps the number of readings a sensor may ever send.

:class:`ReadingAccountant` counts the readings charged to one secret; choose the count according
to the level of privacy you promise. The refusal (:class:`~dpcloak.errors.BudgetExceededError`)
happens *before* the reading would be released.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dpcloak._validation import check_choice, check_int, check_probability, check_real
from dpcloak.errors import BudgetExceededError, InvalidParameterError
from dpcloak.privacy.discrete import DiscreteGaussianMechanism, DiscreteLaplaceMechanism
from dpcloak.privacy.local import KeyedPrivatizer, SensorPrivatizer
from dpcloak.privacy.mechanisms import GaussianMechanism, LaplaceMechanism

__all__ = [
    "ACCOUNTANTS",
    "PrivacySpent",
    "ReadingAccountant",
    "dp_event",
    "composed_epsilon",
    "advanced_composition",
]

ACCOUNTANTS = ("pld", "rdp")


@dataclass(frozen=True)
class PrivacySpent:
    """Cumulative privacy loss after a number of readings.

    Attributes
    ----------
    readings : int
        Number of readings composed.
    epsilon : float
        Cumulative ε at ``delta`` (``inf`` when no finite ε achieves it).
    delta : float
        The δ at which ε is reported.
    accountant : str
        ``"pld"`` or ``"rdp"`` (``dp_accounting``).
    """

    readings: int
    epsilon: float
    delta: float
    accountant: str


def dp_event(mechanism: Any) -> Any:
    """The ``dp_accounting`` event of one release of ``mechanism`` (sensitivity normalised to 1).

    Gaussian → ``GaussianDpEvent(σ/Δ2)``; Laplace → ``LaplaceDpEvent(b/Δ1)``; discrete Gaussian →
    ``ZCDpEvent(ρ = (Δ_grid/σ_grid)²/2)`` (Canonne–Kamath–Steinke Thm 14; RDP accountant only);
    discrete Laplace → ``DiscreteLaplaceDpEvent(1/b, Δ_grid)``. Privatizers
    (:class:`~dpcloak.privacy.local.SensorPrivatizer`, :class:`~dpcloak.privacy.local.KeyedPrivatizer`)
    are unwrapped to their mechanism.

    Raises
    ------
    InvalidParameterError
        For a mechanism without a DP accounting (e.g. a Fisher-information guarantee).
    """
    import dp_accounting

    if isinstance(mechanism, SensorPrivatizer | KeyedPrivatizer):
        return dp_event(mechanism.mechanism)
    if isinstance(mechanism, GaussianMechanism):
        return dp_accounting.GaussianDpEvent(mechanism.sigma / mechanism.sensitivity)
    if isinstance(mechanism, LaplaceMechanism):
        return dp_accounting.LaplaceDpEvent(mechanism.scale / mechanism.sensitivity)
    if isinstance(mechanism, DiscreteGaussianMechanism):
        return dp_accounting.ZCDpEvent(0.5 / mechanism.noise_multiplier**2)
    if isinstance(mechanism, DiscreteLaplaceMechanism):
        return dp_accounting.dp_event.DiscreteLaplaceDpEvent(float(1 / mechanism.scale), mechanism.grid_sensitivity)
    raise InvalidParameterError(
        f"mechanism {type(mechanism).__name__} has no (epsilon, delta) accounting; supported: GaussianMechanism, "
        "LaplaceMechanism, DiscreteGaussianMechanism, DiscreteLaplaceMechanism (or a privatizer wrapping one)"
    )


def _accountant(kind: str) -> Any:
    if kind == "pld":
        from dp_accounting.pld import PLDAccountant

        return PLDAccountant()
    from dp_accounting.rdp import RdpAccountant

    return RdpAccountant()


def composed_epsilon(mechanism: Any, *, readings: int, delta: float, accountant: str = "pld") -> float:
    """Cumulative ε at ``delta`` of ``readings`` independent releases of ``mechanism`` (``dp_accounting``).

    Parameters
    ----------
    mechanism : Mechanism or privatizer
        See :func:`dp_event`.
    readings : int
        k ≥ 0 (k = 0 gives 0).
    delta : float
        δ in [0, 1). At δ = 0 ``dp_accounting`` reports ∞ even for pure-DP mechanisms (its tails are
        truncated pessimistically); use a tiny δ such as 1e-12 instead.
    accountant : {"pld", "rdp"}
        PLD (tight, ``dp_accounting.pld.PLDAccountant``) or Rényi (``dp_accounting.rdp.RdpAccountant``).
    """
    k = check_int("readings", readings, minimum=0)
    dlt = check_probability("delta", delta, open_low=False)
    kind = check_choice("accountant", accountant, ACCOUNTANTS)
    event = dp_event(mechanism)
    if k == 0:
        return 0.0
    acc = _accountant(kind)
    if not acc.supports(event):
        raise InvalidParameterError(
            f"the {kind} accountant does not support {type(event).__name__}; use accountant='rdp'"
        )
    acc.compose(event, k)
    return float(acc.get_epsilon(dlt))


def advanced_composition(*, epsilon: float, delta: float, k: int, delta_prime: float) -> tuple[float, float]:
    r"""Advanced composition (thesis Theorem 2.6; seed 001 slides): k-fold (ε, δ)-DP is
    :math:`(\sqrt{2k\ln(1/\delta')}\,\varepsilon + k\varepsilon(e^\varepsilon - 1),\ k\delta + \delta')`-DP.

    A generic upper bound for comparison; :func:`composed_epsilon` is tighter for the mechanisms here.
    Returns ``(epsilon_total, delta_total)``.
    """
    eps = check_real("epsilon", epsilon, low=0.0)
    dlt = check_probability("delta", delta, open_low=False)
    n = check_int("k", k, minimum=1)
    dp = check_probability("delta_prime", delta_prime)
    return math.sqrt(2 * n * math.log(1 / dp)) * eps + n * eps * math.expm1(eps), n * dlt + dp


class ReadingAccountant:
    """Budget of one secret over repeated readings; refuses a reading that would exceed it.

    Parameters
    ----------
    mechanism : Mechanism or privatizer
        What each reading is released with (see :func:`dp_event`).
    epsilon_budget : float
        Total ε allowed (> 0).
    delta_budget : float
        The δ at which the budget is measured, in [0, 1).
    accountant : {"pld", "rdp"}
        ``dp_accounting`` accountant used for the composition.

    Notes
    -----
    Count the readings according to the privacy level promised (module docstring): all readings
    for pattern-level privacy, the readings within the event's window for event-level privacy.
    """

    def __init__(self, *, mechanism: Any, epsilon_budget: float, delta_budget: float,
                 accountant: str = "pld") -> None:
        self.mechanism = mechanism
        self.epsilon_budget = check_real("epsilon_budget", epsilon_budget, low=0.0)
        self.delta_budget = check_probability("delta_budget", delta_budget, open_low=False)
        self.accountant = check_choice("accountant", accountant, ACCOUNTANTS)
        dp_event(mechanism)  # fail now, not at the first reading, if it cannot be accounted
        self._readings = 0

    @property
    def readings(self) -> int:
        """Readings charged so far."""
        return self._readings

    def spent_after(self, readings: int) -> PrivacySpent:
        """Cumulative (ε, δ_budget) after ``readings`` readings."""
        eps = composed_epsilon(self.mechanism, readings=readings, delta=self.delta_budget, accountant=self.accountant)
        return PrivacySpent(readings=int(readings), epsilon=eps, delta=self.delta_budget, accountant=self.accountant)

    def spent(self) -> PrivacySpent:
        """Cumulative (ε, δ_budget) of the readings charged so far."""
        return self.spent_after(self._readings)

    def charge(self, count: int = 1) -> PrivacySpent:
        """Charge ``count`` more readings, or raise :class:`BudgetExceededError` (nothing is charged then).

        Call it *before* releasing the readings.
        """
        n = check_int("count", count, minimum=1)
        after = self.spent_after(self._readings + n)
        if not after.epsilon <= self.epsilon_budget:
            raise BudgetExceededError(
                f"releasing {n} more reading(s) would spend epsilon={after.epsilon:.6g} at delta={self.delta_budget:g} "
                f"after {after.readings} readings, over the budget epsilon={self.epsilon_budget:g} "
                f"({self._readings} readings already charged)"
            )
        self._readings += n
        return after

    def remaining(self) -> int:
        """How many more readings fit in the budget (exponential then binary search on the count)."""
        def fits(extra: int) -> bool:
            return self.spent_after(self._readings + extra).epsilon <= self.epsilon_budget

        if not fits(1):
            return 0
        lo, hi = 1, 2
        while fits(hi):
            lo, hi = hi, hi * 2
            if hi > 2**20:
                return lo
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if fits(mid) else (lo, mid)
        return lo

    def __repr__(self) -> str:
        return (f"ReadingAccountant(readings={self._readings}, epsilon_budget={self.epsilon_budget:g}, "
                f"delta_budget={self.delta_budget:g}, accountant={self.accountant!r})")

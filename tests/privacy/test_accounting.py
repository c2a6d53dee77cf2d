"""Accounting over repeated readings.

Oracles: dp_accounting's PLD and RDP accountants called directly; the exact composition of k
Gaussian releases (a single Gaussian with sensitivity √k·Δ, whose ε is the inverse of Balle &
Wang's profile); k·ε for pure-DP Laplace; the advanced composition theorem (thesis Thm 2.6, an upper
bound the tight accountant must not exceed).
"""

from __future__ import annotations

import math

import dp_accounting
import pytest
from dp_accounting.pld import PLDAccountant
from dp_accounting.rdp import RdpAccountant

from dpcloak.errors import BudgetExceededError, InvalidParameterError
from dpcloak.privacy import (
    DiscreteGaussianMechanism,
    GaussianMechanism,
    KeyedPrivatizer,
    LaplaceMechanism,
    ReadingAccountant,
    SensorPrivatizer,
    composed_epsilon,
    gaussian_epsilon,
)
from dpcloak.privacy.accounting import advanced_composition, dp_event

MECH = GaussianMechanism(epsilon=1.0, delta=1e-5, sensitivity=0.4)
DELTA = 1e-5


def _direct(acc, k: int) -> float:  # type: ignore[no-untyped-def]
    acc.compose(dp_accounting.GaussianDpEvent(MECH.sigma / MECH.sensitivity), k)
    return float(acc.get_epsilon(DELTA))


@pytest.mark.parametrize("k", [1, 5, 30])
def test_k_readings_equal_dp_accounting_directly(k: int) -> None:
    assert composed_epsilon(MECH, readings=k, delta=DELTA) == _direct(PLDAccountant(), k)
    assert composed_epsilon(MECH, readings=k, delta=DELTA, accountant="rdp") == _direct(RdpAccountant(), k)


@pytest.mark.parametrize("k", [1, 5, 30])
def test_pld_matches_exact_gaussian_composition(k: int) -> None:
    exact = gaussian_epsilon(delta=DELTA, sigma=MECH.sigma, sensitivity=math.sqrt(k) * MECH.sensitivity)
    pld = composed_epsilon(MECH, readings=k, delta=DELTA)
    assert pld >= exact * (1 - 1e-6)  # the PLD accountant is pessimistic ...
    assert pld == pytest.approx(exact, rel=1e-3)  # ... and tight
    assert composed_epsilon(MECH, readings=k, delta=DELTA, accountant="rdp") >= exact
    eps_adv, delta_adv = advanced_composition(epsilon=1.0, delta=DELTA, k=k, delta_prime=1e-6)
    assert composed_epsilon(MECH, readings=k, delta=delta_adv) <= eps_adv


def test_laplace_composes_to_k_epsilon() -> None:
    lap = LaplaceMechanism(epsilon=0.5, sensitivity=2.0)
    assert composed_epsilon(lap, readings=6, delta=1e-12) == pytest.approx(3.0, rel=1e-6)
    assert composed_epsilon(lap, readings=0, delta=1e-12) == 0.0


def test_budget_refusal() -> None:
    acc = ReadingAccountant(mechanism=MECH, epsilon_budget=2.5, delta_budget=DELTA)
    allowed = acc.remaining()
    # the same count from dp_accounting directly
    assert allowed >= 2
    assert _direct(PLDAccountant(), allowed) <= 2.5 < _direct(PLDAccountant(), allowed + 1)
    for _ in range(allowed):
        spent = acc.charge()
    assert acc.readings == allowed and spent.epsilon <= 2.5 and spent.readings == allowed
    with pytest.raises(BudgetExceededError, match="over the budget"):
        acc.charge()
    assert acc.readings == allowed  # nothing was charged by the refused reading
    assert acc.remaining() == 0
    assert acc.spent() == spent


def test_charge_many_at_once_and_privatizer_unwrapping() -> None:
    priv = SensorPrivatizer(mechanism=MECH, n_sensors=4)
    acc = ReadingAccountant(mechanism=priv, epsilon_budget=2.0, delta_budget=DELTA, accountant="rdp")
    with pytest.raises(BudgetExceededError):
        acc.charge(1000)
    assert acc.readings == 0
    keyed = KeyedPrivatizer(mechanism=MECH, n_sensors=4, key=bytes(32))
    assert dp_event(keyed) == dp_event(MECH) == dp_accounting.GaussianDpEvent(MECH.sigma / MECH.sensitivity)


def test_discrete_gaussian_rdp_only() -> None:
    dg = DiscreteGaussianMechanism(epsilon=1.0, delta=1e-5, sensitivity=1.0)
    one = composed_epsilon(dg, readings=1, delta=1e-5, accountant="rdp")
    assert one <= 1.0 + 1e-9
    assert composed_epsilon(dg, readings=4, delta=1e-5, accountant="rdp") > one
    with pytest.raises(InvalidParameterError, match="rdp"):
        composed_epsilon(dg, readings=1, delta=1e-5, accountant="pld")


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

r"""Auditing privacy claims from samples (thesis Part IV): δ_ε, property testers, a black-box harness.

Anyone can claim "(ε, δ)-DP". This package tests such a claim from the mechanism's outputs, with
the property testers of McMillan's thesis (chapters 9–10), and runs them on dpcloak's own
mechanisms (``dpcloak audit``) so that a broken calibration is caught.

What is here
------------
* :mod:`~dpcloak.audit.divergence` — exact ``δ_ε(P‖Q) = max_E P(E) − e^ε Q(E)`` in both orders,
  the pure ``ε`` and the TV distance of two discrete distributions (:func:`delta_epsilon`,
  :func:`pure_epsilon`, :func:`total_variation`).
* :mod:`~dpcloak.audit.testers` — Algorithm 4 (:func:`adp_tester`, (ε, δ)-DP with no
  information, Poissonised, Theorem 10.8), Algorithm 5 (:func:`adp_fi_tester`, (ε, δ)-DP given the
  claimed output distributions, with the χ² :func:`identity_tester`, Proposition 10.10), Algorithm 6
  (:func:`pdp_fi_tester`, pure ε-DP given the claimed distributions, β from them, Theorem 10.11).
  Each takes ``alpha`` (thesis sample size) or ``budget`` (α solved from it) and returns a
  :class:`TesterResult`: verdict, statistic, threshold, queries per database, guaranteed proximity.
* :mod:`~dpcloak.audit.blackbox` — :func:`audit_blackbox` for any ``mechanism(database, rng)``
  and neighbouring pair(s), with a documented discretisation of the outputs; :func:`audit_random_pairs`
  for random-DP notions (Algorithm 3, §10.2).
* :mod:`~dpcloak.audit.events` — what binning throws away: distinguishing events on exact atoms
  (repeated output values, compared between the two inputs) and on the lowest mantissa bits, chosen
  on a pilot and tested on fresh outputs with a Hoeffding threshold (:func:`event_margin`,
  :func:`event_queries_needed`); run by :func:`audit_blackbox` next to the tester.
* :mod:`~dpcloak.audit.suite` — :func:`~dpcloak.audit.suite.run_suite`: dpcloak's mechanisms at
  their claims plus broken variants that must be rejected (the ``dpcloak audit`` command).

What the testers can verify
---------------------------
* **(ε, δ)-DP, no information** (Algorithm 4): a pair with ``δ_ε ≤ δ`` is accepted, a pair with
  ``δ_ε ≥ δ + 2α`` rejected, each with probability ≥ 2/3, using ``O(n(1+e^{2ε})/α²)`` queries per
  database for outputs in ``n`` bins. The lower bound ``Ω(max{n^{1−o(1)}, 1/α²})`` (Theorem 10.7)
  means α of the order of a deployment δ (10⁻⁵) is out of reach: about 1/δ² queries.
* **(ε, δ)-DP, full information** (Algorithm 5): given the claimed output distributions, only
  ``O(√n/α²)`` queries; violations ``δ_ε ≥ δ + (1+e^ε)α`` or samples ``α``-far in TV from the claim
  are rejected.
* **pure ε-DP, full information** (Algorithm 6): ``O(ln n/(α²β²))`` queries where β is the
  smallest claimed probability; guarantees ε' ≥ ε + 12α are rejected.
* **random DP** (Algorithm 3): whether at most a fraction γ of random neighbouring pairs violate.

What they cannot verify
-----------------------
* **Pure DP without side information is unverifiable** (Theorem 10.5): for every finite number of
  queries there are an ε-DP mechanism and one with arbitrarily large ε whose outputs differ only on
  an event too rare to be sampled. :func:`audit_blackbox` with ``δ = 0`` and no side information
  therefore only tests ``δ_ε ≤ 2α`` and says so in its notes. Even with side information, a claimed
  distribution with tiny probabilities (small β) makes verification expensive (Theorem 10.12).
* **Verifying is as hard as breaking** (Theorem 10.2): a tester using ``r`` queries per database
  yields, for any non-private mechanism, a way to tell two neighbouring databases apart from ``r``
  outputs. So a strong guarantee cannot be efficiently verifiable; the suite audits claims at
  parameters where a violation is detectable (e.g. ``(0.5, 0.05)``), not deployment parameters.
* **Only the discretised outputs are tested.** Continuous or vector outputs are projected and binned
  (:class:`Binning`); by post-processing an honest mechanism passes, but a violation confined to an
  event that is not a union of bins is invisible. The testers also assume the neighbouring pairs
  given are the worst ones (e.g. :func:`dpcloak.privacy.sensitivity.worst_neighbours`).
* **Floating-point attacks** (Mironov 2012) live in the low-order bits that binning discards. The
  event tests read the lowest mantissa bits one at a time: a bit written from the input is caught,
  and so is the float Gaussian's rounding structure when its claim is read for the released doubles
  (``claim_scope="released"``); the full attack — outputs impossible under the neighbour, found by
  replaying the sampler's arithmetic — needs white-box knowledge a sample test does not have. The
  exact discrete samplers of :mod:`dpcloak.privacy.discrete` are the defence, not this audit.

Corrections to the thesis found while implementing (details in the module docstrings): Theorem
10.8's proof has ``(1+e^{2ε})`` where Cauchy–Schwarz gives ``√(1+e^{2ε})`` (Algorithm 4's λ is the
right one); Theorem 10.11's chain gives proximity ``12α``, not ``10α``, and its λ needs the constant
``ln(6n)/(1−e^{−α})²`` instead of ``ln n/α²``; the lower-bound construction of Theorem 10.7 is
(ε, δ)-DP in one order only, and the side information of Theorem 10.12 is not ε-pDP (its second
outcome has ratio ``1/(2 − e^ε) > e^ε``).
"""

from dpcloak.audit.blackbox import (
    Binning,
    BlackBoxAudit,
    PairAudit,
    RandomPairAudit,
    RandomPairPlan,
    audit_blackbox,
    audit_random_pairs,
    random_pair_plan,
)
from dpcloak.audit.divergence import DeltaEpsilon, delta_epsilon, pure_epsilon, total_variation
from dpcloak.audit.events import EventCheck, event_margin, event_queries_needed
from dpcloak.audit.suite import SuiteReport, SuiteRow, run_suite
from dpcloak.audit.testers import (
    ACCEPT,
    REJECT,
    TesterResult,
    adp_fi_tester,
    adp_tester,
    adp_tester_queries,
    identity_tester,
    identity_tester_queries,
    pdp_fi_tester,
    pdp_fi_tester_queries,
)

__all__ = [
    "ACCEPT",
    "REJECT",
    "BlackBoxAudit",
    "Binning",
    "DeltaEpsilon",
    "EventCheck",
    "PairAudit",
    "RandomPairAudit",
    "RandomPairPlan",
    "SuiteReport",
    "SuiteRow",
    "TesterResult",
    "adp_fi_tester",
    "adp_tester",
    "adp_tester_queries",
    "audit_blackbox",
    "audit_random_pairs",
    "delta_epsilon",
    "event_margin",
    "event_queries_needed",
    "identity_tester",
    "identity_tester_queries",
    "pdp_fi_tester",
    "pdp_fi_tester_queries",
    "pure_epsilon",
    "random_pair_plan",
    "run_suite",
    "total_variation",
]

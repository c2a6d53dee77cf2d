"""Auditing privacy claims from samples (thesis Part IV): δ_ε, property testers, a black-box harness.

Placeholder docstring; the full documentation is written below.
"""

from dpcloak.audit.blackbox import (
    Binning,
    BlackBoxAudit,
    PairAudit,
    RandomPairAudit,
    audit_blackbox,
    audit_random_pairs,
    random_pair_plan,
)
from dpcloak.audit.divergence import DeltaEpsilon, delta_epsilon, pure_epsilon, total_variation
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
    "PairAudit",
    "RandomPairAudit",
    "TesterResult",
    "adp_fi_tester",
    "adp_tester",
    "adp_tester_queries",
    "audit_blackbox",
    "audit_random_pairs",
    "delta_epsilon",
    "identity_tester",
    "identity_tester_queries",
    "pdp_fi_tester",
    "pdp_fi_tester_queries",
    "pure_epsilon",
    "random_pair_plan",
    "total_variation",
]

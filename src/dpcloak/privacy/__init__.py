"""Privacy: sensitivities, mechanisms, per-sensor privatisation, accounting, Fisher-information noise."""

from dpcloak.privacy.accounting import (
    PrivacyReport,
    PrivacySpent,
    ReadingAccountant,
    composed_epsilon,
    dp_event,
    privacy_report,
    privacy_spent,
    zcdp_epsilon,
)
from dpcloak.privacy.discrete import DiscreteGaussianMechanism, DiscreteLaplaceMechanism
from dpcloak.privacy.local import KeyedPrivatizer, KeyedRelease, SensorPrivatizer
from dpcloak.privacy.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    Mechanism,
    PrivacyGuarantee,
    QuantileNoise,
    gaussian_delta,
    gaussian_epsilon,
)
from dpcloak.privacy.sensitivity import condition_number, l2_sensitivity

__all__ = [
    "l2_sensitivity",
    "condition_number",
    "Mechanism",
    "QuantileNoise",
    "PrivacyGuarantee",
    "GaussianMechanism",
    "LaplaceMechanism",
    "gaussian_delta",
    "gaussian_epsilon",
    "DiscreteGaussianMechanism",
    "DiscreteLaplaceMechanism",
    "SensorPrivatizer",
    "KeyedPrivatizer",
    "KeyedRelease",
    "ReadingAccountant",
    "PrivacySpent",
    "PrivacyReport",
    "composed_epsilon",
    "privacy_spent",
    "privacy_report",
    "zcdp_epsilon",
    "dp_event",
]

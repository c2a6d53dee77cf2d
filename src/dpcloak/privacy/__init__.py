"""Privacy: sensitivities, mechanisms, per-sensor privatisation, accounting, Fisher-information noise."""

from dpcloak.privacy.accounting import PrivacySpent, ReadingAccountant, composed_epsilon, dp_event
from dpcloak.privacy.discrete import DiscreteGaussianMechanism, DiscreteLaplaceMechanism
from dpcloak.privacy.local import KeyedPrivatizer, SensorPrivatizer
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
    "ReadingAccountant",
    "PrivacySpent",
    "composed_epsilon",
    "dp_event",
]

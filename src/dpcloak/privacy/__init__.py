"""Privacy: sensitivities, mechanisms, per-sensor privatisation, accounting, Fisher-information noise."""

from dpcloak.privacy.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    Mechanism,
    PrivacyGuarantee,
    gaussian_delta,
    gaussian_epsilon,
)
from dpcloak.privacy.sensitivity import condition_number, l2_sensitivity

__all__ = [
    "l2_sensitivity",
    "condition_number",
    "Mechanism",
    "PrivacyGuarantee",
    "GaussianMechanism",
    "LaplaceMechanism",
    "gaussian_delta",
    "gaussian_epsilon",
]

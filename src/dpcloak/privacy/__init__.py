"""Privacy: sensitivities, mechanisms, per-sensor privatisation, accounting, Fisher-information noise."""

from dpcloak.privacy.sensitivity import condition_number, l2_sensitivity

__all__ = ["l2_sensitivity", "condition_number"]

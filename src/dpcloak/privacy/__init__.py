"""Privacy: sensitivities, mechanisms, per-sensor privatisation, accounting, Fisher-information noise."""

from typing import TYPE_CHECKING

from dpcloak._lazy import lazy_exports

if TYPE_CHECKING:
    from dpcloak.privacy.accounting import (
        PrivacyReport,
        PrivacySpent,
        ReadingAccountant,
        ReleaseEvent,
        compose,
        composed_epsilon,
        dp_event,
        privacy_report,
        privacy_spent,
        release_event,
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
    "ReleaseEvent",
    "compose",
    "release_event",
    "PrivacySpent",
    "PrivacyReport",
    "composed_epsilon",
    "privacy_spent",
    "privacy_report",
    "zcdp_epsilon",
    "dp_event",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "PrivacyReport": "dpcloak.privacy.accounting",
    "PrivacySpent": "dpcloak.privacy.accounting",
    "ReadingAccountant": "dpcloak.privacy.accounting",
    "ReleaseEvent": "dpcloak.privacy.accounting",
    "compose": "dpcloak.privacy.accounting",
    "release_event": "dpcloak.privacy.accounting",
    "composed_epsilon": "dpcloak.privacy.accounting",
    "dp_event": "dpcloak.privacy.accounting",
    "privacy_report": "dpcloak.privacy.accounting",
    "privacy_spent": "dpcloak.privacy.accounting",
    "zcdp_epsilon": "dpcloak.privacy.accounting",
    "DiscreteGaussianMechanism": "dpcloak.privacy.discrete",
    "DiscreteLaplaceMechanism": "dpcloak.privacy.discrete",
    "KeyedPrivatizer": "dpcloak.privacy.local",
    "KeyedRelease": "dpcloak.privacy.local",
    "SensorPrivatizer": "dpcloak.privacy.local",
    "GaussianMechanism": "dpcloak.privacy.mechanisms",
    "LaplaceMechanism": "dpcloak.privacy.mechanisms",
    "Mechanism": "dpcloak.privacy.mechanisms",
    "PrivacyGuarantee": "dpcloak.privacy.mechanisms",
    "QuantileNoise": "dpcloak.privacy.mechanisms",
    "gaussian_delta": "dpcloak.privacy.mechanisms",
    "gaussian_epsilon": "dpcloak.privacy.mechanisms",
    "condition_number": "dpcloak.privacy.sensitivity",
    "l2_sensitivity": "dpcloak.privacy.sensitivity",
})

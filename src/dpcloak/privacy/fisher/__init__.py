"""Farokhi–Sandberg optimal additive noise (Farokhi & Sandberg) with Fisher-information (Cramér–Rao) guarantees.

These mechanisms minimise the Fisher information an observer gets about the private value; their
guarantee is a lower bound on the error of any *unbiased* estimator — **not** differential privacy.
:mod:`dpcloak.privacy.fisher.dp` relates them to DP (Propositions 3–4 of Farokhi & Sandberg).
"""

from dpcloak.privacy.fisher.bounded import (
    BoundedOptimalNoise,
    corollary2_kappa,
    corollary2_quality_published,
    cos2_fisher_information,
)
from dpcloak.privacy.fisher.convex_check import DiscretisedOptimum, solve_discretised_problem2
from dpcloak.privacy.fisher.dp import (
    LaplaceGaussianComparison,
    ResidualRange,
    compare_laplace_gaussian,
    example2_error_bound,
    gaussian_dp_condition,
    laplace_epsilon_at_quality,
    laplace_scale,
    laplace_scale_published,
    residual_range,
    weighted_average_sensitivity,
)
from dpcloak.privacy.fisher.dynamic import (
    DynamicOptimalNoise,
    example4_error_published,
    example4_quality_published,
    observability_matrix,
    vehicle_model,
)
from dpcloak.privacy.fisher.gaussian import GaussianOptimalNoise, problem3_objective
from dpcloak.privacy.fisher.information import (
    FisherGuarantee,
    FisherInformation,
    cramer_rao_bound,
    fisher_information_1d,
    product_fisher_information,
    quality_1d,
    query_fisher_information,
)
from dpcloak.privacy.fisher.weighted import WeightedOptimalNoise, tilted_cos2_integral, weighted_cost

__all__ = [
    "BoundedOptimalNoise",
    "DiscretisedOptimum",
    "DynamicOptimalNoise",
    "FisherGuarantee",
    "FisherInformation",
    "GaussianOptimalNoise",
    "LaplaceGaussianComparison",
    "ResidualRange",
    "WeightedOptimalNoise",
    "compare_laplace_gaussian",
    "corollary2_kappa",
    "corollary2_quality_published",
    "cos2_fisher_information",
    "cramer_rao_bound",
    "example2_error_bound",
    "example4_error_published",
    "example4_quality_published",
    "fisher_information_1d",
    "gaussian_dp_condition",
    "laplace_epsilon_at_quality",
    "laplace_scale",
    "laplace_scale_published",
    "observability_matrix",
    "problem3_objective",
    "product_fisher_information",
    "quality_1d",
    "query_fisher_information",
    "residual_range",
    "solve_discretised_problem2",
    "tilted_cos2_integral",
    "vehicle_model",
    "weighted_average_sensitivity",
    "weighted_cost",
]

"""Numerical Fisher information, Cramér–Rao bound and Q (Farokhi & Sandberg, §2–3).

Oracles: closed-form Fisher information of the Gaussian (1/σ²) and Laplace (1/b²) location
families, and hand-computed matrix algebra.
"""

import math

import numpy as np
import pytest

from dpcloak.errors import InvalidParameterError
from dpcloak.privacy.fisher import (
    FisherInformation,
    cramer_rao_bound,
    fisher_information_1d,
    product_fisher_information,
    quality_1d,
    query_fisher_information,
)


def gauss(sigma):
    return lambda w: math.exp(-0.5 * (w / sigma) ** 2) / (sigma * math.sqrt(2 * math.pi))


def test_gaussian_fisher_information_is_inverse_variance():
    for sigma in (0.3, 1.0, 2.5):
        fd = fisher_information_1d(gauss(sigma))
        exact = fisher_information_1d(gauss(sigma), derivative=lambda w, s=sigma: -w / s**2 * gauss(s)(w))
        assert fd.trace == pytest.approx(1 / sigma**2, rel=1e-6)
        assert exact.trace == pytest.approx(1 / sigma**2, rel=1e-9)


def test_laplace_fisher_information_is_inverse_square_scale():
    b = 0.7
    lap = lambda w: math.exp(-abs(w) / b) / (2 * b)  # noqa: E731
    info = fisher_information_1d(lap, points=[0.0])
    assert info.trace == pytest.approx(1 / b**2, rel=1e-6)


def test_quality_1d_is_second_moment():
    assert quality_1d(gauss(1.5)) == pytest.approx(1.5**2, rel=1e-9)


def test_product_and_query_fisher_information():
    parts = [FisherInformation(np.array([[2.0]]), 0.0, "a"), FisherInformation(np.array([[5.0]]), 0.0, "b")]
    prod = product_fisher_information(parts)
    np.testing.assert_allclose(prod.matrix, np.diag([2.0, 5.0]))
    c = np.array([[1.0, 2.0, 0.0], [0.0, 1.0, 1.0]])
    q = query_fisher_information(prod, c)
    np.testing.assert_allclose(q.matrix, c.T @ np.diag([2.0, 5.0]) @ c)
    with pytest.raises(InvalidParameterError, match="query"):
        query_fisher_information(prod, np.ones((3, 2)))


def test_cramer_rao_bound_trace_inverse_and_singular_case():
    m = np.array([[4.0, 1.0], [1.0, 3.0]])
    bound = cramer_rao_bound(m)
    assert bound.applies and bound.kind == "lower"
    assert bound.value == pytest.approx(np.trace(np.linalg.inv(m)))
    singular = cramer_rao_bound(np.outer([1.0, 2.0], [1.0, 2.0]))
    assert not singular.applies and math.isnan(singular.value)
    with pytest.raises(InvalidParameterError):
        cramer_rao_bound(np.ones((2, 3)))


def test_bad_supports_raise():
    with pytest.raises(InvalidParameterError, match="low must be < high"):
        fisher_information_1d(gauss(1.0), low=1.0, high=1.0)
    with pytest.raises(InvalidParameterError):
        quality_1d(gauss(1.0), low=2.0, high=-1.0)
    with pytest.raises(InvalidParameterError):
        product_fisher_information([])


def test_fisher_information_checks_its_matrix_at_construction() -> None:
    """A plain list is accepted as an array (and then works in a query); a non-square, non-finite or
    non-numeric matrix is refused with a one-line error naming it, not an AttributeError later."""
    J = FisherInformation(matrix=[[4.0, 0.0], [0.0, 1.0]], error_estimate=0.0, source="closed form")
    summed = query_fisher_information(J, [[1.0, 1.0], [0.0, 1.0]]).matrix
    np.testing.assert_array_equal(summed, [[4.0, 4.0], [4.0, 5.0]])
    for bad, message in (([[1.0, 2.0, 3.0]], "square"), ([[float("nan")]], "finite"), ("abc", "array of numbers")):
        with pytest.raises(InvalidParameterError, match=f"matrix must .*{message}"):
            FisherInformation(matrix=bad, error_estimate=0.0, source="x")  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="error_estimate"):
        FisherInformation(matrix=[[1.0]], error_estimate=-1.0, source="x")  # type: ignore[arg-type]

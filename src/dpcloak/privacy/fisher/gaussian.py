r"""Corollary 6 of Farokhi & Sandberg: the optimal unbounded noise is Gaussian.

For :math:`\mathcal W = \mathbb R^m`, a linear query :math:`f(x) = Cx` with full row rank ``C`` and a
constant weight, the minimiser of Problem 3 (:math:`\mathcal J + \varrho\mathcal Q`) and of Problem 4
(:math:`\mathcal J` subject to :math:`\mathcal Q \le \vartheta`) is :math:`\mathcal N(0, \Sigma)` with

* Problem 4: :math:`\Sigma = \vartheta (CC^\top)^{1/2} / \operatorname{Tr}((CC^\top)^{1/2})` (as printed);
* Problem 3: :math:`\Sigma = (CC^\top)^{1/2}/\sqrt\varrho` (**corrected**).

Discrepancy (Problem 3)
-----------------------
Corollary 6 prints :math:`\Sigma = 2(CC^\top)^{1/2}/\sqrt\varrho`. For a Gaussian the objective is
:math:`\operatorname{Tr}(C^\top\Sigma^{-1}C) + \varrho\operatorname{Tr}\Sigma`, whose stationarity
condition :math:`\Sigma^{-1}CC^\top\Sigma^{-1} = \varrho I` gives :math:`\Sigma = (CC^\top)^{1/2}/\sqrt\varrho`;
the paper's own PDE (15) with :math:`u = \alpha e^{-w^\top\Sigma^{-1}w/4}` (Appendix J) gives the
same, and the sentence after Corollary 6 states the covariance without the 2. Where the 2 comes from
is visible in Appendix K (Theorem 4, same ansatz): for :math:`u = \alpha e^{-w^\top P w/4}`, :math:`P = \Sigma^{-1}`,
:math:`\operatorname{Tr}(D^2u) = u\,[\tfrac14 w^\top P^2 w - \tfrac12\operatorname{Tr}P]`, and the paper drops
the :math:`\tfrac14` of the first term; matching :math:`w^\top P^2 w` instead of :math:`\tfrac14 w^\top P^2 w`
with :math:`(\varrho/4)\,w^\top(\cdot)w` turns :math:`\Sigma` into :math:`2\Sigma` (sympy,
``tests/errata/test_farokhi_sandberg.py``). With the printed
factor the objective is 25 % larger in the scalar case (:math:`2.5\sqrt\varrho` against
:math:`2\sqrt\varrho`). ``convention="published"`` reproduces the printed covariance. Appendix J's
normalisation :math:`\alpha = 1/\sqrt{(2\pi)^m\det\Sigma}` should be its square root (α normalises
:math:`u = \sqrt\gamma`), as Appendix K has it.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcloak._rng import RngLike, as_generator
from dpcloak._validation import check_array, check_choice, check_int, check_real
from dpcloak.bound import Bound
from dpcloak.errors import InvalidParameterError
from dpcloak.privacy.fisher.information import FisherGuarantee, FisherInformation, cramer_rao_bound, fisher_guarantee
from dpcloak.privacy.mechanisms import check_values

__all__ = ["GaussianOptimalNoise", "problem3_objective", "CONVENTIONS"]

CONVENTIONS = ("corrected", "published")


def sample_shape(size: int | tuple[int, ...] | None) -> tuple[int, ...]:
    """The batch shape a ``sample(size)`` call asks for: ``()`` for ``None``, else the validated sizes."""
    if size is None:
        return ()
    if isinstance(size, tuple):
        return tuple(check_int("size", s, minimum=0) for s in size)
    return (check_int("size", size, minimum=0),)


def check_matrix(name: str, value: ArrayLike, *, square: bool = False) -> NDArray[np.float64]:
    """A finite 2-D float matrix (a 1-D array is read as one row)."""
    arr = check_array(name, value, dtype=float)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise InvalidParameterError(f"{name} must be a matrix, got an array of shape {arr.shape}", parameter=name)
    if square and arr.shape[0] != arr.shape[1]:
        raise InvalidParameterError(f"{name} must be square, got shape {arr.shape}", parameter=name)
    return arr


def psd_sqrt(matrix: NDArray[np.float64], *, inverse: bool = False, name: str = "matrix") -> NDArray[np.float64]:
    """Symmetric square root (or inverse square root) of a positive-definite matrix.

    Raises :class:`~dpcloak.errors.InvalidParameterError` if the matrix is singular (relative
    eigenvalue below 1e-12).
    """
    eig, vec = np.linalg.eigh(0.5 * (matrix + matrix.T))
    if eig[-1] <= 0.0 or eig[0] <= 1e-12 * eig[-1]:
        raise InvalidParameterError(
            f"{name} must be positive definite (invertible); its eigenvalues range over [{eig[0]:.3g}, {eig[-1]:.3g}]",
            parameter=name
        )
    power = -0.5 if inverse else 0.5
    return (vec * eig**power) @ vec.T


def problem3_objective(covariance: ArrayLike, *, query: ArrayLike, rho: float) -> float:
    r"""Problem 3's cost for Gaussian noise :math:`\mathcal N(0,\Sigma)`.

    :math:`\operatorname{Tr}(C^\top\Sigma^{-1}C) + \varrho\operatorname{Tr}\Sigma` (Fisher information plus ϱ Q).

    Examples
    --------
    The covariance of :class:`GaussianOptimalNoise` minimises it:

    >>> C = [[1.0, 0.0], [0.0, 2.0]]
    >>> best = GaussianOptimalNoise(query=C, rho=4.0).covariance
    >>> problem3_objective(best, query=C, rho=4.0), problem3_objective(2 * best, query=C, rho=4.0)
    (12.0, 15.0)
    """
    sigma = check_matrix("covariance", covariance, square=True)
    c = check_matrix("query", query)
    if c.shape[0] != sigma.shape[0]:
        raise InvalidParameterError(f"query must have {sigma.shape[0]} rows to match covariance, got {c.shape}",
                                    parameter="query")
    r = check_real("rho", rho, low=0.0)
    return float(np.trace(c.T @ np.linalg.solve(sigma, c)) + r * np.trace(sigma))


class GaussianOptimalNoise:
    r"""Gaussian noise of Corollary 6 (Farokhi & Sandberg) for the query ``y = Cx + w``.

    Parameters
    ----------
    query : array_like, shape (m, n)
        ``C`` (full row rank; a 1-D array is one row).
    rho : float, optional
        Problem 3's weight ϱ > 0 on the quality Q.
    theta : float, optional
        Problem 4's bound ϑ > 0 on Q. Exactly one of ``rho`` and ``theta``.
    convention : {"corrected", "published"}
        Problem 3 only: ``Σ = (CCᵀ)^{1/2}/√ϱ`` (corrected, the minimiser) or the printed
        ``2(CCᵀ)^{1/2}/√ϱ``.

    Privacy guarantee
    -----------------
    **Not (by itself) differential privacy.** Every unbiased estimator of the m released values
    has expected squared error at least :math:`\operatorname{Tr}\Sigma` (Proposition 1:
    the noise Fisher information is :math:`\Sigma^{-1}`). For (ε, δ)-DP of the weighted average see
    :func:`dpcloak.privacy.fisher.dp.gaussian_dp_condition` (Proposition 4).

    Examples
    --------
    >>> noise = GaussianOptimalNoise(query=[[1.0, 0.0], [0.0, 2.0]], rho=4.0)
    >>> noise.covariance.tolist()  # (CCᵀ)^{1/2} / √ϱ
    [[0.5, 0.0], [0.0, 1.0]]
    >>> noise.cramer_rao_bound().value, noise.quality()
    (1.5, 1.5)
    >>> noise.sample(3, rng=0).shape  # simulation seed
    (3, 2)
    >>> GaussianOptimalNoise(query=[1.0, 1.0], theta=0.5).quality()  # Problem 4: Q = ϑ
    0.5

    >>> noise.fisher_information().matrix.tolist()  # Σ⁻¹
    [[2.0, 0.0], [0.0, 1.0]]
    >>> noise.query_fisher_information().matrix.tolist()  # Cᵀ Σ⁻¹ C, about x
    [[2.0, 0.0], [0.0, 4.0]]
    >>> noise.objective()  # Problem 3's cost at the optimum
    12.0
    """

    def __init__(self, *, query: ArrayLike, rho: float | None = None, theta: float | None = None,
                 convention: str = "corrected") -> None:
        c = check_matrix("query", query)
        self.query = c
        self.convention = check_choice("convention", convention, CONVENTIONS)
        if (rho is None) == (theta is None):
            raise InvalidParameterError("give exactly one of rho (Problem 3) and theta (Problem 4)",
                                        parameter="rho", allowed="exactly one of rho and theta")
        gram = c @ c.T
        rank = int(np.linalg.matrix_rank(c))
        if rank < c.shape[0]:
            raise InvalidParameterError(f"query must have full row rank {c.shape[0]}, got rank {rank}",
                                        parameter="query")
        root = psd_sqrt(gram, name="C C^T")
        self.rho: float | None = None
        self.theta: float | None = None
        if rho is not None:
            self.rho = check_real("rho", rho, low=0.0)
            factor = 2.0 if self.convention == "published" else 1.0
            cov = factor * root / math.sqrt(self.rho)
        else:
            self.theta = check_real("theta", theta, low=0.0)
            cov = self.theta * root / float(np.trace(root))
        self.covariance: NDArray[np.float64] = 0.5 * (cov + cov.T)
        self.m = int(c.shape[0])
        self._chol = np.linalg.cholesky(self.covariance)

    def sample(self, size: int | tuple[int, ...] | None = None, *, rng: RngLike = None) -> NDArray[np.float64]:
        """Draw noise vectors: shape ``size + (m,)``."""
        z = as_generator(rng).standard_normal((*sample_shape(size), self.m))
        return np.asarray(z @ self._chol.T)

    def privatize(self, values: ArrayLike, *, rng: RngLike = None) -> NDArray[np.float64]:
        """``values + w``: last axis of length m (for m = 1, every entry gets its own noise)."""
        x = check_values(values)
        gen = as_generator(rng)
        if self.m == 1:
            return x + math.sqrt(float(self.covariance[0, 0])) * gen.standard_normal(x.shape)
        if x.ndim == 0 or x.shape[-1] != self.m:
            raise InvalidParameterError(f"values must have last axis of length m={self.m}, got shape {x.shape}",
                                        parameter="values")
        return x + gen.standard_normal(x.shape) @ self._chol.T

    def fisher_information(self) -> FisherInformation:
        """Noise Fisher information ``Σ⁻¹`` (m × m)."""
        return FisherInformation(matrix=np.asarray(np.linalg.inv(self.covariance), dtype=float), error_estimate=0.0,
                                 source="Gaussian location family: Sigma^-1")

    def query_fisher_information(self) -> FisherInformation:
        """Fisher information about ``x``: ``Cᵀ Σ⁻¹ C`` (n × n)."""
        return FisherInformation(matrix=self.query.T @ np.linalg.solve(self.covariance, self.query),
                                 error_estimate=0.0, source="C^T Sigma^-1 C (Farokhi & Sandberg, Section 3)")

    def cramer_rao_bound(self) -> Bound:
        """Proposition 1 for the released values ``Cx``: ``Tr Σ``."""
        return cramer_rao_bound(self.fisher_information())

    def quality(self) -> float:
        """Q = E‖w‖² = Tr Σ."""
        return float(np.trace(self.covariance))

    def objective(self) -> float:
        """Problem 3's cost ``Tr(CᵀΣ⁻¹C) + ϱ Tr Σ`` (needs ``rho``)."""
        if self.rho is None:
            raise InvalidParameterError("objective() is Problem 3's cost: construct with rho", parameter="objective")
        return problem3_objective(self.covariance, query=self.query, rho=self.rho)

    def guarantee(self) -> FisherGuarantee:
        """The Fisher-information guarantee (labelled: NOT differential privacy)."""
        return fisher_guarantee(self, source="Farokhi & Sandberg, Corollary 6 and Proposition 1")

    def __repr__(self) -> str:
        how = f"rho={self.rho:g}, convention={self.convention!r}" if self.rho is not None else f"theta={self.theta:g}"
        return f"GaussianOptimalNoise(m={self.m}, {how}) [Farokhi & Sandberg Cor. 6]"

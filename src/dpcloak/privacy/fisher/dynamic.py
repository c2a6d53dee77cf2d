r"""Theorem 4 of Farokhi & Sandberg: optimal noise for a whole trajectory of a linear time-invariant system.

The private value is the initial state :math:`x_0` of :math:`x[k+1] = Ax[k]`; the responses
:math:`y[k] = Cx[k] + w[k]`, :math:`k = 0..T`, stack into :math:`y_T = \Psi_T x_0 + w_T` with
:math:`\Psi_T = [C; CA; \dots; CA^T]`. Theorem 4's noise is :math:`w_T = \Psi_T z`,
:math:`z \sim \mathcal N(0, \Sigma)` — a random offset of the initial state propagated through the
dynamics. Then the Fisher information about :math:`x_0` is :math:`\Sigma^{-1}` (the least-squares
smoother :math:`\hat x_0 = (\Psi_T^\top\Psi_T)^{-1}\Psi_T^\top y_T = x_0 + z` attains the bound
:math:`\operatorname{Tr}\Sigma`) and :math:`\mathcal Q = \operatorname{Tr}(\Psi_T^\top\Psi_T\,\Sigma)`.

Discrepancies (checked in the tests)
------------------------------------
* **Covariance factor.** Theorem 4 prints :math:`\Sigma = 2(\Psi_T^\top\Psi_T)^{-1/2}/\sqrt\varrho`.
  Minimising :math:`\operatorname{Tr}(\Sigma^{-1}) + \varrho\operatorname{Tr}(\Psi_T^\top\Psi_T\Sigma)`
  (and Appendix K's own PDE with :math:`\bar u = \alpha e^{-z^\top\Sigma^{-1}z/4}`) gives
  :math:`\Sigma = (\Psi_T^\top\Psi_T)^{-1/2}/\sqrt\varrho` — the same factor-2 slip as Corollary 6.
  Its source is Appendix K's Hessian: :math:`\operatorname{Tr}(D^2\bar u) = \bar u\,[\tfrac14 z^\top\Sigma^{-2}z
  - \tfrac12\operatorname{Tr}\Sigma^{-1}]`, printed without the :math:`\tfrac14` (and without :math:`\bar u`
  on the second term); with it the PDE gives :math:`\Sigma^{-2} = \varrho\Psi_T^\top\Psi_T`, without it
  :math:`\Sigma^{-2} = \varrho\Psi_T^\top\Psi_T/4`, the printed factor 2 (sympy and the PDE residual in
  ``tests/errata/test_farokhi_sandberg.py``).
  ``convention="published"`` keeps the printed factor; Example 4's printed closed forms follow it.
* **Example 4's growth rate.** The paper concludes
  :math:`\mathbb E\|\hat x_0 - x_0\|^2 = O(1/(T\sqrt T\sqrt\varrho))`. Its own closed form is
  dominated by the small eigenvalue :math:`\lambda_- \sim (T+1)/4` of the Gramian, so the bound
  decays only like :math:`4/\sqrt{T\varrho}` (``O(T^{-1/2})``, printed convention); ``Q`` does grow
  like :math:`T^{3/2}` (:math:`\approx 2T^{3/2}/\sqrt{3\varrho}`, printed convention). Keeping the
  privacy level fixed therefore needs :math:`\varrho \propto 1/T` and costs
  :math:`\mathcal Q = O(T^2)`, not :math:`O(T^3)`.
* **Trace inequality.** §4 states
  :math:`\operatorname{Tr}(\mathcal I^{-1}) \ge (T+1)^2n^2/\operatorname{Tr}(\mathcal I)`.
  Proposition 5 gives :math:`n^2/\operatorname{Tr}(\mathcal I)` (``I`` is n × n); the extra
  :math:`(T+1)^2` makes it false (Example 4 violates it for every T ≥ 1).
* Example 4 says "if T > 2"; the Gramian is already invertible for T ≥ 1 (T ≥ n − 1 suffices for
  an observable pair, sharper than Remark 8's T ≥ n).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcloak._rng import RngLike, as_generator
from dpcloak._validation import check_choice, check_int, check_real
from dpcloak.bound import Bound
from dpcloak.errors import InvalidParameterError
from dpcloak.privacy.fisher.gaussian import CONVENTIONS, check_matrix, psd_sqrt
from dpcloak.privacy.fisher.information import FisherGuarantee, FisherInformation, cramer_rao_bound, fisher_guarantee
from dpcloak.privacy.mechanisms import check_values

__all__ = [
    "DynamicOptimalNoise",
    "observability_matrix",
    "vehicle_model",
    "example4_quality_published",
    "example4_error_published",
]


def observability_matrix(A: ArrayLike, C: ArrayLike, *, horizon: int) -> NDArray[np.float64]:
    r""":math:`\Psi_T = [C; CA; \dots; CA^T]`, shape ((T+1)m, n).

    Examples
    --------
    >>> A, C = vehicle_model()
    >>> observability_matrix(A, C, horizon=2).tolist()  # C, CA, CA²: positions after 0, 1, 2 steps
    [[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]]
    """
    a = check_matrix("A", A, square=True)
    c = check_matrix("C", C)
    if c.shape[1] != a.shape[0]:
        raise InvalidParameterError(f"C must have {a.shape[0]} columns to match A, got shape {c.shape}",
                                    parameter="C", allowed=f"{a.shape[0]} columns", got=c.shape)
    t = check_int("horizon", horizon, minimum=0)
    blocks = [c]
    for _ in range(t):
        blocks.append(blocks[-1] @ a)
    return np.vstack(blocks)



def vehicle_model() -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Example 4's vehicle on a road: ``A = [[1, 1], [0, 1]]`` (position, speed), ``C = [1, 0]``.

    Examples
    --------
    >>> A, C = vehicle_model()
    >>> A.tolist(), C.tolist()
    ([[1.0, 1.0], [0.0, 1.0]], [[1.0, 0.0]])
    """
    return np.array([[1.0, 1.0], [0.0, 1.0]]), np.array([[1.0, 0.0]])


def _example4_terms(horizon: int) -> tuple[float, float]:
    t = float(check_int("horizon", horizon, minimum=1))
    root_delta = math.sqrt(4 * t**4 + 4 * t**3 + 13 * t**2 - 12 * t + 36)
    base = 2 * t**2 + t + 6
    return (t + 1) * (base - root_delta), (t + 1) * (base + root_delta)


def example4_quality_published(*, horizon: int, rho: float) -> float:
    r"""Example 4's printed quality Q.

    .. math:: \mathcal Q = \frac{\sqrt{(T+1)(2T^2+T+6-\sqrt\Delta)}
              + \sqrt{(T+1)(2T^2+T+6+\sqrt\Delta)}}{\sqrt{3\varrho}},
              \quad \Delta = 4T^4 + 4T^3 + 13T^2 - 12T + 36.

    Matches :class:`DynamicOptimalNoise` with ``convention="published"`` (twice the corrected value).

    Examples
    --------
    Equal to the printed convention of :class:`DynamicOptimalNoise`:

    >>> A, C = vehicle_model()
    >>> noise = DynamicOptimalNoise(A=A, C=C, horizon=3, rho=1.0, convention="published")
    >>> round(example4_quality_published(horizon=3, rho=1.0), 9) == round(noise.quality(), 9)
    True
    """
    r = check_real("rho", rho, low=0.0)
    lo, hi = _example4_terms(horizon)
    return (math.sqrt(lo) + math.sqrt(hi)) / math.sqrt(3.0 * r)


def example4_error_published(*, horizon: int, rho: float) -> float:
    r"""Example 4's printed estimation error (the Cramér–Rao bound on x₀).

    .. math:: \frac{4\sqrt3}{\sqrt\varrho}\Big(\frac{1}{\sqrt{(T+1)(2T^2+T+6-\sqrt\Delta)}}
              + \frac{1}{\sqrt{(T+1)(2T^2+T+6+\sqrt\Delta)}}\Big)

    Matches :class:`DynamicOptimalNoise` with ``convention="published"`` (twice the corrected value).

    Examples
    --------
    Equal to the printed convention of :class:`DynamicOptimalNoise` (twice the corrected value):

    >>> A, C = vehicle_model()
    >>> published = DynamicOptimalNoise(A=A, C=C, horizon=3, rho=1.0, convention="published")
    >>> corrected = DynamicOptimalNoise(A=A, C=C, horizon=3, rho=1.0)
    >>> round(example4_error_published(horizon=3, rho=1.0), 9) == round(published.cramer_rao_bound().value, 9)
    True
    >>> round(published.cramer_rao_bound().value / corrected.cramer_rao_bound().value, 9)
    2.0
    """
    r = check_real("rho", rho, low=0.0)
    lo, hi = _example4_terms(horizon)
    return 4.0 * math.sqrt(3.0) / math.sqrt(r) * (1.0 / math.sqrt(lo) + 1.0 / math.sqrt(hi))


class DynamicOptimalNoise:
    r"""Theorem 4 (Farokhi & Sandberg): trajectory noise ``w_T = Ψ_T z`` protecting the initial state of an LTI system.

    Parameters
    ----------
    A : array_like, shape (n, n)
        State transition matrix.
    C : array_like, shape (m, n)
        Output (query) matrix.
    horizon : int
        Last time step T (the trajectory has T + 1 responses).
    rho : float
        Weight ϱ > 0 of the quality in Problem 3.
    convention : {"corrected", "published"}
        ``Σ = (ΨᵀΨ)^{-1/2}/√ϱ`` (corrected, the minimiser) or the printed ``2(ΨᵀΨ)^{-1/2}/√ϱ``.

    Raises
    ------
    InvalidParameterError
        If (A, C) is not observable, or the Gramian ``Ψ_TᵀΨ_T`` is singular (horizon too short).

    Privacy guarantee
    -----------------
    **Not differential privacy.** Any unbiased estimator of :math:`x_0` from the whole released
    trajectory has :math:`\mathbb E\|\hat x_0 - x_0\|^2 \ge \operatorname{Tr}\Sigma` (Proposition 1;
    attained by least squares).

    Examples
    --------
    Protect the initial state (position 0, speed 1) of Example 4's vehicle over 4 observations:

    >>> import numpy as np
    >>> A, C = vehicle_model()
    >>> noise = DynamicOptimalNoise(A=A, C=C, horizon=3, rho=1.0)
    >>> trajectory = observability_matrix(A, C, horizon=3) @ np.array([0.0, 1.0])
    >>> trajectory.tolist()
    [0.0, 1.0, 2.0, 3.0]
    >>> noise.privatize(trajectory[:, None], rng=0).shape  # (T + 1, m); simulation seed
    (4, 1)
    >>> bool(np.allclose(noise.least_squares_estimate(trajectory[:, None]), [0.0, 1.0]))  # unbiased smoother
    True
    >>> round(noise.cramer_rao_bound().value, 4)  # no unbiased estimate of x₀ does better
    1.1607

    >>> z = noise.sample_offset(rng=0)  # one offset of the initial state per trajectory
    >>> noise.noise_trajectory(z).shape
    (4, 1)
    >>> bool(np.isclose(noise.objective(), noise.fisher_information().trace + noise.rho * noise.quality()))
    True
    """

    def __init__(self, *, A: ArrayLike, C: ArrayLike, horizon: int, rho: float, convention: str = "corrected") -> None:
        a = check_matrix("A", A, square=True)
        c = check_matrix("C", C)
        n = a.shape[0]
        obs = observability_matrix(a, c, horizon=max(n - 1, 0))
        rank = int(np.linalg.matrix_rank(obs))
        if rank < n:
            raise InvalidParameterError(
                f"(A, C) must be observable (Theorem 4 / Remark 8): the observability matrix has rank {rank} < n={n}",
                parameter="C", allowed=f"rank {n}", got=rank
            )
        self.horizon = check_int("horizon", horizon, minimum=0)
        self.rho = check_real("rho", rho, low=0.0)
        self.convention = check_choice("convention", convention, CONVENTIONS)
        self.A, self.C, self.n, self.m = a, c, n, int(c.shape[0])
        self.psi = observability_matrix(a, c, horizon=self.horizon)
        self.gramian = self.psi.T @ self.psi
        try:
            inv_root = psd_sqrt(self.gramian, inverse=True, name="Psi_T^T Psi_T")
        except InvalidParameterError as err:
            raise InvalidParameterError(
                f"{err}; the Gramian Psi_T^T Psi_T must be invertible (horizon={self.horizon}; "
                f"an observable pair needs horizon >= n - 1 = {n - 1})",
                parameter="horizon", allowed=f">= {n - 1}", got=self.horizon
            ) from None
        factor = 2.0 if self.convention == "published" else 1.0
        cov = factor * inv_root / math.sqrt(self.rho)
        self.covariance: NDArray[np.float64] = 0.5 * (cov + cov.T)
        self._chol = np.linalg.cholesky(self.covariance)

    def sample_offset(self, size: int | None = None, *, rng: RngLike = None) -> NDArray[np.float64]:
        """Draw the initial-state offsets ``z``: shape ``(n,)`` or ``(size, n)``."""
        shape = () if size is None else (check_int("size", size, minimum=0),)
        return np.asarray(as_generator(rng).standard_normal((*shape, self.n)) @ self._chol.T)

    def noise_trajectory(self, z: ArrayLike) -> NDArray[np.float64]:
        """``w[k] = C A^k z`` for k = 0..T: shape ``(..., T+1, m)`` for offsets of shape ``(..., n)``."""
        zz = check_values(z, name="z")
        if zz.ndim == 0 or zz.shape[-1] != self.n:
            raise InvalidParameterError(f"z must have last axis of length n={self.n}, got shape {zz.shape}",
                                        parameter="z", allowed=f"last axis of length {self.n}", got=zz.shape)
        flat = zz @ self.psi.T
        return flat.reshape((*zz.shape[:-1], self.horizon + 1, self.m))

    def privatize(self, values: ArrayLike, *, rng: RngLike = None) -> NDArray[np.float64]:
        """Privatize whole trajectories ``y[k] = C x[k]``: shape ``(..., T+1, m)``, one offset per trajectory."""
        y = check_values(values)
        want = (self.horizon + 1, self.m)
        if y.ndim < 2 or y.shape[-2:] != want:
            raise InvalidParameterError(f"values must have trailing shape {want} (T+1 steps, m outputs), got {y.shape}",
                                        parameter="values")
        batch = y.shape[:-2]
        z = as_generator(rng).standard_normal((*batch, self.n)) @ self._chol.T
        return y + self.noise_trajectory(z)

    def least_squares_estimate(self, trajectory: ArrayLike) -> NDArray[np.float64]:
        """The unbiased smoother ``x̂₀ = (ΨᵀΨ)⁻¹Ψᵀ y_T`` (attains the Cramér–Rao bound)."""
        y = check_values(trajectory, name="trajectory")
        want = (self.horizon + 1, self.m)
        if y.ndim < 2 or y.shape[-2:] != want:
            raise InvalidParameterError(f"trajectory must have trailing shape {want}, got {y.shape}",
                                        parameter="trajectory")
        flat = y.reshape((*y.shape[:-2], -1))
        return np.asarray(np.linalg.solve(self.gramian, (flat @ self.psi).T).T)

    def fisher_information(self) -> FisherInformation:
        """Fisher information about ``x₀``: ``Σ⁻¹`` (the trajectory is ``Ψ_T (x₀ + z)``)."""
        return FisherInformation(matrix=np.asarray(np.linalg.inv(self.covariance), dtype=float), error_estimate=0.0,
                                 source="Farokhi & Sandberg, Theorem 4: y_T = Psi_T (x0 + z), I = Sigma^-1")

    def cramer_rao_bound(self) -> Bound:
        """Proposition 1 for ``x₀``: ``Tr Σ`` (Example 4's estimation error)."""
        return cramer_rao_bound(self.fisher_information())

    def quality(self) -> float:
        """Q = E‖w_T‖² = Tr(ΨᵀΨ Σ)."""
        return float(np.trace(self.gramian @ self.covariance))

    def objective(self) -> float:
        """Problem 3's cost ``Tr(I) + ϱ Q`` for this noise."""
        return self.fisher_information().trace + self.rho * self.quality()

    def guarantee(self) -> FisherGuarantee:
        """The Fisher-information guarantee for the initial state (labelled: NOT differential privacy)."""
        return fisher_guarantee(
            self,
            source="Farokhi & Sandberg, Theorem 4 and Proposition 1",
            neighbouring="none (no neighbouring relation: the bound holds at every initial state)",
        )

    def __repr__(self) -> str:
        return (f"DynamicOptimalNoise(n={self.n}, m={self.m}, horizon={self.horizon}, rho={self.rho:g}, "
                f"convention={self.convention!r}) [Farokhi & Sandberg Thm 4]")

r"""Fisher information of additive noise, the Cramér–Rao bound and the quality measure Q.

Farokhi & Sandberg measures privacy by the Fisher information of the response
:math:`y = f(x) + w` about the private :math:`x`. For noise with density γ independent of ``x``
and a linear query :math:`f(x) = Cx` (Farokhi & Sandberg, §3, display before Theorem 1)

.. math:: \mathcal I = C^\top J C, \qquad
          J = \int_{\mathcal W} \frac{\nabla\gamma(w)\,\nabla\gamma(w)^\top}{\gamma(w)}\,dw ,

where ``J`` is the Fisher information of the noise about a location shift. Proposition 1 (the
Cramér–Rao bound) then bounds the mean-squared error of *any* unbiased estimator,
:math:`\mathbb E\|x - \hat x(y)\|^2 \ge \operatorname{Tr}(\mathcal I^{-1})`, and the quality of the
response is :math:`\mathcal Q = \mathbb E\|w\|_2^2` (§2, before Problem 3).

This module computes these quantities *numerically* (adaptive quadrature, optional finite
differences); the mechanisms of this subpackage use closed forms that the tests check against it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import integrate, linalg

from dpcloak._validation import check_array, check_real
from dpcloak.bound import Bound
from dpcloak.errors import InvalidParameterError
from dpcloak.privacy.mechanisms import PrivacyGuarantee

__all__ = [
    "FisherInformation",
    "FisherGuarantee",
    "FisherNoise",
    "fisher_guarantee",
    "fisher_information_1d",
    "product_fisher_information",
    "query_fisher_information",
    "cramer_rao_bound",
    "quality_1d",
]

Density = Callable[[float], float]

NOT_DP_NOTE = (
    "NOT differential privacy: a Cramér–Rao lower bound on the mean-squared error of any unbiased "
    "estimator of the private value (Farokhi & Sandberg, Proposition 1); it says nothing about biased estimators "
    "with prior knowledge, nor about (epsilon, delta)"
)


@dataclass(frozen=True)
class FisherInformation:
    """A Fisher information matrix and how it was obtained.

    Attributes
    ----------
    matrix : ndarray, shape (k, k)
        The (symmetric, positive semi-definite) Fisher information.
    error_estimate : float
        Absolute error estimate of the quadrature (0 for closed forms).
    source : str
        Closed form (paper and result) or numerical method.

    Examples
    --------
    >>> import numpy as np
    >>> J = FisherInformation(matrix=np.diag([4.0, 1.0]), error_estimate=0.0, source="closed form")
    >>> J.trace
    5.0
    >>> cramer_rao_bound(J).value  # Tr(J⁻¹)
    1.25
    """

    matrix: NDArray[np.float64]
    error_estimate: float
    source: str

    def __post_init__(self) -> None:
        matrix = check_array("matrix", self.matrix, ndim=2)
        if matrix.shape[0] != matrix.shape[1]:
            raise InvalidParameterError(f"matrix must be square (k × k), got shape {matrix.shape}", parameter="matrix")
        object.__setattr__(self, "matrix", matrix)
        object.__setattr__(self, "error_estimate", check_real("error_estimate", self.error_estimate, low=0.0,
                                                              low_inclusive=True))
        if not isinstance(self.source, str):
            raise InvalidParameterError(f"source must be a string, got {type(self.source).__name__}",
                                        parameter="source")

    @property
    def trace(self) -> float:
        """``Tr(I)``, the privacy measure minimised in Problem 2 of Farokhi & Sandberg."""
        return float(np.trace(self.matrix))


@dataclass(frozen=True)
class FisherGuarantee(PrivacyGuarantee):
    r"""The guarantee of a Farokhi–Sandberg mechanism: a Cramér–Rao bound, **not** differential privacy.

    It is a :class:`~dpcloak.privacy.mechanisms.PrivacyGuarantee` (so any consumer of the
    :class:`~dpcloak.privacy.mechanisms.Mechanism` protocol accepts it) with ``kind`` naming the
    Fisher information, ``epsilon = delta = None`` and ``is_differential_privacy = False``.

    Attributes
    ----------
    cramer_rao_bound : float
        :math:`\operatorname{Tr}(\mathcal I^{-1})`: no unbiased estimator of the privatized value
        has a smaller expected squared error (Farokhi & Sandberg, Proposition 1).
    quality : float
        :math:`\mathcal Q = \mathbb E\|w\|^2`, the expected squared distortion of the response.
    is_differential_privacy : bool
        Always ``False``.
    note : str
        What the guarantee does and does not say.

    Examples
    --------
    What the Farokhi–Sandberg mechanisms return from ``guarantee()``:

    >>> from dpcloak.privacy.fisher import BoundedOptimalNoise
    >>> g = BoundedOptimalNoise(low=-1.0, high=1.0).guarantee()
    >>> isinstance(g, FisherGuarantee), g.is_differential_privacy, g.epsilon, g.delta
    (True, False, None, None)
    """

    cramer_rao_bound: float = math.nan
    quality: float = math.nan
    is_differential_privacy: bool = False
    note: str = NOT_DP_NOTE


class FisherNoise(Protocol):
    """A Farokhi–Sandberg noise: its Fisher information, Cramér–Rao bound and quality.

    Examples
    --------
    The optimal noises implement it:

    >>> import numpy as np
    >>> from dpcloak.privacy.fisher import BoundedOptimalNoise
    >>> noise = BoundedOptimalNoise(low=-1.0, high=1.0)
    >>> def report(noise: FisherNoise) -> tuple[float, float]:  # any implementation will do
    ...     return float(noise.fisher_information().matrix[0, 0]), noise.cramer_rao_bound().value
    >>> info, crb = report(noise)
    >>> round(info, 4), round(crb, 4)  # 4π²/L² for the width L = 2, and its inverse
    (9.8696, 0.1013)
    >>> bool(np.isclose(info, np.pi**2)), bool(np.isclose(crb, 1 / np.pi**2))
    (True, True)
    """

    def fisher_information(self) -> FisherInformation:
        """The noise Fisher information."""
        ...

    def cramer_rao_bound(self) -> Bound:
        """Proposition 1 for the privatized value."""
        ...

    def quality(self) -> float:
        """Q = E‖w‖²."""
        ...


def fisher_guarantee(
    noise: FisherNoise,
    *,
    source: str,
    neighbouring: str = "none (no neighbouring relation: the bound holds at every x)",
) -> FisherGuarantee:
    """The Fisher-information guarantee of ``noise`` (labelled: NOT differential privacy).

    ``fisher_information`` is Tr(I), ``cramer_rao_bound`` Proposition 1's value and ``quality`` Q, all
    from ``noise``; ``mechanism`` is ``repr(noise)`` and ``source`` the paper result it implements.

    Examples
    --------
    >>> from dpcloak.privacy.fisher import BoundedOptimalNoise
    >>> g = fisher_guarantee(BoundedOptimalNoise(low=-1.0, high=1.0), source="Farokhi & Sandberg, Corollary 1")
    >>> g.source, g.fisher_information > 0
    ('Farokhi & Sandberg, Corollary 1', True)
    """
    return FisherGuarantee(
        kind="Fisher information / Cramér–Rao (not differential privacy)",
        epsilon=None,
        delta=None,
        neighbouring=neighbouring,
        sensitivity=math.nan,
        norm="n/a",
        mechanism=repr(noise),
        source=source,
        fisher_information=noise.fisher_information().trace,
        cramer_rao_bound=noise.cramer_rao_bound().value,
        quality=noise.quality(),
    )


def _integrate_pieces(func: Callable[[float], float], low: float, high: float,
                      points: Sequence[float]) -> tuple[float, float]:
    """Adaptive quadrature of ``func`` over [low, high], split at ``points`` (kinks, modes)."""
    cuts = [low, *sorted(p for p in points if low < p < high), high]
    total, err = 0.0, 0.0
    for a, b in itertools.pairwise(cuts):
        value, error = integrate.quad(func, a, b, limit=200, epsabs=1e-12, epsrel=1e-10)
        total += value
        err += error
    return total, err


def _support(low: float, high: float) -> tuple[float, float]:
    lo = check_real("low", low, allow_inf=True)
    hi = check_real("high", high, allow_inf=True)
    if not lo < hi:
        raise InvalidParameterError(f"low must be < high, got low={lo:g}, high={hi:g}", parameter="low")
    return lo, hi


def fisher_information_1d(
    pdf: Density,
    *,
    low: float = -math.inf,
    high: float = math.inf,
    derivative: Density | None = None,
    step: float = 1e-6,
    points: Sequence[float] = (),
) -> FisherInformation:
    r"""Fisher information :math:`J = \int \gamma'(w)^2/\gamma(w)\,dw` of a 1-D density, by quadrature.

    Parameters
    ----------
    pdf : callable
        The density γ (a function of one float).
    low, high : float
        Its support (``±inf`` allowed).
    derivative : callable, optional
        γ'. By default a central finite difference with step ``step``.
    step : float
        Finite-difference step (absolute).
    points : sequence of float
        Points where the integrand is not smooth (e.g. 0 for the Laplace density); the quadrature
        is split there.

    Returns
    -------
    FisherInformation
        A 1×1 matrix. Points where γ vanishes contribute 0 (the integrand's limit for the
        densities of Farokhi & Sandberg, which satisfy Assumption 2).

    Examples
    --------
    The standard normal density has Fisher information 1 and the cos² density on ``[−1, 1]`` π²:

    >>> import math
    >>> J = fisher_information_1d(lambda w: math.exp(-w * w / 2) / math.sqrt(2 * math.pi))
    >>> round(J.trace, 8)
    1.0
    >>> from dpcloak.privacy.fisher import BoundedOptimalNoise
    >>> cos2 = fisher_information_1d(BoundedOptimalNoise(low=-1.0, high=1.0).pdf, low=-1.0, high=1.0)
    >>> round(cos2.trace, 6) == round(math.pi ** 2, 6)
    True
    """
    lo, hi = _support(low, high)
    h = check_real("step", step, low=0.0)

    def slope(w: float) -> float:
        if derivative is not None:
            return float(derivative(w))
        return (float(pdf(w + h)) - float(pdf(w - h))) / (2.0 * h)

    def integrand(w: float) -> float:
        g = float(pdf(w))
        return slope(w) ** 2 / g if g > 0.0 else 0.0

    value, err = _integrate_pieces(integrand, lo, hi, points)
    method = "quadrature, exact derivative" if derivative is not None else f"quadrature, central difference h={h:g}"
    return FisherInformation(matrix=np.array([[value]]), error_estimate=err, source=method)


def quality_1d(pdf: Density, *, low: float = -math.inf, high: float = math.inf,
               points: Sequence[float] = ()) -> float:
    r"""Second moment :math:`\int w^2\gamma(w)\,dw` of a 1-D density (Farokhi & Sandberg's Q for m = 1), by quadrature.

    Examples
    --------
    >>> import math
    >>> round(quality_1d(lambda w: math.exp(-w * w / 2) / math.sqrt(2 * math.pi)), 8)  # variance 1
    1.0
    """
    lo, hi = _support(low, high)
    value, _ = _integrate_pieces(lambda w: w * w * float(pdf(w)), lo, hi, points)
    return value


def product_fisher_information(parts: Sequence[FisherInformation]) -> FisherInformation:
    """Fisher information of a product density ``γ(w) = Π γ_i(w_i)``: the block-diagonal of the parts.

    Examples
    --------
    >>> import numpy as np
    >>> a = FisherInformation(matrix=np.array([[1.0]]), error_estimate=0.0, source="N(0, 1)")
    >>> b = FisherInformation(matrix=np.array([[4.0]]), error_estimate=0.0, source="N(0, 1/4)")
    >>> product_fisher_information([a, b]).matrix.tolist()
    [[1.0, 0.0], [0.0, 4.0]]
    """
    if len(parts) == 0:
        raise InvalidParameterError("parts must contain at least one FisherInformation", parameter="parts")
    matrix = linalg.block_diag(*(p.matrix for p in parts))
    return FisherInformation(matrix=np.asarray(matrix, dtype=float),
                             error_estimate=float(sum(p.error_estimate for p in parts)),
                             source="product density: block-diagonal of " + "; ".join(p.source for p in parts))


def query_fisher_information(noise: FisherInformation, query: ArrayLike) -> FisherInformation:
    r"""Fisher information about ``x`` of ``y = Cx + w``: :math:`\mathcal I = C^\top J C` (Farokhi & Sandberg, §3).

    Parameters
    ----------
    noise : FisherInformation
        ``J``, the noise's (m × m) location Fisher information.
    query : array_like, shape (m, n)
        The query matrix ``C`` (a 1-D array is one row, m = 1).

    Examples
    --------
    A sum of two values released with unit noise tells nothing about them separately:

    >>> import numpy as np
    >>> J = FisherInformation(matrix=np.array([[1.0]]), error_estimate=0.0, source="N(0, 1)")
    >>> I = query_fisher_information(J, [[1.0, 1.0]])
    >>> I.matrix.tolist()
    [[1.0, 1.0], [1.0, 1.0]]
    >>> cramer_rao_bound(I).applies  # singular: no unbiased estimator of both values
    False
    """
    c = check_array("query", query, dtype=float)
    if c.ndim == 1:
        c = c[None, :]
    m = noise.matrix.shape[0]
    if c.ndim != 2 or c.shape[0] != m:
        raise InvalidParameterError(f"query must have shape ({m}, n) to match the noise, got {c.shape}",
                                    parameter="query")
    return FisherInformation(matrix=c.T @ noise.matrix @ c, error_estimate=noise.error_estimate * float(np.sum(c**2)),
                             source=f"C^T J C with J from: {noise.source}")


def cramer_rao_bound(information: FisherInformation | ArrayLike, *, rtol: float = 1e-10) -> Bound:
    r"""Farokhi & Sandberg, Prop. 1: :math:`\mathbb E\|x-\hat x(y)\|_2^2 \ge \operatorname{Tr}(\mathcal I^{-1})`.

    Valid for every unbiased estimator :math:`\hat x`. When :math:`\mathcal I` is singular (e.g. a
    scalar query of a vector, m < n) no unbiased estimator exists and the returned bound has
    ``applies=False`` and value ``nan``.

    Parameters
    ----------
    information : FisherInformation or array_like
        The Fisher information matrix about ``x``.
    rtol : float
        Eigenvalues below ``rtol · max eigenvalue`` count as zero.

    Examples
    --------
    >>> bound = cramer_rao_bound([[4.0, 0.0], [0.0, 1.0]])
    >>> bound.value, bound.kind, bound.applies  # 1/4 + 1/1
    (1.25, 'lower', True)
    """
    matrix = information.matrix if isinstance(information, FisherInformation) else check_array(
        "information", information, dtype=float)
    matrix = np.atleast_2d(matrix)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise InvalidParameterError(f"information must be a square matrix, got shape {matrix.shape}",
                                    parameter="information", allowed="a square matrix", got=matrix.shape)
    eig = np.linalg.eigvalsh(0.5 * (matrix + matrix.T))
    source = "Farokhi & Sandberg, Proposition 1 (Cramér–Rao): E||x - x_hat||^2 >= Tr(I^-1) for unbiased x_hat"
    if eig[-1] <= 0.0 or eig[0] <= rtol * eig[-1]:
        return Bound(value=math.nan, kind="lower", source=source, applies=False,
                     reason="the Fisher information is singular: no unbiased estimator of x exists")
    return Bound(value=float(np.sum(1.0 / eig)), kind="lower", source=source)

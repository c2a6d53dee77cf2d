r"""Corollary 4 of Farokhi & Sandberg: the x-dependent density for a non-uniform weight p(x), and Problem 2's cost.

For :math:`n = m = 1`, :math:`f(x) = x` and :math:`\mathcal W = [\underline w, \bar w]`, Corollary 4
prints

.. math:: \gamma^*(w|x) = c(x)\exp\!\Big(-\frac{p'(x)}{p(x)}(w + x)\Big)
          \cos^2\!\Big(\frac{\pi}{L}\big(w - \tfrac{\bar w + \underline w}{2}\big)\Big)\mathbb 1_{\mathcal W}(w),

with :math:`c(x)` the normalising constant. :class:`WeightedOptimalNoise` implements it as printed
(Figure 1), with :math:`c(x)` by adaptive quadrature (the tests check it against the closed form
:math:`\int_{-L/2}^{L/2} e^{-kt}\cos^2(\pi t/L)\,dt = \sinh(kL/2)\,\omega^2/(k(k^2+\omega^2))`,
:math:`\omega = 2\pi/L`).

:func:`weighted_cost` evaluates Problem 2's objective :math:`\mathcal J = \int p(x)\,\mathcal I(x)\,dx`
for *any* policy γ(w|x) directly from the definition (3): :math:`\mathcal I(x) = \int
(\partial_x q(y,x))^2/q(y,x)\,dy` with :math:`q(y, x) = \gamma(y - x|x)`, the x-derivative taken by
central differences at fixed ``y``.

Discrepancies (documented in the report; checked in the tests)
--------------------------------------------------------------
* **Not a minimiser of Problem 2.** For :math:`p \propto e^{-x}` the printed density is
  :math:`\propto e^{w}\cos^2(\cdot)`, independent of x; for an x-independent density
  :math:`\mathcal J = J(\gamma)\int p`, and the cos² density (Corollary 1) has strictly smaller
  Fisher information than any other density on the interval (it is the first Dirichlet
  eigenfunction). :func:`weighted_cost` confirms the cos² policy has the lower cost for both of
  Figure 1's weights. The derivation (Appendix G) freezes x while solving an equation whose
  derivatives are really in x at fixed y, and the Lagrangian of Appendix C carries
  :math:`F^\top\partial_w\gamma + \partial_x\gamma` where the score of :math:`\gamma(y - f(x)|x)` is
  :math:`-F^\top\partial_w\gamma + \partial_x\gamma`; with the correct sign the same construction
  gives the opposite tilt :math:`e^{+(p'/p)w}`. Neither is optimal: with x-dependent policies the
  infimum depends on the (unstated) domain of x. We therefore keep the printed density only to
  reproduce Figure 1 and recommend :class:`~dpcloak.privacy.fisher.bounded.BoundedOptimalNoise`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import integrate

from dpcloak._validation import check_array, check_int, check_real
from dpcloak.errors import InvalidParameterError
from dpcloak.privacy.fisher.bounded import check_support

__all__ = ["WeightedOptimalNoise", "weighted_cost", "tilted_cos2_integral"]

Scalar = Callable[[float], float]
Policy = Callable[[float, float], float]


def tilted_cos2_integral(*, tilt: float, low: float, high: float) -> float:
    r"""Closed form of :math:`\int_{\underline w}^{\bar w} e^{-k(w-c)}\cos^2(\pi(w-c)/L)\,dw` (``k = tilt``).

    Examples
    --------
    Agrees with adaptive quadrature:

    >>> import math
    >>> from scipy.integrate import quad
    >>> closed = tilted_cos2_integral(tilt=0.7, low=-1.0, high=1.0)
    >>> numeric = quad(lambda w: math.exp(-0.7 * w) * math.cos(math.pi * w / 2) ** 2, -1.0, 1.0)[0]
    >>> round(closed, 10) == round(numeric, 10)
    True
    """
    lo, hi = check_support(low, high)
    if lo.ndim != 0:
        raise InvalidParameterError("low and high must be scalars", parameter="low")
    k = check_real("tilt", tilt)
    width = float(hi - lo)
    omega = 2.0 * math.pi / width
    if abs(k) * width < 1e-8:
        return width / 2.0
    return math.sinh(k * width / 2.0) * omega**2 / (k * (k * k + omega**2))


class WeightedOptimalNoise:
    r"""Corollary 4's printed policy γ*(w|x) for a weight p(x) on a bounded support (Farokhi & Sandberg, Figure 1).

    Parameters
    ----------
    low, high : float
        The support :math:`[\underline w, \bar w]`.
    weight : callable
        The weight p(x) > 0 (need not be normalised).
    weight_derivative : callable, optional
        p'(x); by default a central difference with step 1e-6.

    Notes
    -----
    Not a minimiser of Problem 2 (see the module docstring); provided to reproduce Figure 1.
    It has no ``privatize``: it is a policy *of x*, and releasing ``x + w`` with it would make the
    noise depend on the private value in a way the paper does not analyse.

    Examples
    --------
    >>> import math
    >>> from scipy.integrate import quad
    >>> policy = WeightedOptimalNoise(low=-1.0, high=1.0, weight=lambda x: math.exp(-x))
    >>> round(quad(lambda w: float(policy.density(w, 0.3)), -1.0, 1.0)[0], 10)  # a density in w
    1.0
    >>> policy.density_grid([-0.5, 0.0, 0.5], [0.3, 0.6]).shape  # (len(x), len(w))
    (2, 3)

    >>> round(policy.log_weight_slope(0.3), 6)  # (ln p)'(x) = −1 for p = e^{−x}
    -1.0

    >>> bool(policy.normaliser(0.3) > 0)
    True
    """

    def __init__(self, *, low: float, high: float, weight: Scalar, weight_derivative: Scalar | None = None) -> None:
        lo, hi = check_support(low, high)
        if lo.ndim != 0:
            raise InvalidParameterError("low and high must be scalars (Corollary 4 is for m = 1)", parameter="low")
        if not callable(weight):
            raise InvalidParameterError(f"weight must be callable, got {type(weight).__name__}", parameter="weight")
        self.low, self.high = float(lo), float(hi)
        self.width = self.high - self.low
        self.centre = 0.5 * (self.low + self.high)
        self.weight = weight
        self.weight_derivative = weight_derivative
        self._normalisers: dict[float, float] = {}  # c(x) of the last few x (cost evaluations reuse them)

    def log_weight_slope(self, x: float) -> float:
        """p'(x)/p(x)."""
        xv = check_real("x", x)
        p = float(self.weight(xv))
        if not p > 0.0:
            raise InvalidParameterError(f"weight must be > 0 where the policy is evaluated; p({xv:g}) = {p:g}",
                                        parameter="weight")
        if self.weight_derivative is not None:
            dp = float(self.weight_derivative(xv))
        else:
            h = 1e-6 * max(1.0, abs(xv))
            dp = (float(self.weight(xv + h)) - float(self.weight(xv - h))) / (2.0 * h)
        return dp / p

    def _kernel(self, w: NDArray[np.float64], x: float) -> NDArray[np.float64]:
        """exp(−r(x)(w + x)) cos²(π(w − c)/L) on the support (unnormalised, as printed)."""
        r = self.log_weight_slope(x)
        inside = (w >= self.low) & (w <= self.high)
        body = np.exp(-r * (w + x)) * np.cos(math.pi * (w - self.centre) / self.width) ** 2
        return np.where(inside, body, 0.0)

    def normaliser(self, x: float) -> float:
        """c(x) = 1 / ∫ exp(−r(x)(w + x)) cos²(π(w − c)/L) dw, by adaptive quadrature."""
        xv = check_real("x", x)
        cached = self._normalisers.get(xv)
        if cached is not None:
            return cached
        value, _ = integrate.quad(lambda w: float(self._kernel(np.array(w), xv)), self.low, self.high,
                                  epsabs=0.0, epsrel=1e-12, limit=200)
        if len(self._normalisers) >= 16:
            self._normalisers.clear()
        self._normalisers[xv] = 1.0 / value
        return 1.0 / value

    def density(self, w: ArrayLike, x: float) -> NDArray[np.float64]:
        """γ*(w|x) for an array of ``w`` at one ``x``."""
        ww = check_array("w", w, dtype=float)
        return self.normaliser(x) * self._kernel(ww, x)

    def density_grid(self, w: ArrayLike, x: ArrayLike) -> NDArray[np.float64]:
        """γ*(w|x) on the grid ``w × x``: shape ``(len(x), len(w))`` (Figure 1)."""
        xs = check_array("x", x, ndim=1, dtype=float)
        return np.vstack([self.density(w, float(xv)) for xv in xs])


def weighted_cost(policy: Policy, *, weight: Scalar, low: float, high: float, x_low: float, x_high: float,
                  n_x: int = 41, step: float = 1e-5) -> float:
    r"""Problem 2's cost :math:`\int_{x_{lo}}^{x_{hi}} p(x)\,\mathcal I(x)\,dx` of a policy γ(w|x) (m = n = 1, f = id).

    :math:`\mathcal I(x) = \int (\partial_x q)^2/q\,dy` with :math:`q(y,x) = \gamma(y-x|x)`, the
    x-derivative by central differences (step ``step``) at fixed ``y``, inner integral by adaptive
    quadrature, outer integral by Simpson's rule on ``n_x`` points (odd).

    Examples
    --------
    A policy that ignores ``x`` (the cos² density on ``[−1, 1]``) costs its Fisher information π²
    for a uniform weight on ``[0, 1]``:

    >>> import math
    >>> from dpcloak.privacy.fisher import BoundedOptimalNoise
    >>> cos2 = BoundedOptimalNoise(low=-1.0, high=1.0)
    >>> cost = weighted_cost(lambda w, x: cos2.pdf(w), weight=lambda x: 1.0, low=-1.0, high=1.0,
    ...                      x_low=0.0, x_high=1.0, n_x=5)
    >>> abs(cost - math.pi ** 2) < 1e-3  # finite differences in x, quadrature in y
    True
    """
    lo, hi = check_support(low, high)
    a, b = float(lo), float(hi)
    xl = check_real("x_low", x_low)
    xh = check_real("x_high", x_high)
    if not xl < xh:
        raise InvalidParameterError(f"x_low must be < x_high, got {xl:g} and {xh:g}", parameter="x_low")
    nx = check_int("n_x", n_x, minimum=3)
    h = check_real("step", step, low=0.0)

    def q(y: float, x: float) -> float:
        return float(policy(y - x, x))

    def info(x: float) -> float:
        def integrand(y: float) -> float:
            val = q(y, x)
            if val <= 0.0:
                return 0.0
            dq = (q(y, x + h) - q(y, x - h)) / (2.0 * h)
            return dq * dq / val

        # stay h inside the support so the difference never straddles its moving ends
        value, _ = integrate.quad(integrand, x + a + h, x + b - h, limit=200, epsabs=1e-10, epsrel=1e-8)
        return value

    xs = np.linspace(xl, xh, nx if nx % 2 else nx + 1)
    vals = np.array([float(weight(x)) * info(float(x)) for x in xs])
    return float(integrate.simpson(vals, x=xs))

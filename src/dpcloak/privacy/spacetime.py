r"""Space-time sensitivity: how much one event moves a field sensor's *whole future stream* of readings.

A source that appears for one window (Mary's party) keeps heating the room after it is gone: with the
seeds' 1-D heat model (:func:`dpcloak.models.heat_kernel_1d`; Gilbert & McMillan §2.1) the readings ℓ
windows later still carry its heat, diffused for t + ℓτ. By linearity (superposition), the stream of
readings of m sensors shifts, when a unit source appears at location i in window s, by

.. math:: \Delta y_{s+\ell} = K_\ell e_i, \qquad K_\ell[j, i] = e^{-\lambda \ell\tau}\,
          g_{\mu(t+\ell\tau)}(x_j - p_i), \qquad g_T(x) = \frac{e^{-x^2/(4T)}}{\sqrt{4\pi T}},

for ℓ = 0, 1, … (τ = ``window``, the time between readings; λ = ``cooling``, the rate at which the room
loses heat; ℓ = 0 is the seeds' static model A). Releasing every reading with independent Gaussian noise
σ is then one Gaussian mechanism on the whole stream, whose ℓ2 sensitivity to one event is

.. math:: \Delta_\infty^2 = \max_i \sum_{\ell \ge 0} \| K_\ell e_i \|_2^2 ,

so one event costs :math:`\rho = \Delta_\infty^2/(2\sigma^2)`-zCDP over an unbounded stream — instead of
the T-fold composition :math:`T \Delta_0^2/(2\sigma^2)` that grows like √T in ε (the slides' "Future
Direction: Continual Monitoring"). A pattern of k events every P windows shifts the readings by
:math:`\sum_{r<k} K_{\ell - rP} e_i`.

Certified truncation. The sum is computed for ℓ < L and the rest is bounded: :math:`g_T \le 1/\sqrt{4\pi T}`
gives :math:`\| K_q e_i\|_2 \le b_q = \sqrt{m/(4\pi\mu(t+q\tau))}\,e^{-\lambda q\tau}` (decreasing
in q), so for a pattern :math:`\|\sum_r K_{\ell-rP}e_i\| \le k\, b_{\ell-(k-1)P}` and

.. math:: \sum_{\ell \ge L} \Big\| \sum_r K_{\ell - rP} e_i \Big\|^2 \le
          \frac{k^2 m}{4\pi\mu(t + q_0\tau)} \cdot \frac{e^{-2\lambda q_0\tau}}{1 - e^{-2\lambda\tau}},
          \qquad q_0 = L - (k-1)P .

L grows until this tail is below ``rtol`` of the partial sum; the stated sensitivity is √(partial + tail),
an upper bound. Without cooling (λ = 0) the 1-D series diverges like Σ 1/ℓ (the peak of a 1-D heat kernel
decays only like ℓ^(-1/2)): there is then no event-level bound over an unbounded stream, and a finite
``horizon`` (windows) must be given; the sum is then exact (no tail).

On a floor (2-D free space, :func:`dpcloak.models.heat_kernel_2d` without walls) the kernel's peak is
1/(4πT), so :math:`b_q^2 = m\,e^{-2\lambda q\tau}/(4\pi\mu(t+q\tau))^2` and the tail is at most
:math:`\frac{k^2 m\,e^{-2\lambda q_0\tau}}{(4\pi\mu)^2}\min\Big(\frac{1}{(t+q_0\tau)^2(1-e^{-2\lambda\tau})},
\frac{1}{(t+q_0\tau)^2} + \frac{1}{\tau(t+q_0\tau)}\Big)` (the second from
:math:`\sum_{q \ge q_0} (t+q\tau)^{-2} \le (t+q_0\tau)^{-2} + \int_{q_0}^\infty (t+q\tau)^{-2}\,dq`): the
series converges even without heat loss, slowly (use a larger ``rtol`` then). With reflecting walls the heat
stays in the room and a ``horizon`` is required.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from dpcloak._validation import check_int, check_memory, check_real
from dpcloak.domains.grid import Grid
from dpcloak.domains.line import Line
from dpcloak.domains.sites import Sites
from dpcloak.errors import InvalidParameterError
from dpcloak.models.heat import HeatKernel1D, HeatKernel2D, KroneckerHeatKernel2D, gaussian_kernel_1d, heat_kernel_2d

HeatModel = HeatKernel1D | HeatKernel2D | KroneckerHeatKernel2D

__all__ = ["SpaceTimeSensitivity", "heat_event_sensitivity"]

_MAX_LAGS = 2**22


@dataclass(frozen=True)
class SpaceTimeSensitivity:
    """ℓ2 sensitivity of a whole stream of readings to one event (or one periodic pattern of events).

    Attributes
    ----------
    sensitivity : float
        Certified upper bound √(partial + tail_bound) on Δ∞ (reading units).
    partial : float
        max over source locations of the squared shifts summed over the first ``lags`` windows.
    tail_bound : float
        Proven bound on the rest of the sum (0 with a finite horizon).
    lags : int
        Windows summed exactly.
    per_reading : float
        The static sensitivity of one window, max_i ‖K_0 e_i‖₂ (the seeds' Δ2 for a source appearing).
    worst_source : int
        Index of the source location attaining ``partial``.
    events, period : int
        The pattern: ``events`` unit sources at the same location, every ``period`` windows.

    Examples
    --------
    >>> from dpcloak.models import heat_kernel_1d
    >>> s = heat_event_sensitivity(heat_kernel_1d(50, 10, 0.1), window=0.05, cooling=2.0)
    >>> s.sensitivity > s.per_reading, s.tail_bound <= 1e-12 * s.partial
    (True, True)
    """

    sensitivity: float
    partial: float
    tail_bound: float
    lags: int
    per_reading: float
    worst_source: int
    events: int
    period: int


def _tail(model: HeatModel, window: float, cooling: float, first: int, events: int) -> float:
    """The module docstring's bound on Σ_{ℓ ≥ L} for q0 = ``first`` = L − (k − 1)P ≥ 0 (``inf`` if it diverges)."""
    start = model.t + first * window
    decay = math.exp(-2.0 * cooling * window * first)
    geometric = math.inf if cooling == 0.0 else 1.0 / -math.expm1(-2.0 * cooling * window)
    sensors = model.shape[0]
    if isinstance(model, HeatKernel1D):  # Σ b_q² with b_q² = m / (4πμ(t + qτ)) · e^(−2λqτ)
        return events**2 * sensors / (4.0 * math.pi * model.mu * start) * decay * geometric
    # 2-D free space: b_q² = m / (4πμ(t + qτ))² · e^(−2λqτ); Σ_{q ≥ q0} 1/(t + qτ)² ≤ 1/(t + q0τ)² + 1/(τ(t + q0τ))
    series = min(geometric / start**2, 1.0 / start**2 + 1.0 / (window * start))
    return events**2 * sensors / (4.0 * math.pi * model.mu) ** 2 * decay * series


def _shifts(model: HeatModel, window: float, cooling: float, lags: range) -> NDArray[np.float64]:
    """K_ℓ for ℓ in ``lags``: shape (len(lags), m, n), each the model rebuilt at time t + ℓτ."""
    if isinstance(model, HeatKernel1D):
        sources = cast(Line, model.domain).points()
        diff = np.asarray(model.sensor_positions, dtype=float)[:, None] - sources[None, :]
        return np.stack([math.exp(-cooling * window * lag)
                         * gaussian_kernel_1d(diff, model.mu * (model.t + lag * window)) for lag in lags])
    sensors: Any = model.sensor_grid if isinstance(model, KroneckerHeatKernel2D) else model.sensor_positions
    return np.stack([math.exp(-cooling * window * lag) * heat_kernel_2d(
        cast(Grid | Sites, model.domain), sensors, model.t + lag * window, mu=model.mu, walls=model.walls).todense()
        for lag in lags])


def heat_event_sensitivity(model: HeatModel, *, window: float, cooling: float = 0.0, horizon: int | None = None,
                           events: int = 1, period: int = 1, rtol: float = 1e-12) -> SpaceTimeSensitivity:
    r"""Exact ℓ2 sensitivity of the whole future stream of a heat model to one event, tail certified.

    Parameters
    ----------
    model : HeatKernel1D, HeatKernel2D or KroneckerHeatKernel2D
        The seeds' 1-D heat model (:func:`dpcloak.models.heat_kernel_1d`) or a floor plan
        (:func:`dpcloak.models.heat_kernel_2d`); its t and μ give the first reading after the source appears.
        With reflecting walls heat stays in the room, so a ``horizon`` is needed.
    window : float
        Time τ between readings (same units as the model's t), > 0.
    cooling : float
        Heat-loss rate λ ≥ 0 (the heat remaining after time u is e^(−λu)). With λ = 0 a ``horizon`` is needed.
    horizon : int, optional
        Number of windows after the first event the stream runs for (exact finite sum); ``None``: unbounded.
    events, period : int
        A pattern of ``events`` ≥ 1 events at the same location every ``period`` ≥ 1 windows.
    rtol : float
        The unbounded sum stops when the tail bound is below ``rtol`` × the partial sum.

    Returns
    -------
    SpaceTimeSensitivity

    Examples
    --------
    A party every 7 days, hourly readings, over a year without cooling (a finite horizon):

    >>> from dpcloak.models import heat_kernel_1d
    >>> one = heat_event_sensitivity(heat_kernel_1d(40, 8, 0.1), window=0.02, horizon=8760)
    >>> weekly = heat_event_sensitivity(heat_kernel_1d(40, 8, 0.1), window=0.02, horizon=8760, events=52,
    ...                                 period=168)
    >>> one.tail_bound, weekly.sensitivity > one.sensitivity
    (0.0, True)
    """
    if not isinstance(model, HeatKernel1D | HeatKernel2D | KroneckerHeatKernel2D):
        raise InvalidParameterError(f"model must be a heat model (dpcloak.models.heat_kernel_1d or heat_kernel_2d), "
                                    f"got {type(model).__name__}", parameter="model")
    tau = check_real("window", window, low=0.0)
    lam = check_real("cooling", cooling, low=0.0, low_inclusive=True)
    k = check_int("events", events, minimum=1)
    p = check_int("period", period, minimum=1)
    tol = check_real("rtol", rtol, low=0.0, high=1.0)
    span = (k - 1) * p + 1  # windows until the last event
    if horizon is None and getattr(model, "walls", None) is not None:
        raise InvalidParameterError(
            "horizon must be given for a model with walls: heat stays in a closed room, so the readings' shift "
            "does not die out without heat loss and the tail bound here is for free space", parameter="horizon")
    if horizon is None and lam == 0.0 and isinstance(model, HeatKernel1D):
        raise InvalidParameterError(
            "cooling must be > 0 when horizon is None: without heat loss the 1-D heat kernel's squared peak decays "
            "like 1/lag and the sum over an unbounded stream diverges; give a horizon (windows) or a cooling rate",
            parameter="cooling")
    if horizon is not None:
        total = check_int("horizon", horizon, minimum=span, maximum=_MAX_LAGS)
    else:
        total = max(span + 63, 64)  # doubled until the tail bound is small enough
    while True:
        size = 8.0 * total * model.shape[0] * model.shape[1] * (2 if k > 1 else 1)
        check_memory("the space-time sensitivity's kernels", size,
                     hint="use fewer sources or sensors, a shorter horizon or a larger cooling rate")
        kernels = _shifts(model, tau, lam, range(total))
        stream = kernels.copy() if k > 1 else kernels
        for r in range(1, k):  # the pattern: Σ_r K_{ℓ − rP}
            stream[r * p:] += kernels[: total - r * p]
        squares = np.einsum("lji,lji->i", stream, stream)
        partial = float(squares.max())
        tail = 0.0 if horizon is not None else _tail(model, tau, lam, total - span + 1, k)
        if tail <= tol * partial:
            break
        total *= 2
        if total > _MAX_LAGS:
            raise InvalidParameterError(f"rtol={tol:g} is not reached within 2^22 lags; use a larger rtol",
                                        parameter="rtol")
    per_reading = float(np.sqrt(np.einsum("ji,ji->i", kernels[0], kernels[0]).max()))
    return SpaceTimeSensitivity(sensitivity=math.sqrt(partial + tail), partial=partial, tail_bound=tail, lags=total,
                                per_reading=per_reading, worst_source=int(np.argmax(squares)), events=k, period=p)

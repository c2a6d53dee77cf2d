r"""What one authenticated sensor can do to the map: the collector's acceptance interval and its cost.

A genuine report is ``g · (n + Y)``: ``n = round(clip(x) / g)`` is the reading clipped to the declared
range ``[lo, hi]`` on the sensor and rounded to the grid ``g · ℤ``; ``Y`` is exact discrete Gaussian
noise, :math:`P(Y = y) = e^{-y^2/2\sigma^2} / Z` on ℤ with :math:`Z = \sum_{y∈ℤ} e^{-y^2/2\sigma^2}`
(σ² in grid units, :attr:`DiscreteGaussianMechanism.sigma2`). The collector accepts a value only
on the grid and in ``g · [n_lo − T, n_hi + T]``, with T the smallest integer such that

.. math:: P(|Y| > T) = \frac{2}{Z}\sum_{y > T} e^{-y^2/2\sigma^2} \le p_{\text{reject}} = 2^{-64}
   \quad(:data:`FALSE_REJECTION`).

A genuine report is rejected only if its noise is beyond T, so the probability of rejecting one
honest report is at most :math:`P(|Y| > T)` (:func:`false_rejection_probability`), whatever the reading.
A ``counts`` network's exact discrete Laplace noise, :math:`P(Y = y) = e^{-|y|/b} (1 − q)/(1 + q)` with
:math:`q = e^{-1/b}` (b in grid units, :attr:`DiscreteLaplaceMechanism.scale`), has the closed-form tail
:math:`P(|Y| > T) = 2 q^{T+1} / (1 + q)` (:func:`laplace_log_tail`), and T is chosen the same way.

**Influence bound.** Two accepted values differ by at most
:math:`D = g\,(n_{hi} − n_{lo} + 2T)` (:func:`influence_bound`): a sensor whose key was stolen can
move its coordinate of the private reading vector by at most D from any honest value, i.e. add a
perturbation of ℓ2 norm ≤ D to the recovery's input. Recovery (basis pursuit denoising) is stable
in the ℓ2 norm of the perturbation, so its effect is that of D more noise on one coordinate —
compare with the honest noise's ℓ2 norm :math:`\approx σ\sqrt{m}`. Without an upper reading limit
(``hi = None``) the interval has no upper end and the influence is unbounded above.

**One outlying sensor** (:func:`robust_recover`). The acceptance interval bounds what a stolen key
can send; what the map does with it is bounded by a leave-one-out residual test. After the recovery
from all present sensors, the ``OUTLIER_CANDIDATES`` sensors with the largest residuals
:math:`|ỹ_j − (M f̂)_j|` (only those beyond the *gate*, below) are each predicted from the *others*: the map
:math:`f̂_{-j}` recovered without sensor j predicts :math:`(M f̂_{-j})_j`, and its standardised
prediction error :math:`z_j = |ỹ_j − (M f̂_{-j})_j| / s_{-j}` (``s`` the larger of σ and the root mean
square of the others' residuals, so a model that fits badly everywhere does not single out one
sensor) is compared with ``OUTLIER_Z``. The sensor with the largest :math:`z_j` above ``OUTLIER_Z`` is
flagged and its reading left out of the stored map. A sensor the others contradict by more than
``OUTLIER_Z`` σ therefore moves the map no more than leaving its reading out does; one that stays
under the test is within ``OUTLIER_Z`` σ of what the others predict. The test is post-processing
of private readings: it spends no privacy. It is robust to *one* outlying sensor per window (two
colluding neighbours can vouch for each other). Counts networks recover each sensor's count on its
own (a poisoned count changes only its own coordinate), so they are not tested.

**The gate: the largest of m noise draws** (:func:`gate_cells`). Each leave-one-out test costs a
recovery, so it runs only when some residual is larger than honest noise makes plausible *for the whole
window*. A fixed per-reading threshold does not say that: m honest readings carry m independent noise
draws :math:`g\,Y_j`, and the largest of them grows like :math:`σ\sqrt{2\ln m}`; with m = 1,000 a fixed
3 σ is crossed in :math:`1 − (1 − P(|Y| > 3σ/g))^{1000} ≈ 93\,\%` of honest windows. The gate is
instead the smallest integer :math:`T_m` (grid cells) with

.. math:: P\Big(\max_{j \le m} |Y_j| > T_m\Big) = 1 − \big(1 − P(|Y| > T_m)\big)^m \le α
   \quad(α = :data:`OUTLIER_FALSE_ALARM`),

exact for the network's own noise (the m draws are independent; :math:`P(|Y| > T)` is the exact tail of
the discrete Gaussian or discrete Laplace above, so :math:`T_m` is the smallest T with
:math:`P(|Y| > T) \le 1 − (1 − α)^{1/m}`, :func:`noise_tail_cells`), and the test runs when some residual
exceeds :math:`g\,T_m` (m the number of sensors present). The noise alone crosses the gate in at most
a fraction α of honest windows, exactly (the tests check :math:`T_m` against mpmath and the rate with the
exact sampler, within its binomial interval, where a fixed 3 σ is crossed in most windows). The residual is
not the noise: :math:`ỹ − M f̂ = e − M(f̂ − f_0)` adds the fit's error (the recovery's radius lies above the
noise's norm and leaves part of the sources in the residual), so honest windows trigger the test somewhat
more often than α; no bound on that part is proven here: it is measured (the documentation's reliability
page) and the tests bound it by simulation on a 500-sensor floor. The gate grows slowly with m
(:math:`T_m g/σ ≈` 3.7 at m = 40, 4.4 at 1,000, 4.9 at 10⁴ for the discrete Gaussian). A poisoned
reading below the gate is not tested; the map recovered with it then explains it within :math:`g\,T_m`,
and it moves the map less than a flagged one would (the demo-floor sweep in the tests). A model
misfit on public history is not noise: where the model fits badly, the gate fires more often (cost only).

**Why the honest flag rate has no proven bound.** The gate's α bounds how often honest *noise* starts
the test; a flag needs the leave-one-out error :math:`z_j` above ``OUTLIER_Z``, and for an honest sensor
that error is :math:`ỹ_j − (M f̂_{-j})_j = g\,Y_j + \big((M f_0)_j − (M f̂_{-j})_j\big)`: its noise, whose
exact tail is known (:math:`P(|Y| > 8σ/g)` is about :math:`10^{-15}`; a union bound over m sensors
multiplies it by m), plus the recovery's prediction error at j from the other sensors. The second term is
not noise: it depends on the unknown scene :math:`f_0` (how many sources, where, how large) and on how well
the others see sensor j's neighbourhood. Basis pursuit denoising's stability bounds
:math:`\|f̂ − f_0\|` only through restricted-isometry constants of M (not computable for a deployment's
matrix) and the best-s-term error of :math:`f_0` (unknown), so no bound on
:math:`P(z_j > \text{OUTLIER\_Z})` follows from the declared noise alone, however the threshold is chosen;
raising ``OUTLIER_Z`` lowers the rate but gives up the flag of a stolen key at the range limit on floors
whose prediction errors are large. The rate on honest windows is therefore measured (the documentation's
reliability page), not proven. A test with a proven rate would need a statistic that is pure noise under
honesty, e.g. flag only when *no* :math:`f \ge 0` has :math:`|ỹ_i − (M f)_i| \le g\,T_m` for every present
sensor (with the model exact, :math:`f_0` is such an f unless some :math:`|Y_i| > T_m`, which happens in at
most a fraction α of windows); it holds only where the readings follow the model exactly (a field model's
misfit breaks it) and its power against a stolen key at the limit is not established: it is not implemented.

The tail is the exact sum over the discrete distribution (not the continuous Gaussian
approximation), evaluated in floating point: the terms are summed relative to the first one, and
Z by Poisson summation :math:`Z = \sqrt{2\pi\sigma^2}\,(1 + 2\sum_{k\ge1} e^{-2\pi^2\sigma^2k^2})`.
The tests check it against mpmath's 50-digit brute-force summation.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from dpcloak.errors import InvalidParameterError
from dpcloak.privacy.discrete import DiscreteGaussianMechanism, DiscreteLaplaceMechanism
from dpcloak.sensors import NetworkRecovery, SensorNetwork

if TYPE_CHECKING:
    from dpcloak.privacy.continual import ContinualCounter

__all__ = ["FALSE_REJECTION", "OUTLIER_Z", "OUTLIER_FALSE_ALARM", "OUTLIER_CANDIDATES", "log_tail",
           "laplace_log_tail", "noise_tail_cells", "gate_cells", "false_rejection_probability", "tail_cells",
           "tail_cells_bound",
           "acceptance_cells", "acceptance_interval", "counter_acceptance_interval", "influence_bound",
           "RobustRecovery", "robust_recover"]

FALSE_REJECTION = 2.0**-64
"""Largest probability that the collector rejects one genuine report (about 5.4e-20)."""

OUTLIER_Z = 8.0
"""A sensor whose reading is more than this many σ from what the other sensors predict is flagged (module
docstring). The honest noise alone exceeds 8 σ with probability about 10⁻¹⁵ per reading; the rest of the margin
is for the prediction's own error (on the demo floor the honest leave-one-out errors stay below 5 σ)."""

OUTLIER_FALSE_ALARM = 0.01
"""Largest probability that the honest noise of one window triggers the leave-one-out test (the gate
:func:`gate_cells`: the largest of the window's m noise draws exceeds it with at most this probability)."""

OUTLIER_CANDIDATES = 3
"""How many of the largest residuals are tested (each costs one recovery without that sensor)."""


def _log_normaliser(s2: float) -> float:
    """log Z, Z = Σ_{y∈ℤ} exp(−y²/(2 s2))."""
    if s2 < 1.0:  # a narrow distribution: sum the terms directly
        ys = np.arange(-int(40 * math.sqrt(s2)) - 10, int(40 * math.sqrt(s2)) + 11, dtype=float)
        return math.log(math.fsum(np.exp(-(ys**2) / (2 * s2))))
    ks = np.arange(1, 4, dtype=float)  # e^{-2π²·s2·k²} < 1e-25 for k ≥ 2 when s2 ≥ 1
    return 0.5 * math.log(2 * math.pi * s2) + math.log1p(2 * math.fsum(np.exp(-2 * math.pi**2 * s2 * ks**2)))


def log_tail(sigma2: Fraction | float, cells: int) -> float:
    """Natural log of :math:`P(|Y| > \\text{cells})` for the discrete Gaussian with variance parameter ``sigma2``.

    Examples
    --------
    Against a direct summation of the mass function (σ² = 1: the mass beyond ±40 is negligible):

    >>> ys = range(-40, 41)
    >>> mass = [math.exp(-y * y / 2) for y in ys]
    >>> brute = math.fsum(m for y, m in zip(ys, mass) if abs(y) > 2) / math.fsum(mass)
    >>> math.isclose(math.exp(log_tail(1.0, 2)), brute, rel_tol=1e-12), round(brute, 6)
    (True, 0.009134)
    >>> log_tail(1.0, -1)  # P(|Y| > −1) = 1
    0.0
    """
    s2 = float(sigma2)
    if not (math.isfinite(s2) and s2 > 0):
        raise InvalidParameterError(f"sigma2 must be a finite number > 0, got {sigma2!r}", parameter="sigma2")
    t = int(cells)
    if t < 0:
        return 0.0
    a = t + 1  # first term of the upper tail
    # Σ_{y ≥ a} e^{-y²/2s2} = e^{-a²/2s2} Σ_{k ≥ 0} e^{-k(2a+k)/2s2}; stop once a term is below 1e-40 of the first.
    kmax = 1
    while kmax * (2 * a + kmax) / (2 * s2) < 92.0:
        kmax *= 2
    ks = np.arange(kmax + 1, dtype=float)
    rel = np.exp(-ks * (2 * a + ks) / (2 * s2))
    return math.log(2.0) - a * a / (2 * s2) + math.log(math.fsum(rel)) - _log_normaliser(s2)


def tail_cells(sigma2: Fraction | float, target: float = FALSE_REJECTION) -> int:
    """The smallest integer T ≥ 0 with :math:`P(|Y| > T) ≤` ``target``.

    Examples
    --------
    >>> t = tail_cells(1.0, 0.05)
    >>> t, math.exp(log_tail(1.0, t)) <= 0.05 < math.exp(log_tail(1.0, t - 1))
    (2, True)
    >>> tail_cells(1.0), tail_cells(100.0)  # the default target 2⁻⁶⁴; T grows like σ
    (9, 92)
    """
    if not 0.0 < target < 1.0:
        raise InvalidParameterError(f"target must be in (0, 1), got {target!r}", parameter="target")
    log_target = math.log(target)
    s = math.sqrt(float(sigma2))
    hi = max(1, math.ceil(s * math.sqrt(2 * math.log(2 / target))) + 1)  # P(|Y|>t) ≤ 2e^{-t²/2σ²}·(1+1/σ)-ish
    while log_tail(sigma2, hi) > log_target:
        hi *= 2
    lo = -1  # P(|Y| > -1) = 1 > target
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if log_tail(sigma2, mid) <= log_target:
            hi = mid
        else:
            lo = mid
    return hi


def tail_cells_bound(sigma2: Fraction | float, target: float = FALSE_REJECTION) -> int:
    r"""The smallest integer T ≥ 0 whose closed-form upper bound on :math:`P(|Y| > T)` is ≤ ``target``: O(1) per
    trial where :func:`tail_cells`' exact sum costs O(σ) (a continual counter's σ is millions of grid units).

    With a = T + 1 and f(y) = e^{−y²/2σ²} decreasing on [a, ∞), :math:`\sum_{y \ge a} f(y) \le f(a) +
    \int_a^\infty f = f(a) + \sqrt{2\pi\sigma^2}\,\mathrm{erfc}(a/\sqrt{2\sigma^2})/2`, and by Poisson
    summation :math:`Z = \sqrt{2\pi\sigma^2}\,\sum_k e^{-2\pi^2\sigma^2k^2} \ge \sqrt{2\pi\sigma^2}`,
    so :math:`P(|Y| > T) \le 2 f(a)/\sqrt{2\pi\sigma^2} + \mathrm{erfc}(a/\sqrt{2\sigma^2})`. The T found
    is at least the exact one (the bound is above the exact tail) and only a cell or so larger for σ ≫ 1.

    Examples
    --------
    >>> exact, bound = tail_cells(1e4), tail_cells_bound(1e4)
    >>> exact <= bound <= exact + 1, math.exp(log_tail(1e4, bound)) <= FALSE_REJECTION
    (True, True)
    """
    if not 0.0 < target < 1.0:
        raise InvalidParameterError(f"target must be in (0, 1), got {target!r}", parameter="target")
    s2 = float(sigma2)
    if not (math.isfinite(s2) and s2 > 0):
        raise InvalidParameterError(f"sigma2 must be a finite number > 0, got {sigma2!r}", parameter="sigma2")

    def bound(t: int) -> float:
        a = t + 1
        return 2 * math.exp(-a * a / (2 * s2)) / math.sqrt(2 * math.pi * s2) + math.erfc(a / math.sqrt(2 * s2))

    hi = max(1, math.ceil(math.sqrt(2 * s2 * math.log(4 / target))))
    while bound(hi) > target:
        hi *= 2
    lo = -1  # the bound at T = −1 is ≥ 1 > target
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if bound(mid) <= target:
            hi = mid
        else:
            lo = mid
    return hi


def laplace_log_tail(scale: Fraction | float, cells: int) -> float:
    """Natural log of :math:`P(|Y| > \\text{cells})` for the discrete Laplace with scale b = ``scale`` (grid units).

    :math:`\\ln 2 − (T + 1)/b − \\ln(1 + e^{-1/b})` for T ≥ 0 (module docstring), 0 below.

    Examples
    --------
    >>> round(math.exp(laplace_log_tail(1.0, 2)), 6), round(2 * math.exp(-3) / (1 + math.exp(-1)), 6)
    (0.072795, 0.072795)
    >>> laplace_log_tail(1.0, 43) > math.log(2.0**-64) >= laplace_log_tail(1.0, 44)  # b = 1: T = 44 for 2⁻⁶⁴
    True
    >>> laplace_log_tail(1.0, -1)  # P(|Y| > −1) = 1
    0.0
    """
    b = float(scale)
    if math.isfinite(b) and b > 0:
        return 0.0 if int(cells) < 0 else math.log(2.0) - (int(cells) + 1) / b - math.log1p(math.exp(-1.0 / b))
    raise InvalidParameterError(f"scale must be a finite number > 0, got {scale!r}", parameter="scale")


def _noise_log_tail(mech: DiscreteGaussianMechanism | DiscreteLaplaceMechanism, cells: int) -> float:
    if isinstance(mech, DiscreteLaplaceMechanism):
        return laplace_log_tail(mech.scale, cells)
    return log_tail(mech.sigma2, cells)


def noise_tail_cells(mech: DiscreteGaussianMechanism | DiscreteLaplaceMechanism,
                     target: float = FALSE_REJECTION) -> int:
    """The smallest integer T ≥ 0 with :math:`P(|Y| > T) ≤` ``target`` for the mechanism's noise.

    Examples
    --------
    >>> laplace = DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=1.0, integer_inputs=True)  # b = 1
    >>> t = noise_tail_cells(laplace, 0.05)
    >>> t, math.exp(laplace_log_tail(1, t)) <= 0.05 < math.exp(laplace_log_tail(1, t - 1))
    (3, True)
    >>> noise_tail_cells(laplace)  # 2⁻⁶⁴: T grows like b · 64 ln 2
    44
    """
    if not isinstance(mech, DiscreteLaplaceMechanism):
        return tail_cells(mech.sigma2, target)
    return _laplace_tail_cells(mech.scale, target)


def _laplace_tail_cells(scale: Fraction, target: float) -> int:
    """:func:`noise_tail_cells` for the discrete Laplace with scale b = ``scale`` (grid units)."""
    if not 0.0 < target < 1.0:
        raise InvalidParameterError(f"target must be in (0, 1), got {target!r}", parameter="target")
    b, log_target = float(scale), math.log(target)
    t = max(0, math.ceil(b * (math.log(2.0) - math.log1p(math.exp(-1.0 / b)) - log_target)) - 1)
    while t > 0 and laplace_log_tail(b, t - 1) <= log_target:  # the closed form's rounding, either way
        t -= 1
    while laplace_log_tail(b, t) > log_target:
        t += 1
    return t


def gate_cells(mech: DiscreteGaussianMechanism | DiscreteLaplaceMechanism, m: int,
               false_alarm: float = OUTLIER_FALSE_ALARM) -> int:
    """The smallest integer :math:`T_m ≥ 0` with :math:`P(\\max_{j \\le m} |Y_j| > T_m) ≤` ``false_alarm``.

    ``Y_1 … Y_m`` are independent draws of the mechanism's noise (grid units), so
    :math:`P(\\max_j |Y_j| > T) = 1 − (1 − P(|Y| > T))^m` and :math:`T_m` is
    :func:`noise_tail_cells` at the per-draw target :math:`1 − (1 − α)^{1/m}` (module docstring).

    Examples
    --------
    σ² = 1 grid units², 1,000 draws, α = 1 %: one draw beyond the gate has probability ≤ 1.005e-5:

    >>> gaussian = DiscreteGaussianMechanism(epsilon=1.0, delta=1e-6, sensitivity=1.0, integer_inputs=True)
    >>> t = gate_cells(gaussian, 1000)
    >>> p = [math.exp(log_tail(gaussian.sigma2, c)) for c in (t - 1, t)]
    >>> 1 - (1 - p[1]) ** 1000 <= OUTLIER_FALSE_ALARM < 1 - (1 - p[0]) ** 1000
    True
    >>> gate_cells(gaussian, 1) < gate_cells(gaussian, 40) < t < gate_cells(gaussian, 10_000)  # grows with m
    True
    """
    if isinstance(m, bool) or not isinstance(m, int | np.integer) or m < 1:
        raise InvalidParameterError(f"m must be an integer >= 1, got {m!r}", parameter="m")
    if not 0.0 < false_alarm < 1.0:
        raise InvalidParameterError(f"false_alarm must be in (0, 1), got {false_alarm!r}", parameter="false_alarm")
    if isinstance(mech, DiscreteLaplaceMechanism):
        return _gate_cells("laplace", Fraction(mech.scale), int(m), float(false_alarm))
    return _gate_cells("gaussian", Fraction(mech.sigma2), int(m), float(false_alarm))


@functools.lru_cache(maxsize=256)
def _gate_cells(kind: str, parameter: Fraction, m: int, false_alarm: float) -> int:
    """:func:`gate_cells` by the noise's parameter (the bisection over exact tails is worth keeping per window)."""
    target = -math.expm1(math.log1p(-false_alarm) / m)
    return _laplace_tail_cells(parameter, target) if kind == "laplace" else tail_cells(parameter, target)


def acceptance_cells(network: SensorNetwork, target: float = FALSE_REJECTION) -> tuple[int | None, int | None]:
    """The grid indices ``(n_lo − T, n_hi + T)`` the collector accepts (``None``: no upper end).

    Examples
    --------
    Readings in [0, 50] on the grid 0.5·ℤ (``n_lo = 0``, ``n_hi = 100``), σ ≈ 7.16 (σ² ≈ 205 grid units²):

    >>> from dpcloak.sensors import Relation, SensorNetwork
    >>> net = SensorNetwork.from_coordinates(sensors=[[0.0, 0.0], [100.0, 0.0]], relation=Relation.move(150.0),
    ...                                      epsilon=1.0, delta=1e-6, budget=(10.0, 1e-5), diffusion=2000.0,
    ...                                      reading_range=(0.0, 50.0), resolution=0.5)
    >>> t = tail_cells(net.mechanism.sigma2)
    >>> t, acceptance_cells(net)
    (131, (-131, 231))
    """
    mech = _noise_of(network)
    t = noise_tail_cells(mech, target)
    lo, hi = network.reading_range
    n_lo = int(mech.to_grid(np.array([float(lo)]))[0])
    n_hi = None if hi is None else int(mech.to_grid(np.array([float(hi)]))[0])
    return n_lo - t, None if n_hi is None else n_hi + t


def acceptance_interval(network: SensorNetwork, target: float = FALSE_REJECTION) -> tuple[float, float]:
    """The values the collector accepts, in reading units (``inf`` upper end when the range has none).

    Examples
    --------
    >>> from dpcloak.sensors import Relation, SensorNetwork
    >>> net = SensorNetwork.from_coordinates(sensors=[[0.0, 0.0], [100.0, 0.0]], relation=Relation.move(150.0),
    ...                                      epsilon=1.0, delta=1e-6, budget=(10.0, 1e-5), diffusion=2000.0,
    ...                                      reading_range=(0.0, 50.0), resolution=0.5)
    >>> acceptance_interval(net)  # the grid cells of acceptance_cells times 0.5
    (-65.5, 115.5)
    >>> open_ended = SensorNetwork.from_coordinates(  # the default reading range (0, None): no upper limit
    ...     sensors=[[0.0, 0.0], [100.0, 0.0]], relation=Relation.move(150.0), epsilon=1.0, delta=1e-6,
    ...     budget=(10.0, 1e-5), diffusion=2000.0, resolution=0.5)
    >>> acceptance_interval(open_ended)
    (-65.5, inf)
    """
    low, high = acceptance_cells(network, target)
    g = float(network.resolution)
    return (float(low) * g if low is not None else -math.inf, math.inf if high is None else float(high) * g)


def counter_acceptance_interval(counter: ContinualCounter, reading_range: tuple[float, float | None],
                                target: float = FALSE_REJECTION) -> tuple[float, float]:
    """The outputs ``g · V_t`` of a continual counter the collector accepts (count units; ``inf``: no upper end).

    ``V_t = w_t + Y_t``: the encoder's integer for counts clipped to ``reading_range`` lies in
    :meth:`~dpcloak.privacy.continual.ContinualCounter.encoded_range` ``[w_lo, w_hi]``, and the interval is
    ``g · [w_lo − T, w_hi + T]`` with T the tail cells (:func:`tail_cells_bound`,
    P(:math:`|Y| > T`) ≤ ``target``) of the stream's largest noise variance: the discrete Gaussian's
    ratio of masses at σ₂ > σ₁ grows with :math:`|y|` (monotone likelihood ratio), so its tail beyond T
    grows with σ², and every position's noise is beyond T with probability at most ``target``. A stolen
    key can therefore not send a running total beyond what the declared counts and the noise can produce
    (see ``acceptance_interval`` for per-window releases).

    Examples
    --------
    >>> from dpcloak.privacy.continual import ContinualCounter
    >>> c = ContinualCounter(horizon=24, epsilon=1.0, delta=1e-6, method="tree")
    >>> low, high = counter_acceptance_interval(c, (0.0, 50.0))
    >>> t = tail_cells_bound(max(c.noise_variances()))
    >>> (low, high) == (-t * c.grid, (c.encoded_range(0.0, 50.0)[1] + t) * c.grid)
    True
    >>> counter_acceptance_interval(c, (0.0, None))[1]  # no declared upper reading: none on the outputs
    inf
    """
    w_lo, w_hi = counter.encoded_range(*reading_range)
    t = tail_cells_bound(max(counter.noise_variances()), target)
    g = counter.grid
    return float((w_lo - t) * g), math.inf if w_hi is None else float((w_hi + t) * g)


def false_rejection_probability(network: SensorNetwork, target: float = FALSE_REJECTION) -> float:
    """:math:`P(|Y| > T)` for the network's noise and the T the collector uses (module docstring).

    Examples
    --------
    >>> from dpcloak.sensors import Relation, SensorNetwork
    >>> net = SensorNetwork.from_coordinates(sensors=[[0.0, 0.0], [100.0, 0.0]], relation=Relation.move(150.0),
    ...                                      epsilon=1.0, delta=1e-6, budget=(10.0, 1e-5), diffusion=2000.0,
    ...                                      reading_range=(0.0, 50.0), resolution=0.5)
    >>> p = false_rejection_probability(net)
    >>> 0 < p <= FALSE_REJECTION, p == math.exp(log_tail(net.mechanism.sigma2, tail_cells(net.mechanism.sigma2)))
    (True, True)
    >>> false_rejection_probability(net, target=1e-6) <= 1e-6
    True
    """
    mech = _noise_of(network)
    return math.exp(_noise_log_tail(mech, noise_tail_cells(mech, target)))


def _noise_of(network: SensorNetwork) -> DiscreteGaussianMechanism | DiscreteLaplaceMechanism:
    """The network's exact discrete noise; the collector's acceptance bounds are derived for these two."""
    mech = network.mechanism
    if not isinstance(mech, DiscreteGaussianMechanism | DiscreteLaplaceMechanism):
        raise InvalidParameterError(f"the collector's report checks are derived for exact discrete Gaussian or "
                                    f"Laplace noise; this {network.measurement} network adds {network.noise}",
                                    parameter="network")
    return mech


def influence_bound(network: SensorNetwork, target: float = FALSE_REJECTION) -> float:
    """Largest difference between two values the collector accepts from one sensor (``inf`` without ``hi``).

    Examples
    --------
    D = g (n_hi − n_lo + 2T) = 0.5 · (100 + 2 · 131):

    >>> from dpcloak.sensors import Relation, SensorNetwork
    >>> net = SensorNetwork.from_coordinates(sensors=[[0.0, 0.0], [100.0, 0.0]], relation=Relation.move(150.0),
    ...                                      epsilon=1.0, delta=1e-6, budget=(10.0, 1e-5), diffusion=2000.0,
    ...                                      reading_range=(0.0, 50.0), resolution=0.5)
    >>> influence_bound(net)
    181.0
    """
    low, high = acceptance_interval(network, target)
    return high - low


@dataclass(frozen=True)
class RobustRecovery:
    """A window's map with at most one outlying sensor left out (:func:`robust_recover`).

    Attributes
    ----------
    recovery : NetworkRecovery
        The map: from every present sensor, or from all but ``outlier``.
    outlier : int or None
        The sensor flagged as outlying (its reading left out), ``None`` when none was.
    outlier_z : float or None
        Its standardised leave-one-out prediction error (> :data:`OUTLIER_Z`).
    tested : int
        How many sensors were tested leave-one-out (each one recovery; 0 when no residual passed the gate).

    Examples
    --------
    >>> from dpcloak.service.examples import two_sensor_deployment
    >>> net = two_sensor_deployment().sensor_network
    >>> robust = robust_recover(net, np.array([10.0, 4.0]), np.array([True, True]), uncertainty_draws=0)
    >>> robust.outlier is None, robust.recovery.sources.shape, robust.tested
    (True, (2,), 0)
    """

    recovery: NetworkRecovery
    outlier: int | None
    outlier_z: float | None
    tested: int = 0


def robust_recover(network: SensorNetwork, values: NDArray[np.float64], present: NDArray[np.bool_], *,
                   warm_start: NetworkRecovery | None = None, uncertainty_draws: int = 8,
                   noise_std: float | None = None) -> RobustRecovery:
    r"""Recover a window's map, leaving out one sensor the others contradict (module docstring).

    Parameters
    ----------
    network : SensorNetwork
        The deployment's network.
    values : ndarray, shape (m,)
        Private readings (any value where ``present`` is false).
    present : ndarray of bool, shape (m,)
        The sensors that reported.
    warm_start : NetworkRecovery, optional
        The previous window's recovery.
    uncertainty_draws : int, default 8
        Bootstrap draws of the returned map's uncertainty (fewer than the library's 10, for the collector's
        measured cost: its 90 % value is then the largest draw, which covers about 8/9 of exchangeable errors,
        :mod:`dpcloak.sensors.result`).
    noise_std : float, optional
        The readings' noise when it is not the network's per-reading noise (counts networks only, e.g. a
        continual counter's decoded increments: :meth:`SensorNetwork.recover <dpcloak.sensors.SensorNetwork.recover>`).

    Returns
    -------
    RobustRecovery

    Examples
    --------
    A 6 x 4 floor, one crowd of 20 people; sensor 7 sends the largest value the collector accepts:

    >>> from dpcloak.service import _network
    >>> from dpcloak.metrics import emd
    >>> net = _network.floor_plan_network(width=12.0, height=8.0, sensor_cols=6, sensor_rows=4, epsilon=1.0,
    ...                                   delta=1e-6, budget=(1e4, 1e-5), spacing=2.0, reading_high=100.0)
    >>> crowd = np.zeros(net.n_sources)
    >>> crowd[10] = 20.0
    >>> honest = net.model.matvec(crowd) + np.random.default_rng(3).normal(0.0, net.sigma, net.n_sensors)
    >>> poisoned = honest.copy()
    >>> poisoned[7] = acceptance_interval(net)[1]
    >>> everyone = np.ones(net.n_sensors, dtype=bool)
    >>> robust = robust_recover(net, poisoned, everyone, uncertainty_draws=0)
    >>> robust.outlier, robust.outlier_z > OUTLIER_Z, robust.tested
    (7, True, 3)
    >>> robust_recover(net, honest, everyone, uncertainty_draws=0).outlier is None
    True
    """
    present = np.asarray(present, dtype=bool)
    full = network.recover(values, present=present, warm_start=warm_start, uncertainty_draws=uncertainty_draws,
                           noise_std=noise_std)
    m = int(present.sum())
    if network.measurement == "counts" or m < 3:
        return RobustRecovery(full, None, None)
    model = network.model  # its matvec: matrix-free for a model that is (no dense m x n at city scale)
    sigma = float(network.sigma)
    gate = gate_cells(_noise_of(network), m) * float(network.resolution)
    residual = np.where(present, np.abs(values - model.matvec(full.sources)), 0.0)
    candidates = [int(j) for j in np.argsort(residual)[::-1][:OUTLIER_CANDIDATES] if residual[j] > gate]
    best: tuple[float, int, NetworkRecovery] | None = None
    for j in candidates:
        others = present.copy()
        others[j] = False
        loo = network.recover(values, present=others, warm_start=full, uncertainty_draws=0)
        predicted = model.matvec(loo.sources)
        spread = math.sqrt(float(np.mean((values[others] - predicted[others]) ** 2)))
        z = abs(float(values[j] - predicted[j])) / max(sigma, spread)
        if z > OUTLIER_Z and (best is None or z > best[0]):
            best = (z, j, loo)
    if best is None:
        return RobustRecovery(full, None, None, len(candidates))
    z, j, loo = best
    others = present.copy()
    others[j] = False
    if uncertainty_draws:
        loo = network.recover(values, present=others, warm_start=loo, uncertainty_draws=uncertainty_draws)
    return RobustRecovery(loo, j, z, len(candidates))

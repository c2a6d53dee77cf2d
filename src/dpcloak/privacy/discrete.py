r"""Floating-point-safe noise for deployment: exact discrete Laplace and discrete Gaussian samplers.

Why not ``numpy`` noise in deployment
-------------------------------------
A float ``x + Z`` with ``Z`` drawn by floating-point arithmetic does not have the distribution the
proof assumes: the set of doubles a sampler can return near ``x + z`` depends on ``x``, so the
low-order bits of the output can reveal the input (Mironov, "On significance of the least
significant bits for differential privacy", CCS 2012 — the attack recovers the input from Laplace
samples of common libraries). :class:`~dpcloak.privacy.GaussianMechanism` and
:class:`~dpcloak.privacy.LaplaceMechanism` are for experiments and simulation.

What this module does instead
-----------------------------
Readings are rounded to a fine grid ``resolution · ℤ`` (deterministic pre-processing, paid for in
the sensitivity), integer noise is added with an *exact* sampler, and the integer result is scaled
back to the grid. The samplers are Canonne, Kamath & Steinke, "The Discrete Gaussian for
Differential Privacy" (NeurIPS 2020), Algorithms 1–3: Bernoulli(exp(−γ)) for rational γ, the
discrete Laplace :math:`P(y) \propto e^{-|y|/b}` and the discrete Gaussian
:math:`P(y) \propto e^{-y^2/(2\sigma^2)}` on ℤ, using only integer arithmetic and
:class:`fractions.Fraction` — no floating point touches the noise — and, by default, uniform
integers from a cryptographically secure generator: a ChaCha20 stream under a fresh key from the OS
CSPRNG for each release (:class:`~dpcloak.privacy.bulk.WordSource`). Draws from the OS-keyed or a seeded
source (:meth:`~_GridMechanism.privatize`, :func:`discrete_laplace_noise`, :func:`discrete_gaussian_noise`,
the heatmap levels, the continual counters) use the vectorised exact samplers of :mod:`dpcloak.privacy.bulk`
(the same distributions; numpy integer arithmetic on 64-bit words, with doubles only deciding comparisons
they certainly decide and exact rationals for the rest); the one-draw-at-a-time samplers serve integer
sources such as the keyed stream (:meth:`~_GridMechanism.sample_noise`).

**Meant for deployment:** :class:`DiscreteGaussianMechanism` (the local Gaussian mechanism of
Gilbert & McMillan / McMillan's thesis) and :class:`DiscreteLaplaceMechanism`, called with ``rng=None`` (the default:
the OS CSPRNG). Passing ``rng`` (a seed or ``numpy.random.Generator``) makes the draws
reproducible for tests and experiments and is *not* cryptographically secure.

Why these samplers rather than OpenDP's: OpenDP implements the same Canonne–Kamath–Steinke
algorithms, but as a compiled Rust library with its own measurement-combinator API; the samplers are
short, exact and auditable in pure Python, and keeping them here lets them draw from any integer
source — the OS-keyed stream in deployment, a seeded generator in tests, or the keyed ChaCha20 stream
of :mod:`dpcloak.privacy.local` — without a binary dependency.

Rounding to the grid, exactly
-----------------------------
:meth:`~_GridMechanism.to_grid` returns :math:`n_i = \operatorname{round}(x_i/g)` (half to even) of the
*exact* rational :math:`x_i/g` — not of the floating-point quotient, whose rounding error can cross a
tie (with g = 0.1, ``rint(-101.55/0.1) - rint(-102.55/0.1) == 11`` although the inputs are 1 apart).
It computes ``y = fl(x/g)`` and keeps ``rint(y)`` only where ``y`` is farther from a half-integer than
the division's error bound (``|x/g − y| ≤ 2⁻⁵³|y|`` plus the subnormal spacing, IEEE 754 correctly
rounded division); the rare rest is rounded with :class:`fractions.Fraction`. Inputs with
:math:`|x| > 2^{52} g` (grid index beyond the integers exact in a double) are refused.

Calibration (d = ``dimension``, the number of coordinates one release rounds)
-------------------------------------------------------------------------------
For exact rounding :math:`|n_i - n'_i| \le |x_i - x'_i|/g + 1`, so for neighbouring inputs the integer
vectors differ by at most :math:`\lfloor\Delta_1/g\rfloor + d` in ℓ1 (an integer bounded by
:math:`\Delta_1/g + d`) and by at most :math:`\Delta_2/g + \sqrt{d}` in ℓ2; as the squared ℓ2 norm of
an integer vector is an integer, :math:`\sqrt{\lfloor(\Delta_2/g + \sqrt d)^2\rfloor}` (rounded up to a
double). Both are computed in exact rational arithmetic. A release may round at most ``dimension``
coordinates: :meth:`~_GridMechanism.privatize` refuses a vector (last axis) longer than
``dimension``, and :meth:`~_GridMechanism.check_dimension` lets a caller (a privatizer for m
sensors) check up front.

* Discrete Laplace with scale b (grid units): ε-DP with ε = Δ1,grid / b (CKS §2); b is the
  exact rational Δ1,grid/ε, rounded *up* to a rational with a numerator below 2⁵⁷ when it has a
  larger one (relative change < 2⁻⁵⁶), so Δ1,grid / b ≤ ε holds exactly for the b sampled.
* Discrete Gaussian with variance parameter σ² (grid units): :math:`\tfrac12(\Delta_{2,grid}/\sigma)^2`
  -concentrated DP, i.e. Rényi DP of order α at most :math:`\alpha\Delta^2/(2\sigma^2)` (CKS
  Theorem 14, multivariate) — the same Rényi curve as the continuous Gaussian. σ is the smallest
  value whose (ε, δ) from that Rényi curve, converted by the one accountant's conversion
  (:func:`~dpcloak.privacy.accounting.zcdp_epsilon`, every Rényi order), is at most ε at the target δ;
  it is re-checked before it is returned (``dp_accounting`` is only the tests' cross-check). The price of going through
  concentrated DP: at (ε, δ) = (1, 0.1) and a fine grid, σ is about 1.26× the continuous analytic σ
  (1.366 vs 1.086 for Δ2 = 1, ``benchmarks/bench_mechanisms.py``).
* Noise scales (b or σ) above :data:`MAX_GRID_SCALE` = 2⁵⁶ grid steps are refused: the released
  grid index would no longer be an exact double (use a coarser ``resolution`` or a larger ε).
"""

from __future__ import annotations

import math
import random
import secrets
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import optimize

from dpcloak._rng import RngLike, as_generator
from dpcloak._validation import check_int, check_probability, check_real
from dpcloak.errors import InvalidParameterError
from dpcloak.privacy.bulk import WordSource, bernoulli_exp_unit, discrete_gaussian, discrete_laplace

if TYPE_CHECKING:
    from dpcloak.privacy.accounting import DiscreteGaussianEvent, DiscreteLaplaceEvent

from dpcloak.privacy.mechanisms import DEFAULT_NEIGHBOURING, AdditiveMechanism, PrivacyGuarantee, check_values

__all__ = [
    "RandBelow",
    "secure_randbelow",
    "generator_randbelow",
    "bernoulli_exp",
    "sample_discrete_laplace",
    "sample_discrete_gaussian",
    "DiscreteLaplaceMechanism",
    "DiscreteGaussianMechanism",
    "sampler_scale",
    "laplace_grid_scale",
    "discrete_laplace_noise",
    "discrete_gaussian_noise",
    "l2_grid_sensitivity",
    "grid_index",
    "MAX_GRID_INDEX",
    "MAX_GRID_SCALE",
]

RandBelow = Callable[[int], int]
"""A source of uniform integers: ``randbelow(n)`` is uniform on ``{0, …, n − 1}``."""

DEFAULT_GRID_CELLS = 1024  # default resolution = sensitivity / 1024

MAX_GRID_INDEX = 2**52
"""Largest ``|reading| / resolution`` accepted: grid indices stay exact in a double."""

MAX_GRID_SCALE = 2**56
"""Largest noise scale (discrete Laplace b, discrete Gaussian σ) in grid steps."""

MIN_LAPLACE_SCALE = Fraction(1, 2**20)
"""Smallest discrete Laplace scale b in grid steps: below it the exact sampler's tables grow without bound
(b = 2⁻²⁰ already gives noise 0 except with probability ~e^(-10⁶))."""

_SCALE_BITS = 57  # numerators of the sampled discrete Laplace scale stay below 2**57 (room for 64-bit products)


def secure_randbelow(n: int) -> int:
    """Uniform integer in ``[0, n)`` from the operating system's CSPRNG (:func:`secrets.randbelow`).

    Examples
    --------
    >>> draws = {secure_randbelow(3) for _ in range(100)}
    >>> draws <= {0, 1, 2}
    True
    """
    return secrets.randbelow(n)


def generator_randbelow(gen: np.random.Generator) -> RandBelow:
    """Uniform integers in ``[0, n)`` for arbitrarily large ``n``, reproducible from a numpy Generator.

    A Mersenne-Twister :class:`random.Random` seeded from ``gen`` (its ``randrange`` is exact for any
    ``n``). Not cryptographically secure: for tests and experiments.

    Examples
    --------
    >>> import numpy as np
    >>> a = generator_randbelow(np.random.default_rng(0))
    >>> b = generator_randbelow(np.random.default_rng(0))
    >>> [a(10**30) for _ in range(3)] == [b(10**30) for _ in range(3)]  # reproducible, any n
    True
    """
    return random.Random(int(gen.integers(2**63))).randrange


def randbelow_for(rng: RngLike) -> RandBelow:
    """The integer source of one release: ``None`` (deployment) gives uniform integers from a ChaCha20 stream
    under a fresh key from the OS CSPRNG (:class:`~dpcloak.privacy.bulk.WordSource`, buffered: no system call
    per draw); a seed or Generator gives :func:`generator_randbelow` (reproducible, not secure)."""
    return WordSource(None).randbelow if rng is None else generator_randbelow(as_generator(rng))


def _bernoulli_exp(num: int, den: int, randbelow: RandBelow) -> bool:
    """Bernoulli(exp(−num/den)) for integers num ≥ 0, den ≥ 1: ⌊γ⌋ Bernoulli(e⁻¹) factors, then the rest."""
    while num > den:
        if not bernoulli_exp_unit(1, 1, randbelow):
            return False
        num -= den
    return bernoulli_exp_unit(num, den, randbelow)


def bernoulli_exp(gamma: Fraction, randbelow: RandBelow) -> bool:
    """Exact Bernoulli(exp(−γ)) for rational γ ≥ 0 (Canonne–Kamath–Steinke 2020, Algorithm 1).

    Examples
    --------
    >>> from fractions import Fraction
    >>> import numpy as np
    >>> rb = generator_randbelow(np.random.default_rng(0))
    >>> bernoulli_exp(Fraction(0), rb)  # exp(0) = 1
    True
    >>> draws = [bernoulli_exp(Fraction(1, 2), rb) for _ in range(4000)]
    >>> bool(abs(np.mean(draws) - np.exp(-0.5)) < 0.03)
    True
    """
    gamma = Fraction(gamma)
    if gamma < 0:
        raise InvalidParameterError(f"gamma must be >= 0, got {gamma}", parameter="gamma")
    return _bernoulli_exp(gamma.numerator, gamma.denominator, randbelow)


def _discrete_laplace(num: int, den: int, randbelow: RandBelow) -> int:
    """Discrete Laplace with scale b = num/den (CKS Algorithm 2 with t = num, s = den)."""
    t, s = num, den
    while True:
        u = randbelow(t)
        if not _bernoulli_exp(u, t, randbelow):
            continue
        v = 0
        while bernoulli_exp_unit(1, 1, randbelow):
            v += 1
        y = (u + t * v) // s
        negative = randbelow(2) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


def sample_discrete_laplace(scale: Fraction, randbelow: RandBelow) -> int:
    r"""One exact draw from the discrete Laplace :math:`P(y) \propto e^{-|y|/b}` on ℤ, b = ``scale`` > 0.

    Canonne–Kamath–Steinke 2020, Algorithm 2: X geometric with ratio e^{−1/t} (built from U uniform on
    {0, …, t−1} accepted with e^{−U/t} and V ~ Geometric(1 − e^{−1})), Y = ⌊X/s⌋, random sign,
    rejecting the negative zero; here b = t/s in lowest terms.

    Examples
    --------
    >>> from fractions import Fraction
    >>> import numpy as np
    >>> rb = generator_randbelow(np.random.default_rng(0))
    >>> y = [sample_discrete_laplace(Fraction(1), rb) for _ in range(4000)]
    >>> all(isinstance(v, int) for v in y), bool(abs(np.mean(y)) < 0.1)
    (True, True)
    >>> q = np.exp(-1.0)  # P(0) = (1 − q)/(1 + q) for b = 1
    >>> bool(abs(y.count(0) / 4000 - (1 - q) / (1 + q)) < 0.03)
    True
    """
    scale = Fraction(scale)
    if scale <= 0:
        raise InvalidParameterError(f"scale must be > 0, got {scale}", parameter="scale")
    return _discrete_laplace(scale.numerator, scale.denominator, randbelow)


def sample_discrete_gaussian(sigma2: Fraction, randbelow: RandBelow) -> int:
    r"""One exact draw from the discrete Gaussian :math:`P(y) \propto e^{-y^2/(2\sigma^2)}` on ℤ.

    Canonne–Kamath–Steinke 2020, Algorithm 3: propose from the discrete Laplace with scale
    ``t = ⌊σ⌋ + 1`` and accept with probability ``exp(−(|y| − σ²/t)² / (2σ²))``; with σ² = a/b the
    exponent is the integer ratio ``(|y| b t − a)² / (2 a b t²)``.

    Examples
    --------
    >>> from fractions import Fraction
    >>> import numpy as np
    >>> rb = generator_randbelow(np.random.default_rng(0))
    >>> y = [sample_discrete_gaussian(Fraction(4), rb) for _ in range(4000)]
    >>> all(isinstance(v, int) for v in y), bool(abs(np.var(y) / 4 - 1) < 0.1)  # variance ≈ σ² for σ² = 4
    (True, True)
    """
    a, b, t = _gaussian_parameters(sigma2)
    while True:
        y = _discrete_laplace(t, 1, randbelow)
        if _gaussian_accept(y, a, b, t, randbelow):
            return y


def _gaussian_parameters(sigma2: Fraction) -> tuple[int, int, int]:
    """σ² = a/b in lowest terms and the proposal scale t = ⌊σ⌋ + 1 of CKS Algorithm 3."""
    sigma2 = Fraction(sigma2)
    if sigma2 <= 0:
        raise InvalidParameterError(f"sigma2 must be > 0, got {sigma2}", parameter="sigma2")
    a, b = sigma2.numerator, sigma2.denominator
    return a, b, math.isqrt(a // b) + 1


def _gaussian_accept(y: int, a: int, b: int, t: int, randbelow: RandBelow) -> bool:
    """CKS Algorithm 3's acceptance: Bernoulli(exp(−(|y| b t − a)² / (2 a b t²))), exactly."""
    return _bernoulli_exp((abs(y) * b * t - a) ** 2, 2 * a * b * t * t, randbelow)


def discrete_gaussian_noise(sigma2: Fraction, size: int, *, rng: RngLike = None) -> NDArray[Any]:
    r"""``size`` i.i.d. exact draws of :math:`P(y) \propto e^{-y^2/(2\sigma^2)}` on ℤ (CKS Algorithm 3, vectorised).

    :func:`dpcloak.privacy.bulk.discrete_gaussian`: discrete Laplace proposals drawn all at once by the
    vectorised exact sampler, accepted with the exact probability ``exp(−(|y| − σ²/t)²/(2σ²))`` decided on
    64-bit words by thresholds that bracket it rigorously (a cached table per σ² for large batches, double
    enclosures per proposal otherwise; exact rational arithmetic when a word falls between them),
    so every draw has exactly the distribution of :func:`sample_discrete_gaussian` (large batches run as one
    compiled pass over the words, its undecided cases finished by the same exact paths). ``rng=None``:
    ChaCha20 under a fresh OS key; a seed or Generator: reproducible.

    Examples
    --------
    >>> from fractions import Fraction
    >>> y = discrete_gaussian_noise(Fraction(9), 20000, rng=0)
    >>> y.shape, bool(abs(y.var() / 9 - 1) < 0.05)  # variance ≈ σ² when σ ≥ 1
    ((20000,), True)
    """
    sigma2 = Fraction(sigma2)
    if sigma2 <= 0:
        raise InvalidParameterError(f"sigma2 must be > 0, got {sigma2}", parameter="sigma2")
    if math.isqrt(sigma2.numerator // sigma2.denominator) >= 2**56:
        raise InvalidParameterError(f"sigma2 must be below 2^112 (sigma below 2^56), got {float(sigma2):.6g}",
                                    parameter="sigma2")
    out = discrete_gaussian([sigma2], np.zeros(check_int("size", size, minimum=0), dtype=np.intp), WordSource(rng))
    try:
        return out.astype(np.int64)
    except OverflowError:
        return out


def _exact_grid_indices(raw: NDArray[Any], g: float, name: str) -> NDArray[np.int64]:
    """:func:`grid_indices` of integers or rationals, in exact rational arithmetic throughout."""
    flat = raw.reshape(-1).tolist()
    try:
        exact = [Fraction(v) for v in flat]
    except (TypeError, ValueError, OverflowError):
        raise InvalidParameterError(f"{name} must be finite numbers (integers, fractions or floats)",
                                    parameter=name) from None
    limit, q = MAX_GRID_INDEX * Fraction(g), Fraction(g)
    for v, e in zip(flat, exact, strict=True):
        if abs(e) > limit:
            raise InvalidParameterError(
                f"{name} must have magnitude at most {float(limit):.6g} (2^52 grid steps of {g:.6g}) so that grid "
                f"indices stay exact; got {v!r}", parameter=name
            )
    return np.array([round(e / q) for e in exact], dtype=np.int64).reshape(raw.shape)


def grid_indices(values: ArrayLike, resolution: float, *, name: str = "values") -> NDArray[np.int64]:
    """``round(x / resolution)`` (half to even) of the exact rational ``x / resolution``, as int64.

    Fast path ``rint(fl(x/g))`` where ``fl(x/g)`` is provably on the same side of every tie as the
    exact quotient (module docstring); :class:`fractions.Fraction` for the rest. Integers and
    rationals (int64, Python ints of any size, :class:`~fractions.Fraction`) are rounded in exact
    rational arithmetic from their own value, never through a double. Refuses
    ``|x| > 2**52 · resolution``.

    Examples
    --------
    Two int64 readings 6 apart beyond 2⁵³ (no double holds either) share a cell of width 8; through
    doubles they landed two cells apart:

    >>> import numpy as np
    >>> grid_indices(np.array([2**53 + 5, 2**53 + 11], dtype=np.int64), 8.0).tolist()
    [1125899906842625, 1125899906842625]
    """
    g = float(resolution)
    raw = values if isinstance(values, np.ndarray) else np.asarray(values)
    if raw.dtype.kind in "iuO":
        return _exact_grid_indices(raw, g, name)
    x = check_values(values, name=name)
    limit = MAX_GRID_INDEX * g  # exact: scaling by a power of two
    too_big = np.abs(x) > limit
    if np.any(too_big):
        worst = float(x[too_big].flat[0])
        raise InvalidParameterError(
            f"{name} must have magnitude at most {limit:.6g} (2^52 grid steps of {g:.6g}) so that grid indices stay "
            f"exact; got {worst:.6g}", parameter=name
        )
    flat = x.reshape(-1)
    y = flat / g
    idx = np.rint(y)
    margin = np.abs(y) * 2.0**-52 + 2.0**-1074  # twice the bound on |x/g − fl(x/g)|
    out = idx.astype(np.int64)
    q = Fraction(g)
    for i in np.flatnonzero((0.5 - np.abs(y - idx)) <= margin):
        out[i] = round(Fraction(float(flat[i])) / q)
    return out.reshape(x.shape)


def grid_index(value: float, resolution: float, *, name: str = "value") -> int:
    """:func:`grid_indices` of one number, as a Python integer (the same exact rounding, without numpy).

    Examples
    --------
    >>> grid_index(-101.55, 0.1), grid_index(-102.55, 0.1)  # 10 steps apart, as the inputs (rint(fl(x/g)): 11)
    (-1015, -1025)
    >>> grid_index(2.5, 1.0), grid_index(3, 0.5)  # half to even; integers exactly
    (2, 6)
    """
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2**53:
        return int(_exact_grid_indices(np.array([value], dtype=object), float(resolution), name)[0])
    x, g = float(value), float(resolution)
    if not math.isfinite(x) or abs(x) > MAX_GRID_INDEX * g:
        return int(grid_indices(np.array([x]), g, name=name)[0])  # refused there, with the message
    y = x / g
    idx = round(y)
    if 0.5 - abs(y - idx) <= abs(y) * 2.0**-52 + 2.0**-1074:  # fl(x/g) may sit on the wrong side of a tie
        return round(Fraction(x) / Fraction(g))
    return idx


def _resolution(resolution: float | None, sensitivity: float) -> float:
    if resolution is None:
        return sensitivity / DEFAULT_GRID_CELLS
    return check_real("resolution", resolution, low=0.0)


def _check_grid_scale(scale_steps: float | Fraction, what: str) -> None:
    if not scale_steps <= MAX_GRID_SCALE:
        shown = float(scale_steps) if scale_steps < 10**300 else math.inf
        raise InvalidParameterError(
            f"the noise {what} would be {shown:.6g} grid steps, above the supported 2^56 (indices would not be "
            "exact doubles); use a coarser resolution or a larger epsilon/delta",
            parameter="epsilon", allowed="at most 2^56 grid steps of noise", got=shown
        )


class _GridMechanism(AdditiveMechanism):
    """Shared part of the exact integer-noise mechanisms: the grid, the draws and the release.

    Subclasses validate their budget, call :meth:`_set_grid` and implement :meth:`_draw` (one exact
    integer noise draw in grid units).
    """

    resolution: float
    dimension: int

    integer_inputs: bool

    def _set_grid(self, resolution: float | None, dimension: int, neighbouring: str, integer_inputs: bool) -> None:
        self.integer_inputs = bool(integer_inputs)
        if self.integer_inputs:
            if resolution is not None and resolution != 1.0:
                raise InvalidParameterError(f"resolution must be 1 (or omitted) with integer_inputs=True, got "
                                            f"{resolution!r}", parameter="resolution")
            resolution = 1.0
        self.resolution = _resolution(resolution, self.sensitivity)
        self.dimension = check_int("dimension", dimension, minimum=1)
        self.neighbouring = str(neighbouring)

    def _rounding_slack(self) -> int:
        """Coordinates whose rounding the grid sensitivity must cover: 0 for integer inputs (nothing is rounded)."""
        return 0 if self.integer_inputs else self.dimension

    def _draw(self, randbelow: RandBelow) -> int:
        raise NotImplementedError

    def check_dimension(self, n: int, *, name: str = "coordinates released together") -> int:
        """Refuse releasing ``n`` coordinates at once when the rounding slack was counted for fewer.

        A privatizer releasing m readings together calls ``check_dimension(m)`` up front.
        """
        n = check_int(name, n, minimum=0)
        if n > self.dimension:
            raise InvalidParameterError(
                f"{name} must be at most the mechanism's dimension={self.dimension} (its grid sensitivity counts the "
                f"rounding of {self.dimension} coordinate(s) per release), got {n}; build the mechanism with "
                f"dimension={n}", parameter=name
            )
        return n

    def to_grid(self, values: ArrayLike) -> NDArray[np.int64]:
        """Exact grid indices ``round(x / resolution)`` of ``values`` (see :func:`grid_indices`).

        With ``integer_inputs`` the values must be integers (they are their own indices); anything
        else is refused, since the calibration left out the rounding slack.
        """
        idx = grid_indices(values, self.resolution)
        raw = values if isinstance(values, np.ndarray) else np.asarray(values)
        if self.integer_inputs and raw.dtype.kind not in "iu":
            # |idx| ≤ 2⁵² (grid_indices refuses more), so idx converts to a double exactly; others compare exactly
            exact = (np.equal(idx.astype(float), raw) if raw.dtype.kind == "f" else
                     np.array([Fraction(v) == i for v, i in zip(raw.reshape(-1), idx.reshape(-1), strict=True)]))
            if not np.all(exact):
                bad = raw.reshape(-1)[np.flatnonzero(~np.asarray(exact).reshape(-1))[0]]
                raise InvalidParameterError(f"values must be integers (integer_inputs=True: the calibration has no "
                                            f"rounding slack), got {bad!r}", parameter="values")
        return idx

    def sample_noise(self, count: int, randbelow: RandBelow) -> list[int]:
        """``count`` exact integer noise draws (grid units) from the integer source ``randbelow``."""
        return [self._draw(randbelow) for _ in range(count)]

    def _noise(self, count: int, rng: RngLike) -> NDArray[Any]:
        """``count`` exact noise draws (grid units) for a release: int64, or Python integers if one exceeds int64."""
        draws = self.sample_noise(count, randbelow_for(rng))
        try:
            return np.array(draws, dtype=np.int64)
        except OverflowError:
            return np.array(draws, dtype=object)

    def _release(self, idx: NDArray[Any], rng: RngLike) -> NDArray[np.float64]:
        """g · (idx + noise): the exact integer sum (int64: |idx| ≤ 2⁵², |noise| < 2⁶²), then one conversion."""
        total = idx + self._noise(idx.size, rng).reshape(idx.shape)
        return np.asarray(np.asarray(total, dtype=float) * self.resolution, dtype=float)

    def privatize_grid(self, grid_values: Sequence[int], *, rng: RngLike = None) -> NDArray[np.float64]:
        """Add exact noise to one vector already on the grid, given as integers in grid units (1-d result).

        For inputs that are exact multiples of ``resolution`` (e.g. fixed-point sums); there is no
        rounding step, and the exact integer ``value + noise`` is scaled back to reading units
        (``rng=None``: the OS CSPRNG). At most ``dimension`` values, each of magnitude at most 2⁵².
        """
        idx = [int(i) for i in grid_values]
        self.check_dimension(len(idx), name="grid_values length")
        if any(abs(i) > MAX_GRID_INDEX for i in idx):
            raise InvalidParameterError(f"grid_values must have magnitude at most 2^52, got {max(idx, key=abs)}",
                                        parameter="grid_values")
        return self._release(np.array(idx, dtype=np.int64), rng)

    def privatize(self, values: ArrayLike, *, rng: RngLike = None) -> NDArray[np.float64]:
        """Round ``values`` to the grid exactly and add exact integer noise (``rng=None``: the OS CSPRNG).

        The last axis is one released vector (at most ``dimension`` coordinates); leading axes are
        independent releases (each one has :meth:`guarantee`, and they compose). A scalar is one
        coordinate.
        """
        idx = self.to_grid(values)
        self.check_dimension(idx.shape[-1] if idx.ndim else 1, name="coordinates (last axis of values)")
        return self._release(idx, rng)


class DiscreteLaplaceMechanism(_GridMechanism):
    r"""ε-DP with exact discrete Laplace noise on the grid ``resolution · ℤ`` (deployment sampler).

    Parameters
    ----------
    epsilon : float
        ε > 0.
    sensitivity : float
        ℓ1 sensitivity Δ1 > 0 of the released vector (in reading units).
    resolution : float, optional
        Grid spacing g (default Δ1/1024). Outputs are multiples of g.
    dimension : int
        Number of coordinates released together (each is rounded to the grid; the rounding adds at
        most ``dimension`` grid cells to the ℓ1 sensitivity).
    neighbouring : str
        The neighbouring relation Δ1 was computed for.
    integer_inputs : bool, default False
        The inputs are integers (counts) and are released on the grid ``ℤ`` (``resolution`` 1) without
        rounding: the grid sensitivity is then ``⌊Δ1⌋`` with no rounding slack, and
        :meth:`~_GridMechanism.to_grid` refuses non-integer values.

    Attributes
    ----------
    scale : fractions.Fraction
        Noise scale b in grid units, exactly the one sampled; ``scale_value = b · g`` in reading units.
    grid_sensitivity : int
        ⌊Δ1/g⌋ + dimension (exact rational arithmetic).

    Privacy guarantee
    -----------------
    What is released: for a vector x of at most ``dimension`` readings, ``g · (n + Y)`` with
    n = round(x/g) computed exactly (module docstring) and Y i.i.d. exactly
    :math:`P(Y = y) \propto e^{-|y|/b}` on ℤ (integers only: :mod:`dpcloak.privacy.bulk` from
    ChaCha20 keyed by the OS CSPRNG by default; CKS Algorithm 2 for :meth:`sample_noise`).
    Neighbouring inputs (ℓ1 distance ≤ Δ1) give integer vectors n, n′ with ‖n − n′‖₁ ≤
    ``grid_sensitivity``, so the ratio of output probabilities is at most
    exp(grid_sensitivity / b) ≤ e^ε (checked in rational arithmetic); the double released is a fixed
    function of the integer n + Y (post-processing). Longer vectors and readings beyond 2⁵² grid
    steps are refused. ε-DP, δ = 0.

    Examples
    --------
    >>> import numpy as np
    >>> m = DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=1.0, resolution=0.5)
    >>> m.guarantee().kind, m.guarantee().epsilon, m.guarantee().delta
    ('ε-DP', 1.0, 0.0)
    >>> out = m.privatize(np.array([0.3]))  # OS CSPRNG: no seed on a release path
    >>> bool(out[0] / 0.5 == round(out[0] / 0.5))  # on the grid 0.5·ℤ
    True

    >>> m.scale_value > 1.0  # Δ/ε = 1, plus what rounding to the grid adds to the sensitivity
    True

    Integer inputs (counts) need no rounding, so no slack: b = Δ1/ε exactly, and fractions are refused:

    >>> counts = DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=1.0, dimension=19, integer_inputs=True)
    >>> counts.grid_sensitivity, counts.scale, counts.resolution
    (1, Fraction(1, 1), 1.0)
    >>> counts.privatize(np.array([2.5]))
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidParameterError: values must be integers ...
    """

    _norm = "l1"
    _repr_fields = ("epsilon", "sensitivity", "resolution", "scale_value")

    def __init__(
        self,
        *,
        epsilon: float,
        sensitivity: float,
        resolution: float | None = None,
        dimension: int = 1,
        neighbouring: str = DEFAULT_NEIGHBOURING,
        integer_inputs: bool = False,
    ) -> None:
        self.epsilon = check_real("epsilon", epsilon, low=0.0)
        self.sensitivity = check_real("sensitivity", sensitivity, low=0.0)
        self._set_grid(resolution, dimension, neighbouring, integer_inputs)
        self.grid_sensitivity = (math.floor(Fraction(self.sensitivity) / Fraction(self.resolution))
                                 + self._rounding_slack())
        if self.grid_sensitivity < 1:
            raise InvalidParameterError(f"sensitivity must be at least 1 with integer_inputs=True (integer vectors "
                                        f"that differ do so by at least 1), got {self.sensitivity!r}",
                                        parameter="sensitivity")
        self.scale = laplace_grid_scale(epsilon=self.epsilon, grid_sensitivity=self.grid_sensitivity)
        if self.grid_sensitivity / self.scale > Fraction(self.epsilon):  # re-check (exact arithmetic)
            raise InvalidParameterError("discrete Laplace calibration overspends epsilon", parameter="epsilon")
        self._frozen = True

    @property
    def scale_value(self) -> float:
        """Noise scale in reading units, b · g."""
        return float(self.scale) * self.resolution

    def _draw(self, randbelow: RandBelow) -> int:
        return sample_discrete_laplace(self.scale, randbelow)

    def _noise(self, count: int, rng: RngLike) -> NDArray[Any]:
        return discrete_laplace_noise(self.scale, count, rng=rng)

    def release_event(self) -> DiscreteLaplaceEvent:
        """One release as the accountant's event: scale b grid steps (exact), integer ℓ1 grid sensitivity."""
        from dpcloak.privacy.accounting import DiscreteLaplaceEvent

        return DiscreteLaplaceEvent(sensitivity=self.grid_sensitivity, scale=self.scale, dimension=self.dimension)

    def guarantee(self) -> PrivacyGuarantee:
        """ε-DP (δ = 0)."""
        return self._guarantee(
            mechanism=f"exact discrete Laplace on grid {self.resolution:.6g}, scale {self.scale_value:.6g}",
            source="Canonne, Kamath & Steinke 2020, Algorithm 2; Ghazi et al. Lemma 2.2",
        )


def sampler_scale(scale: Fraction) -> Fraction:
    """The discrete Laplace scale actually sampled for a target ``scale`` (grid units): ≥ it, numerator < 2⁵⁷.

    ``scale`` itself when its numerator is below 2⁵⁷, else ⌈scale · 2^j⌉ / 2^j with the numerator in
    [2⁵⁶, 2⁵⁷) (relative increase below 2⁻⁵⁶; more noise, never less). Needs ``scale`` ≤ 2⁵⁶.

    Examples
    --------
    >>> from fractions import Fraction
    >>> sampler_scale(Fraction(5, 2))  # small numerator: unchanged
    Fraction(5, 2)
    >>> big = Fraction(2**57 + 1, 3)  # numerator ≥ 2⁵⁷: rounded up to a coarser fraction
    >>> s = sampler_scale(big)
    >>> s >= big, s.numerator < 2**57
    (True, True)
    """
    scale = Fraction(scale)
    if scale.numerator < 2**_SCALE_BITS:
        return scale
    j = _SCALE_BITS - 1 - math.floor(scale).bit_length()  # scale·2^j lies in [2^55, 2^57)
    return Fraction(math.ceil(scale * 2**j), 2**j)


def laplace_grid_scale(*, epsilon: float, grid_sensitivity: int) -> Fraction:
    """The discrete Laplace scale b (grid steps) sampled for ε-DP at an integer ℓ1 sensitivity (grid steps).

    b = :func:`sampler_scale` (grid_sensitivity / ε) ≥ grid_sensitivity / ε exactly, so
    grid_sensitivity / b ≤ ε; refused above :data:`MAX_GRID_SCALE`.

    Examples
    --------
    >>> b = laplace_grid_scale(epsilon=0.5, grid_sensitivity=4)
    >>> b, 4 / b <= 0.5
    (Fraction(8, 1), True)
    """
    eps = check_real("epsilon", epsilon, low=0.0)
    exact = Fraction(check_int("grid_sensitivity", grid_sensitivity, minimum=1)) / Fraction(eps)
    _check_grid_scale(exact, f"scale b for epsilon={eps:g}")
    if exact < MIN_LAPLACE_SCALE:
        raise InvalidParameterError(
            f"epsilon={eps:g} is too large: the noise scale b would be {float(exact):.3g} grid steps, below the "
            "supported 2^-20 (the noise would be 0 anyway); use a smaller epsilon", parameter="epsilon"
        )
    return sampler_scale(exact)


def discrete_laplace_noise(scale: Fraction, size: int, *, rng: RngLike = None) -> NDArray[Any]:
    r"""``size`` i.i.d. exact draws of :math:`P(Y = y) \propto e^{-|y|/b}` on ℤ, b = ``scale`` (rational).

    Vectorised exact sampler (:mod:`dpcloak.privacy.bulk`; ``scale`` from :func:`sampler_scale`).
    ``rng=None``: ChaCha20 keyed by the OS CSPRNG; a seed or Generator: reproducible (tests,
    experiments). int64, or Python integers (object array) should a magnitude reach 2⁶².

    Examples
    --------
    >>> from fractions import Fraction
    >>> y = discrete_laplace_noise(Fraction(2), 20000, rng=0)
    >>> y.dtype, y.shape
    (dtype('int64'), (20000,))
    >>> q = np.exp(-1 / 2)  # variance 2q/(1 − q)² for b = 2
    >>> bool(abs(y.var() / (2 * q / (1 - q) ** 2) - 1) < 0.05)
    True
    """
    scale = Fraction(scale)
    if scale <= 0 or scale.numerator >= 2**_SCALE_BITS:
        raise InvalidParameterError(f"scale must be a positive rational with numerator below 2^57, got {scale}",
                                    parameter="scale")
    return discrete_laplace(scale, check_int("size", size, minimum=0), WordSource(rng))


def _sqrt_up(n: int) -> Fraction:
    """A rational upper bound on √n (exact for perfect squares)."""
    root = Fraction(math.sqrt(n))
    while root * root < n:
        root = Fraction(float(np.nextafter(float(root), math.inf)))
    return root


def l2_grid_sensitivity(sensitivity: float, resolution: float, dimension: int) -> float:
    """Upper bound (a double) on ‖round(x/g) − round(x′/g)‖₂ for ‖x − x′‖₂ ≤ Δ2 over ``dimension`` coordinates.

    ‖n − n′‖₂ ≤ Δ2/g + √d by the triangle inequality (exact rounding moves each coordinate by ≤ ½);
    the squared norm is an integer, so it is at most K = ⌊(Δ2/g + √d)²⌋ (exact rational arithmetic)
    and the result is √K rounded up to a double.

    Examples
    --------
    A Δ2 of 1 on a grid of step 0.25 over 4 coordinates: at most ⌊(4 + 2)²⌋ = 36, so 6 grid steps:

    >>> l2_grid_sensitivity(1.0, 0.25, 4)
    6.0
    """
    bound = Fraction(sensitivity) / Fraction(resolution) + _sqrt_up(dimension)
    k = math.floor(bound * bound)
    root = math.sqrt(k)
    while Fraction(root) ** 2 < k:
        root = float(np.nextafter(root, math.inf))
    return root


class DiscreteGaussianMechanism(_GridMechanism):
    r"""(ε, δ)-DP with exact discrete Gaussian noise on the grid ``resolution · ℤ`` (deployment sampler).

    The floating-point-safe version of Gilbert & McMillan's local Gaussian mechanism (Lemma 3 / Prop. 4).

    Parameters
    ----------
    epsilon : float
        ε > 0.
    delta : float
        δ in (0, 1).
    sensitivity : float
        ℓ2 sensitivity Δ2 > 0 of the released vector (reading units).
    resolution : float, optional
        Grid spacing g (default Δ2/1024).
    dimension : int
        Number of coordinates released together (e.g. the number of sensors m); rounding adds at
        most √dimension grid cells to the ℓ2 sensitivity.
    neighbouring : str
        The neighbouring relation Δ2 was computed for.
    integer_inputs : bool, default False
        The inputs are integers (counts) and are released on the grid ``ℤ`` (``resolution`` 1) without
        rounding: the grid sensitivity is then ``√⌊Δ2²⌋`` with no rounding slack, and
        :meth:`~_GridMechanism.to_grid` refuses non-integer values.

    Attributes
    ----------
    sigma2 : fractions.Fraction
        Variance parameter σ² of the discrete Gaussian, in grid units (exact rational).
    sigma : float
        σ in reading units (σ_grid · g).
    grid_sensitivity : float
        An upper bound (exact rational arithmetic, rounded up) on
        :math:`\sqrt{\lfloor(\Delta_2/g + \sqrt{d})^2\rfloor}`, d = dimension.

    Privacy guarantee
    -----------------
    What is released: for a vector x of at most ``dimension`` readings, ``g · (n + Y)`` with
    n = round(x/g) computed exactly and Y i.i.d. exactly :math:`P(Y = y) \propto e^{-y^2/(2\sigma^2)}`
    on ℤ (CKS Algorithm 3, integers only). Neighbouring inputs (ℓ2 distance ≤ Δ2) give integer
    vectors with ‖n − n′‖₂ ≤ ``grid_sensitivity``, so the release is
    ½(grid_sensitivity/σ)²-concentrated DP (CKS Theorem 14), with ρ computed exactly from the
    rational σ² and converted to (ε, δ) by :func:`~dpcloak.privacy.accounting.zcdp_epsilon` (CKS 2020
    Prop. 12 at the optimal Rényi order, rounded outward) — the accountant's own conversion, so the ε
    calibrated here is the ε every composition starts from (re-checked with
    :func:`~dpcloak.privacy.accounting.compose`); the double released is a fixed function of the
    integer n + Y. Longer vectors and readings beyond
    2⁵² grid steps are refused.

    Examples
    --------
    >>> import numpy as np
    >>> m = DiscreteGaussianMechanism(epsilon=1.0, delta=1e-5, sensitivity=1.0, resolution=0.25, dimension=2)
    >>> m.guarantee().epsilon <= 1.0, m.guarantee().delta
    (True, 1e-05)
    >>> out = m.privatize(np.array([0.3, 2.0]))  # OS CSPRNG: no seed on a release path
    >>> out.shape, bool(np.all(out / 0.25 == np.round(out / 0.25)))  # always on the grid 0.25·ℤ
    ((2,), True)

    >>> bool(m.sigma > m.noise_multiplier * 0.25)  # σ in readings; the multiplier is per grid sensitivity
    True
    """

    _norm = "l2"
    _repr_fields = ("epsilon", "delta", "sensitivity", "resolution", "sigma")

    def __init__(
        self,
        *,
        epsilon: float,
        delta: float,
        sensitivity: float,
        resolution: float | None = None,
        dimension: int = 1,
        neighbouring: str = DEFAULT_NEIGHBOURING,
        integer_inputs: bool = False,
    ) -> None:
        self.epsilon = check_real("epsilon", epsilon, low=0.0)
        self.delta = check_probability("delta", delta)
        self.sensitivity = check_real("sensitivity", sensitivity, low=0.0)
        self._set_grid(resolution, dimension, neighbouring, integer_inputs)
        self.grid_sensitivity = l2_grid_sensitivity(self.sensitivity, self.resolution, self._rounding_slack())
        if self.grid_sensitivity < 1:
            raise InvalidParameterError(f"sensitivity must be at least 1 with integer_inputs=True (integer vectors "
                                        f"that differ do so by at least 1), got {self.sensitivity!r}",
                                        parameter="sensitivity")
        self.sigma2 = self._calibrate()
        self._frozen = True

    def _calibrate(self) -> Fraction:
        """The smallest σ² (to 2⁻³⁰ relative) whose release, as the accountant states it, is ε at δ.

        The same conversion as every composition (:func:`~dpcloak.privacy.accounting.compose` of this
        mechanism's :meth:`release_event`): one release is reported with one ε, never a second one.
        """
        from dpcloak.privacy.accounting import compose, zcdp_epsilon

        eps, dlt, sens = self.epsilon, self.delta, self.grid_sensitivity

        def excess(log_nm: float) -> float:
            return zcdp_epsilon(rho=0.5 * math.exp(-2.0 * log_nm), delta=dlt) - eps

        lo = hi = 0.0
        while excess(hi) > 0.0:
            hi += math.log(2.0)
            _check_grid_scale(math.exp(hi) * sens, f"sigma for epsilon={eps:g}, delta={dlt:g}")
        while excess(lo) <= 0.0:
            lo -= math.log(2.0)
        sigma2 = Fraction(math.exp(float(optimize.brentq(excess, lo, hi, xtol=1e-12))) * sens) ** 2
        def event(var: Fraction) -> DiscreteGaussianEvent:
            from dpcloak.privacy.accounting import DiscreteGaussianEvent

            return DiscreteGaussianEvent(sensitivity=sens, scale=math.sqrt(var), sigma2=var)

        while compose([event(sigma2)], delta=dlt).epsilon > eps:
            sigma2 *= Fraction(1 + 2**-30)  # re-check with the accountant itself: never overspend
        return sigma2

    @property
    def sigma(self) -> float:
        """σ in reading units."""
        return math.sqrt(self.sigma2) * self.resolution

    @property
    def noise_multiplier(self) -> float:
        """σ_grid / Δ_grid, the quantity accountants compose."""
        return math.sqrt(self.sigma2) / self.grid_sensitivity

    def _draw(self, randbelow: RandBelow) -> int:
        return sample_discrete_gaussian(self.sigma2, randbelow)

    def _noise(self, count: int, rng: RngLike) -> NDArray[Any]:
        return discrete_gaussian_noise(self.sigma2, count, rng=rng)

    def release_event(self) -> DiscreteGaussianEvent:
        """One release as the accountant's event: σ² = ``sigma2`` grid steps exactly, ℓ2 grid sensitivity."""
        from dpcloak.privacy.accounting import DiscreteGaussianEvent

        return DiscreteGaussianEvent(sensitivity=self.grid_sensitivity, scale=math.sqrt(self.sigma2),
                                     dimension=self.dimension, sigma2=self.sigma2)

    def guarantee(self) -> PrivacyGuarantee:
        """(ε, δ)-DP via concentrated DP (re-checked at construction)."""
        return self._guarantee(
            mechanism=f"exact discrete Gaussian on grid {self.resolution:.6g}, sigma {self.sigma:.6g}",
            source="Canonne, Kamath & Steinke 2020, Algorithm 3 and Theorem 14; zCDP conversion at the optimal Renyi "
                   "order (CKS 2020 Prop. 12), the accountant's",
        )

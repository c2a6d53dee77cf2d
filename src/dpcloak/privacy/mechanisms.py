r"""Additive-noise mechanisms with callable, re-checked privacy guarantees.

Every mechanism here adds independent noise to a vector whose change between neighbouring inputs
is bounded by a *sensitivity* (ℓ2 for the Gaussian, ℓ1 for the Laplace mechanism). It states that
neighbouring relation and sensitivity and answers :meth:`~Mechanism.guarantee`. Any object with
``privatize(values, *, rng=None)`` and ``guarantee()`` satisfies the :class:`Mechanism` protocol, so
per-sensor privatisation (:mod:`dpcloak.privacy.local`) also accepts mechanisms whose guarantee is
not (ε, δ)-DP (e.g. Farokhi–Sandberg bounded noise with a Fisher-information guarantee).

Gaussian calibrations (``calibration=``)
----------------------------------------
``"paper"``
    :math:`\sigma = 2\ln(1.25/\delta)\,\Delta_2/\varepsilon`, exactly as Gilbert & McMillan (Lemma 3,
    Proposition 4) and McMillan's thesis (Lemma 2.8, Proposition 7.1) print it. Dwork & Roth's Theorem A.1
    has the square root, :math:`\sqrt{2\ln(1.25/\delta)}`; the paper's version drops it, which adds
    *more* noise whenever :math:`\ln(1.25/\delta) > 1/2` (δ < 0.758) — private but loose. The paper
    states it for every ε > 0; for large ε and δ it overspends — e.g. at (ε, δ) = (5, 0.7), (10, 0.5),
    (20, 0.3), (50, 0.1) its exact δ exceeds the target — and then it is refused (see below). The
    parameters of seeds 000/001 (ε ≤ 5, δ = 0.1) are not affected.
``"classic"``
    Dwork & Roth (2014), Theorem A.1: :math:`\sigma = \sqrt{2\ln(1.25/\delta)}\,\Delta_2/\varepsilon`,
    proved only for ε < 1; refused for ε ≥ 1.
``"analytic"``
    Balle & Wang (2018), Theorem 8: the smallest σ whose exact privacy profile

    .. math:: \delta(\varepsilon; \sigma, \Delta)
              = \Phi\!\Big(\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta}\Big)
              - e^{\varepsilon}\,\Phi\!\Big(-\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta}\Big)

    is at most δ, for any ε > 0 (:func:`gaussian_delta`), found by a bracketing root-find in log σ.

Calibration never overspends: whatever the calibration, the returned σ is re-checked against the
exact profile above and the constructor raises :class:`~dpcloak.errors.InvalidParameterError`
rather than return a σ with δ(ε; σ, Δ) > δ.

Floating-point noise (Mironov 2012)
-----------------------------------
:class:`GaussianMechanism` and :class:`LaplaceMechanism` draw IEEE doubles from numpy. Their
guarantees are the textbook ones for *real-valued* noise; on a computer the low-order bits of
``value + noise`` can reveal ``value`` (Mironov, "On significance of the least significant bits for
differential privacy", CCS 2012). They are meant for experiments and simulation, and their
:meth:`~Mechanism.guarantee` says so: the stated (ε, δ) holds only for the idealised real-valued
mechanism, not for the doubles actually released. For deployment use the exact integer samplers of
:mod:`dpcloak.privacy.discrete`.

Readings too large for the noise
--------------------------------
``value + noise`` is rounded to the spacing of doubles near ``value`` (one ulp). Once that spacing
is comparable to the noise the release is mostly the reading itself (a reading of 1e17 with σ = 3.7
comes back unchanged 97 % of the time). Both float mechanisms therefore refuse a reading whose ulp
exceeds :data:`FLOAT_ULP_FRACTION` = 2⁻⁸ of the noise scale (σ, or b for Laplace), i.e. readings
beyond about 2⁴⁴ noise scales (:func:`check_magnitude`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, ClassVar, Protocol, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import optimize, special

from dpcloak._rng import RngLike, as_generator
from dpcloak._validation import check_array, check_choice, check_probability, check_real
from dpcloak.errors import InvalidParameterError

if TYPE_CHECKING:
    from dpcloak.privacy.accounting import GaussianEvent, LaplaceEvent

__all__ = [
    "PrivacyGuarantee",
    "Mechanism",
    "QuantileNoise",
    "GaussianMechanism",
    "LaplaceMechanism",
    "GAUSSIAN_CALIBRATIONS",
    "DEFAULT_NEIGHBOURING",
    "gaussian_delta",
    "gaussian_epsilon",
    "FLOAT_ULP_FRACTION",
    "FLOAT_CAVEAT",
    "AdditiveMechanism",
]

GAUSSIAN_CALIBRATIONS = ("analytic", "classic", "paper")

DEFAULT_NEIGHBOURING = "inputs whose released vectors differ by at most the sensitivity"

_UNIT_ROUNDOFF = float(np.finfo(float).eps) / 2

FLOAT_ULP_FRACTION = 2.0**-8
"""Largest spacing of doubles at a reading, as a fraction of the noise scale, that a float mechanism accepts."""

FLOAT_CAVEAT = (
    "holds for idealised real-valued noise only: the released doubles can leak the input through their "
    "low-order bits (Mironov 2012); for simulation, not deployment"
)
"""What every floating-point mechanism's guarantee says about the noise actually released."""


@dataclass(frozen=True)
class PrivacyGuarantee:
    """What a mechanism promises, and under which assumptions.

    Attributes
    ----------
    kind : str
        ``"(ε, δ)-DP"``, ``"ε-DP"``, ``"(ε, δ)-SIM-CDP"`` (computational, keyed noise) or a
        non-DP kind such as ``"Fisher information"``.
    epsilon, delta : float or None
        The privacy parameters (``None`` when the kind has none; ``delta`` is 0 for ε-DP).
    neighbouring : str
        The neighbouring relation the guarantee is stated for.
    sensitivity : float
        The sensitivity the calibration assumes (in the norm ``norm``).
    norm : str
        ``"l2"`` or ``"l1"``.
    mechanism : str
        One-line description of the noise (distribution, scale, calibration).
    source : str
        Paper and result the guarantee comes from.
    fisher_information : float or None
        For Fisher-information guarantees: the bound on the Fisher information (else ``None``).

    Examples
    --------
    Every mechanism states one:

    >>> g = GaussianMechanism(epsilon=1.0, delta=1e-5, sensitivity=1.0).guarantee()
    >>> isinstance(g, PrivacyGuarantee)
    True
    >>> g.kind, g.epsilon, g.delta, g.sensitivity, g.norm
    ('(ε, δ)-DP', 1.0, 1e-05, 1.0, 'l2')
    """

    kind: str
    epsilon: float | None
    delta: float | None
    neighbouring: str
    sensitivity: float
    norm: str
    mechanism: str
    source: str
    fisher_information: float | None = None


@runtime_checkable
class Mechanism(Protocol):
    """Anything that privatizes a vector and states its guarantee.

    Examples
    --------
    The Gaussian, Laplace, discrete and Fisher-information mechanisms all satisfy it:

    >>> import numpy as np
    >>> m = LaplaceMechanism(epsilon=1.0, sensitivity=1.0)
    >>> isinstance(m, Mechanism)
    True
    >>> m.privatize(np.zeros(3), rng=0).shape, m.guarantee().kind
    ((3,), 'ε-DP')
    """

    def privatize(self, values: ArrayLike, *, rng: RngLike = None) -> NDArray[np.float64]:
        """Return ``values`` plus fresh noise (same shape)."""
        ...

    def guarantee(self) -> PrivacyGuarantee:
        """The guarantee of one call to :meth:`privatize` on neighbouring inputs."""
        ...


@runtime_checkable
class QuantileNoise(Protocol):
    """An additive-noise mechanism whose i.i.d. noise has an exact inverse CDF.

    Needed to drive the mechanism from an external uniform stream (the keyed backdoor of
    :mod:`dpcloak.privacy.local`).

    Examples
    --------
    >>> m = LaplaceMechanism(epsilon=0.5, sensitivity=1.0)  # scale b = 2
    >>> isinstance(m, QuantileNoise)
    True
    >>> float(m.noise_quantile(0.5)), round(float(m.noise_quantile(0.75)), 6)  # median 0, quartile b·ln 2
    (0.0, 1.386294)
    """

    def noise_quantile(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        """Noise values ``F^{-1}(u)`` for uniforms ``u`` in (0, 1)."""
        ...


class Immutable:
    """Mixin: attributes cannot be changed once ``__init__`` has finished (``_frozen`` is set).

    A mechanism's guarantee is computed from its calibrated noise; letting ``sigma`` be reassigned
    afterwards would make :meth:`guarantee` state something the noise no longer delivers.
    """

    _frozen: bool = False

    def __setattr__(self, name: str, value: object) -> None:
        if self._frozen:
            raise AttributeError(f"{type(self).__name__} is immutable; build a new one to change {name!r}")
        object.__setattr__(self, name, value)


class AdditiveMechanism(Immutable):
    """Base of the (ε, δ)-calibrated additive-noise mechanisms: the stated guarantee and the ``repr``.

    Subclasses set ``epsilon``, ``sensitivity``, ``neighbouring`` (and ``delta`` for approximate DP;
    the class default 0 means ε-DP) in ``__init__``, name the sensitivity norm in ``_norm`` and the
    attributes shown by ``repr`` in ``_repr_fields`` (numbers as ``.6g``, strings by ``repr``).

    Examples
    --------
    The Laplace and Gaussian mechanisms share its guarantee and ``repr``:

    >>> issubclass(LaplaceMechanism, AdditiveMechanism), issubclass(GaussianMechanism, AdditiveMechanism)
    (True, True)
    >>> LaplaceMechanism(epsilon=0.5, sensitivity=2.0)
    LaplaceMechanism(epsilon=0.5, sensitivity=2, scale=4)
    """

    _norm: ClassVar[str]
    _repr_fields: ClassVar[tuple[str, ...]]
    epsilon: float
    sensitivity: float
    neighbouring: str
    delta: float = 0.0

    def _guarantee(self, *, mechanism: str, source: str) -> PrivacyGuarantee:
        """The DP guarantee of this calibration, described by ``mechanism`` and ``source``."""
        return PrivacyGuarantee(
            kind="ε-DP" if self.delta == 0.0 else "(ε, δ)-DP",
            epsilon=self.epsilon,
            delta=self.delta,
            neighbouring=self.neighbouring,
            sensitivity=self.sensitivity,
            norm=self._norm,
            mechanism=mechanism,
            source=source,
        )

    def __repr__(self) -> str:
        def shown(value: object) -> str:
            return repr(value) if isinstance(value, str) else f"{value:.6g}"

        fields = ", ".join(f"{name}={shown(getattr(self, name))}" for name in self._repr_fields)
        return f"{type(self).__name__}({fields})"


def check_values(values: ArrayLike, *, name: str = "values") -> NDArray[np.float64]:
    """Validate readings to be privatized: a finite float array (scalars allowed, no NaN/inf).

    Integers and rationals that no double holds exactly are refused (:func:`check_exact_doubles`).
    """
    return check_exact_doubles(values, check_array(name, values, dtype=float), name=name)


def check_exact_doubles(
    values: ArrayLike, doubles: NDArray[np.float64], *, name: str = "values"
) -> NDArray[np.float64]:
    """Refuse integers or rationals in ``values`` (int64 beyond 2⁵³, Python ints, fractions) that ``doubles`` rounds.

    Rounding a reading to a double before a mechanism is data-dependent pre-processing that can move
    neighbours further apart than their sensitivity (int64 readings 6 apart become 8 apart);
    :func:`dpcloak.privacy.discrete.grid_indices` rounds integers and fractions exactly instead.
    ``doubles`` is ``values`` converted to float; returned when it is exact (NaN in it is left alone).
    """
    raw = values if isinstance(values, np.ndarray) else np.asarray(values)
    if raw.dtype.kind not in "iuO":
        return doubles
    flat, approx = raw.reshape(-1), doubles.reshape(-1)
    unsure = np.ones(approx.size, dtype=bool) if raw.dtype.kind == "O" else np.abs(approx) >= 2.0**53
    for exact, near in zip(flat[unsure].tolist(), approx[unsure].tolist(), strict=True):
        if not isinstance(exact, float) and math.isfinite(near) and Fraction(exact) != Fraction(near):
            raise InvalidParameterError(
                f"{name} must be exactly representable as doubles (integers up to 2^53 in magnitude), got "
                f"{exact!r}, which a double rounds to {near!r}; round it yourself, or use a grid mechanism "
                "(it rounds integers exactly)", parameter=name
            )
    return doubles


def check_magnitude(x: NDArray[np.float64], *, noise_scale: float, name: str = "values") -> NDArray[np.float64]:
    """Refuse readings whose floating-point spacing exceeds ``FLOAT_ULP_FRACTION`` × ``noise_scale``.

    ``x + z`` is rounded to ``ulp(x + z)``; a reading with ``ulp(|x|) > 2⁻⁸ · noise_scale`` would have
    its noise visibly quantised (or absorbed entirely), so it is refused with the largest accepted
    magnitude in the message. Returns ``x``.
    """
    if x.size == 0:
        return x
    allowed = noise_scale * FLOAT_ULP_FRACTION
    spacing = np.spacing(np.abs(x))
    if float(np.max(spacing)) > allowed:
        worst = float(x.flat[int(np.argmax(spacing))])
        limit = 2.0 ** (math.floor(math.log2(allowed)) + 53) if allowed > 0.0 else 0.0
        raise InvalidParameterError(
            f"{name} must have magnitude below {limit:.6g} for noise of scale {noise_scale:.6g} (beyond it one "
            f"floating-point step exceeds 2^-8 of the noise and the noise is lost in rounding), got {worst:.6g}",
            parameter=name
        )
    return x


def _log_gaussian_delta(epsilon: float, sigma: float, sensitivity: float, *, upper: bool = False) -> float:
    """``log δ(ε; σ, Δ)`` as ``log Φ(a) + log(1 − exp(ε + log Φ(b) − log Φ(a)))`` (no cancellation).

    With ``upper=True`` it returns a rounding-safe upper bound: ``log Φ`` is accurate to a few ulp of
    its magnitude, so ``r = ε + log Φ(b) − log Φ(a)`` is uncertain by
    ``err = 8u(|log Φ(a)| + |log Φ(b)| + ε + 1)`` (u the unit roundoff) and δ ≤ Φ(a)(1 − e^{r − err}).
    This matters for tiny ε and σ ≫ Δ, where r is tiny and its relative error large.
    """
    half = sensitivity / (2.0 * sigma)
    v = epsilon * sigma / sensitivity
    la = float(special.log_ndtr(half - v))
    lb = float(special.log_ndtr(-half - v))
    r = epsilon + lb - la
    if not upper:
        return -math.inf if r >= 0.0 else la + math.log(-math.expm1(r))
    err = 8.0 * _UNIT_ROUNDOFF * (abs(la) + abs(lb) + epsilon + 1.0)
    r_low = min(r - err, -err)
    return la + math.log1p(err) + math.log(-math.expm1(r_low))


def gaussian_delta(*, epsilon: float, sigma: float, sensitivity: float) -> float:
    r"""Exact privacy profile of the Gaussian mechanism (Balle & Wang 2018, Theorem 8).

    .. math:: \delta(\varepsilon) = \Phi\!\Big(\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta}\Big)
              - e^{\varepsilon}\,\Phi\!\Big(-\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta}\Big)

    the smallest δ for which adding :math:`N(0, \sigma^2 I)` to a query of ℓ2 sensitivity Δ is
    (ε, δ)-DP. Evaluated as ``Φ(a)(1 − exp(ε + log Φ(b) − log Φ(a)))`` so that it stays accurate
    for tiny δ and large ε.

    Parameters
    ----------
    epsilon : float
        ε ≥ 0.
    sigma : float
        Noise standard deviation σ > 0.
    sensitivity : float
        ℓ2 sensitivity Δ > 0.

    Examples
    --------
    At the σ the analytic calibration picks for ε = 1, δ = 1e-5, the profile is exactly at the target:

    >>> m = GaussianMechanism(epsilon=1.0, delta=1e-5, sensitivity=1.0)
    >>> round(m.sigma, 4), round(gaussian_delta(epsilon=1.0, sigma=m.sigma, sensitivity=1.0), 10)
    (3.7306, 1e-05)
    >>> gaussian_delta(epsilon=2.0, sigma=m.sigma, sensitivity=1.0) < 1e-5  # decreasing in ε
    True
    """
    eps = check_real("epsilon", epsilon, low=0.0, low_inclusive=True)
    sig = check_real("sigma", sigma, low=0.0)
    sens = check_real("sensitivity", sensitivity, low=0.0)
    return math.exp(_log_gaussian_delta(eps, sig, sens))


def gaussian_epsilon(*, delta: float, sigma: float, sensitivity: float) -> float:
    r"""Smallest ε ≥ 0 with ``gaussian_delta(epsilon=ε, ...) ≤ delta`` (the profile's inverse).

    Solved on a rounding-safe upper bound of the exact profile by safeguarded Newton steps on
    ``log δ(ε)``, whose slope is :math:`-e^{\varepsilon}\Phi(-\tfrac{\Delta}{2\sigma} -
    \tfrac{\varepsilon\sigma}{\Delta})/\delta(\varepsilon)` (differentiate Balle & Wang's profile), inside
    the bracket ``[0, μ²/2 + μΦ⁻¹(1 − δ)]`` (μ = Δ/σ; δ(ε) ≤ Φ(μ/2 − ε/μ)). The returned ε is always
    a point where the bound was evaluated and found ≤ δ, so it never understates the loss; it is
    within a few ulp of the root (a few microseconds: the closed-form accountant of
    :mod:`dpcloak.privacy.accounting` calls it once per query).

    Examples
    --------
    The inverse of :func:`gaussian_delta`:

    >>> round(gaussian_epsilon(delta=1e-5, sigma=3.7306316, sensitivity=1.0), 6)
    1.0
    >>> gaussian_epsilon(delta=1e-5, sigma=100.0, sensitivity=1.0) < 0.05  # lots of noise, small ε
    True
    """
    dlt = check_probability("delta", delta)
    sig = check_real("sigma", sigma, low=0.0)
    sens = check_real("sensitivity", sensitivity, low=0.0)
    log_target = math.log(dlt)
    mu = sens / sig

    def excess(e: float) -> float:
        return _log_gaussian_delta(e, sig, sens, upper=True) - log_target

    if excess(0.0) <= 0.0:
        return 0.0
    hi = max(mu * mu / 2.0 - mu * float(special.ndtri(dlt)), 1e-300) * (1.0 + 1e-9)
    while excess(hi) > 0.0:
        hi *= 2.0
    lo, e = 0.0, hi
    for _ in range(200):
        f = excess(e)
        if f > 0.0:
            lo = e
        else:
            hi = e
        if hi - lo <= 4.0 * _UNIT_ROUNDOFF * hi:
            break
        log_slope = e + float(special.log_ndtr(-mu / 2.0 - e / mu)) - (f + log_target)  # log |d log δ/dε|
        step = e + f * math.exp(-log_slope) if -log_slope < 700.0 else math.nan  # Newton step
        nxt = step if lo < step < hi else 0.5 * (lo + hi)
        if abs(nxt - e) <= 4.0 * _UNIT_ROUNDOFF * e:  # converged: step up to where the bound meets δ
            e = max(nxt, e)
            while e < hi and excess(e) > 0.0:
                e = float(np.nextafter(e, math.inf)) * (1 + 1e-15)
            hi = min(hi, e)
            break
        e = nxt
    return hi


def _analytic_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """Smallest σ with δ(ε; σ, Δ) ≤ δ: bracket in log σ by doubling, then Brent's method.

    The root is sought for a rounding-safe upper bound of the profile (``_log_gaussian_delta(...,
    upper=True)``), so the returned σ meets δ even under an exact (high-precision) evaluation.
    """
    log_target = math.log(delta)

    def over(sigma: float) -> float:
        return _log_gaussian_delta(epsilon, sigma, sensitivity, upper=True) - log_target

    lo = hi = math.log(sensitivity)
    while over(math.exp(hi)) > 0.0:
        hi += math.log(2.0)
    while over(math.exp(lo)) <= 0.0:
        lo -= math.log(2.0)
    if math.isnan(over(math.exp(lo))) or math.isnan(over(math.exp(hi))):  # the profile overflows double precision
        raise InvalidParameterError(
            f"epsilon={epsilon:g}, delta={delta:g}: outside the range where the analytic Gaussian calibration can be "
            "computed in double precision; use a smaller epsilon", parameter="epsilon"
        )
    root = float(optimize.brentq(lambda ls: over(math.exp(ls)), lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps))
    sigma = math.exp(root)
    while over(sigma) > 0.0:  # the re-check in GaussianMechanism applies exactly this test
        sigma = float(np.nextafter(sigma, math.inf)) * (1 + 1e-15)
    return sigma


class GaussianMechanism(AdditiveMechanism):
    r"""Add i.i.d. :math:`N(0, \sigma^2)` noise to each coordinate: the local Gaussian mechanism.

    Gilbert & McMillan Lemma 3 / Proposition 4 and McMillan's thesis Lemma 2.8 / Proposition 7.1: each sensor adds
    Gaussian noise to its own reading; with σ calibrated to the ℓ2 sensitivity Δ2 of the vector of
    all readings between neighbouring source vectors, the vector of noisy readings is (ε, δ)-DP.

    Parameters
    ----------
    epsilon : float
        ε > 0.
    delta : float
        δ in (0, 1).
    sensitivity : float
        ℓ2 sensitivity Δ2 > 0 of the released vector (e.g. :func:`dpcloak.privacy.l2_sensitivity`).
    calibration : {"analytic", "classic", "paper"}
        How σ is chosen (module docstring). ``"classic"`` refuses ε ≥ 1; every calibration is
        re-checked against the exact profile :func:`gaussian_delta` and refused if it overspends.
    neighbouring : str
        The neighbouring relation Δ2 was computed for (reported by :meth:`guarantee`).

    Attributes
    ----------
    sigma, variance : float
        Noise standard deviation and variance.

    Privacy guarantee
    -----------------
    For the idealised mechanism ``x + Z``, Z ~ N(0, σ²I) real-valued: (ε, δ)-DP for neighbouring
    inputs whose released vectors differ by at most Δ2 in ℓ2, with δ(ε; σ, Δ2) ≤ δ checked against
    the exact profile. What is released is ``x + σ·g`` rounded to a double, g numpy's standard
    normal double: the claim does not extend to it (Mironov 2012; :meth:`guarantee` says so).
    Readings beyond about 2⁴⁴ σ are refused (:func:`check_magnitude`).

    Examples
    --------
    >>> import numpy as np
    >>> m = GaussianMechanism(epsilon=1.0, delta=1e-5, sensitivity=1.0)
    >>> round(m.sigma, 4), round(m.variance, 4)
    (3.7306, 13.9176)
    >>> g = m.guarantee()
    >>> g.epsilon, g.delta
    (1.0, 1e-05)
    >>> m.privatize(np.zeros(3), rng=0).shape  # simulation: a seed is allowed here
    (3,)
    """

    _norm = "l2"
    _repr_fields = ("epsilon", "delta", "sensitivity", "calibration", "sigma")

    def __init__(
        self,
        *,
        epsilon: float,
        delta: float,
        sensitivity: float,
        calibration: str = "analytic",
        neighbouring: str = DEFAULT_NEIGHBOURING,
    ) -> None:
        self.epsilon = check_real("epsilon", epsilon, low=0.0)
        self.delta = check_probability("delta", delta)
        self.sensitivity = check_real("sensitivity", sensitivity, low=0.0)
        self.calibration = check_choice("calibration", calibration, GAUSSIAN_CALIBRATIONS)
        self.neighbouring = str(neighbouring)
        self.sigma = self._calibrate()
        self._frozen = True

    def _calibrate(self) -> float:
        eps, dlt, sens = self.epsilon, self.delta, self.sensitivity
        if self.calibration == "analytic":
            sigma = _analytic_sigma(eps, dlt, sens)
        elif self.calibration == "classic":
            if eps >= 1.0:
                raise InvalidParameterError(
                    f"epsilon must lie in (0, 1) for the classic Gaussian calibration (Dwork & Roth Thm A.1), "
                    f"got {eps:g}; use calibration='analytic' for any epsilon > 0", parameter="epsilon"
                )
            sigma = math.sqrt(2.0 * math.log(1.25 / dlt)) * sens / eps
        else:
            sigma = 2.0 * math.log(1.25 / dlt) * sens / eps
        log_achieved = _log_gaussian_delta(eps, sigma, sens, upper=True)
        if not log_achieved <= math.log(dlt):
            achieved = math.exp(log_achieved)
            raise InvalidParameterError(
                f"the {self.calibration} calibration gives sigma={sigma:.6g}, whose exact privacy profile "
                f"delta(epsilon={eps:g}) = {achieved:.6g} exceeds the target delta={dlt:g}; "
                "use calibration='analytic'",
                parameter="calibration", got=self.calibration
            )
        return sigma

    @property
    def variance(self) -> float:
        """σ²."""
        return self.sigma**2

    def privatize(self, values: ArrayLike, *, rng: RngLike = None) -> NDArray[np.float64]:
        """Return ``values + N(0, σ² I)`` (same shape; scalars give a 0-d array).

        Raises :class:`~dpcloak.errors.InvalidParameterError` on NaN or infinite values and on
        readings too large for the noise (:func:`check_magnitude`).
        """
        x = check_magnitude(check_values(values), noise_scale=self.sigma)
        gen = as_generator(rng)
        return x + self.sigma * gen.standard_normal(x.shape)

    def noise_quantile(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        """Gaussian noise by the inverse CDF: ``σ Φ⁻¹(u)`` (exact transform of a uniform)."""
        return self.sigma * special.ndtri(np.asarray(u, dtype=float))

    def release_event(self) -> GaussianEvent:
        """One release as the accountant's event: N(0, σ²) noise, ℓ2 sensitivity Δ."""
        from dpcloak.privacy.accounting import GaussianEvent

        return GaussianEvent(sensitivity=self.sensitivity, scale=self.sigma)

    def guarantee(self) -> PrivacyGuarantee:
        """(ε, δ)-DP of the idealised real-valued mechanism (achieved δ re-checked at construction)."""
        source = {
            "analytic": "Balle & Wang 2018, Theorem 8 (exact profile), smallest sigma",
            "classic": "Dwork & Roth 2014, Theorem A.1 (epsilon < 1)",
            "paper": ("Gilbert & McMillan Lemma 3 / Prop. 4; McMillan's thesis Lemma 2.8 "
                      "(sigma = 2 ln(1.25/delta) Delta2 / epsilon)"),
        }[self.calibration]
        return self._guarantee(
            mechanism=f"Gaussian N(0, sigma^2), sigma={self.sigma:.6g}, {self.calibration} calibration; {FLOAT_CAVEAT}",
            source=source + "; floating-point caveat: Mironov 2012",
        )


class LaplaceMechanism(AdditiveMechanism):
    r"""Add i.i.d. Laplace noise of scale :math:`b = \Delta_1/\varepsilon` to each coordinate.

    Ghazi et al., Definition 2.2 and Lemma 2.2 ([DMNS06]): with ℓ1 sensitivity Δ1 the
    Laplace mechanism with parameter Δ1/ε is ε-DP.

    Parameters
    ----------
    epsilon : float
        ε > 0.
    sensitivity : float
        ℓ1 sensitivity Δ1 > 0.
    neighbouring : str
        The neighbouring relation Δ1 was computed for.

    Attributes
    ----------
    scale : float
        The Laplace scale b (re-checked: Δ1 / b ≤ ε in exact rational arithmetic).

    Privacy guarantee
    -----------------
    For the idealised mechanism ``x + Z``, Z i.i.d. real Laplace(b): ε-DP (δ = 0) for neighbouring
    inputs whose released vectors differ by at most Δ1 in ℓ1 (Δ1/b ≤ ε re-checked in exact
    rational arithmetic). What is released is ``x`` plus numpy's Laplace double, rounded to a double: the claim does
    not extend to it (Mironov 2012; :meth:`guarantee` says so). Readings beyond about 2⁴⁴ b are
    refused (:func:`check_magnitude`).

    Examples
    --------
    >>> import numpy as np
    >>> m = LaplaceMechanism(epsilon=0.5, sensitivity=2.0)
    >>> m.scale, m.variance  # b = Δ1/ε, variance 2b²
    (4.0, 32.0)
    >>> m.guarantee().epsilon, m.guarantee().delta
    (0.5, 0.0)
    >>> m.privatize(np.array([1.0, 2.0]), rng=0).shape
    (2,)
    """

    _norm = "l1"
    _repr_fields = ("epsilon", "sensitivity", "scale")

    def __init__(self, *, epsilon: float, sensitivity: float, neighbouring: str = DEFAULT_NEIGHBOURING) -> None:
        self.epsilon = check_real("epsilon", epsilon, low=0.0)
        self.sensitivity = check_real("sensitivity", sensitivity, low=0.0)
        self.neighbouring = str(neighbouring)
        scale = self.sensitivity / self.epsilon
        while Fraction(self.sensitivity) / Fraction(scale) > Fraction(self.epsilon):  # exact re-check: Δ1/b ≤ ε
            scale = float(np.nextafter(scale, math.inf))
        self.scale = scale
        self._frozen = True

    @property
    def variance(self) -> float:
        """2 b²."""
        return 2.0 * self.scale**2

    def privatize(self, values: ArrayLike, *, rng: RngLike = None) -> NDArray[np.float64]:
        """Return ``values + Lap(b)`` noise per coordinate (same shape)."""
        x = check_magnitude(check_values(values), noise_scale=self.scale)
        gen = as_generator(rng)
        return x + gen.laplace(0.0, self.scale, x.shape)

    def noise_quantile(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        """Laplace noise by the inverse CDF ``−b sgn(u − ½) log(1 − 2|u − ½|)``."""
        c = np.asarray(u, dtype=float) - 0.5
        return -self.scale * np.sign(c) * np.log1p(-2.0 * np.abs(c))

    def release_event(self) -> LaplaceEvent:
        """One release as the accountant's event: Laplace noise of scale b, ℓ1 sensitivity Δ (ε = Δ/b exactly)."""
        from dpcloak.privacy.accounting import LaplaceEvent

        return LaplaceEvent(sensitivity=self.sensitivity, scale=self.scale)

    def guarantee(self) -> PrivacyGuarantee:
        """ε-DP (δ = 0) of the idealised real-valued mechanism."""
        return self._guarantee(mechanism=f"Laplace Lap(b), b={self.scale:.6g}; {FLOAT_CAVEAT}",
                               source="Ghazi et al. Lemma 2.2 (Dwork, McSherry, Nissim & Smith 2006); "
                                      "floating-point caveat: Mironov 2012")


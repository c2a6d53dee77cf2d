r"""What a sensor measures decides what its privacy guarantee means: ``"counts"`` or ``"field"``.

``"counts"`` (people counters, door, Wi-Fi or occupancy counts)
    A reading *is* a count of people. The privacy unit is one person's contribution: counted at
    most ``C`` times per window (one release of every sensor) across all sensors
    (``max_count_per_person``, declared; default 1). Two neighbouring count vectors therefore
    differ by at most ``C`` in ℓ1 and, in the worst case (all ``C`` counts on one sensor), by ``C``
    in ℓ2: Δ1 = Δ2 = C, from the measurement itself and unconditional on any model. Each sensor adds
    exact integer noise to its integer count (:mod:`dpcloak.privacy.discrete` with
    ``integer_inputs=True``: no rounding, no slack), discrete Laplace of scale ``C/ε`` (ε-DP) or,
    when δ > 0 and it is more accurate, the discrete Gaussian calibrated to Δ2 = C
    (:func:`count_mechanism` picks the one with the smaller expected absolute error per reading).
    Any map drawn from the released counts is post-processing.
``"field"`` (temperature, CO₂, particulates: a quantity that diffuses)
    The seeds' model-based guarantee (Gilbert & McMillan; thesis Part III): the noise is calibrated
    to the ℓ2 sensitivity of the *model's* readings ``M f`` under a neighbouring relation of the
    sources. It holds only if the readings follow the model, and every guarantee text says so
    (:func:`field_guarantee_text`), next to the model's misfit on public history when it is known.

Examples
--------
>>> mech = count_mechanism(epsilon=1.0, delta=1e-6, max_count_per_person=1, n_sensors=19)
>>> type(mech).__name__, mech.scale, mech.resolution  # discrete Laplace of scale 1/ε on the integers
('DiscreteLaplaceMechanism', Fraction(1, 1), 1.0)
>>> round(expected_absolute_noise(mech), 4)  # 2q/(1 − q²), q = e^(−1)
0.8509
"""

from __future__ import annotations

import math

import numpy as np

from dpcloak._validation import check_choice, check_int, check_probability, check_real
from dpcloak.errors import InvalidParameterError
from dpcloak.privacy.discrete import DiscreteGaussianMechanism, DiscreteLaplaceMechanism

__all__ = [
    "MEASUREMENTS",
    "count_mechanism",
    "expected_absolute_noise",
    "noise_std",
    "count_guarantee_text",
    "field_guarantee_text",
    "check_unit",
]

MEASUREMENTS = ("counts", "field")

CountMechanism = DiscreteLaplaceMechanism | DiscreteGaussianMechanism


def check_unit(name: str, unit: object) -> str:
    """A unit label: a non-empty string without line breaks (e.g. ``"people"``, ``"µg/m³"``).

    Examples
    --------
    >>> check_unit("reading_unit", "µg/m³")
    'µg/m³'
    >>> check_unit("reading_unit", "")
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidParameterError: reading_unit must be a non-empty unit label ...
    """
    if not isinstance(unit, str) or not unit.strip() or "\n" in unit or len(unit) > 40:
        raise InvalidParameterError(f"{name} must be a non-empty unit label of at most 40 characters such as "
                                    f"'people' or 'µg/m³', got {unit!r}", parameter=name)
    return unit.strip()


def _laplace_abs(scale: float) -> float:
    q = math.exp(-1.0 / scale)
    return 2.0 * q / (1.0 - q * q)


def _gaussian_moments(sigma2: float) -> tuple[float, float]:
    """E|Y| and E[Y²] of the discrete Gaussian with parameter σ² on ℤ (sums to ±(12σ + 2))."""
    k = np.arange(-math.ceil(12.0 * math.sqrt(sigma2)) - 2, math.ceil(12.0 * math.sqrt(sigma2)) + 3)
    w = np.exp(-(k.astype(float) ** 2) / (2.0 * sigma2))
    w /= w.sum()
    return float(w @ np.abs(k)), float(w @ (k.astype(float) ** 2))


def expected_absolute_noise(mechanism: CountMechanism) -> float:
    """E|Y| of one reading's noise, in reading units (discrete Laplace in closed form, Gaussian by summation).

    Examples
    --------
    >>> from dpcloak.privacy.discrete import DiscreteGaussianMechanism
    >>> g = DiscreteGaussianMechanism(epsilon=1.0, delta=1e-6, sensitivity=1.0, integer_inputs=True)
    >>> bool(expected_absolute_noise(g) > 3)  # σ ≈ 4.4 at (1, 1e-6)
    True
    """
    if isinstance(mechanism, DiscreteLaplaceMechanism):
        return _laplace_abs(float(mechanism.scale)) * mechanism.resolution
    if isinstance(mechanism, DiscreteGaussianMechanism):
        return _gaussian_moments(float(mechanism.sigma2))[0] * mechanism.resolution
    raise InvalidParameterError(f"mechanism must be an exact discrete mechanism, got {type(mechanism).__name__}",
                                parameter="mechanism")


def noise_std(mechanism: CountMechanism) -> float:
    """Standard deviation of one reading's noise, in reading units.

    Examples
    --------
    >>> from dpcloak.privacy.discrete import DiscreteLaplaceMechanism
    >>> m = DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=1.0, integer_inputs=True)
    >>> round(noise_std(m), 4)  # √(2q)/(1 − q), q = e^(−1)
    1.357
    """
    if isinstance(mechanism, DiscreteLaplaceMechanism):
        q = math.exp(-1.0 / float(mechanism.scale))
        return math.sqrt(2.0 * q) / (1.0 - q) * mechanism.resolution
    if isinstance(mechanism, DiscreteGaussianMechanism):
        return math.sqrt(_gaussian_moments(float(mechanism.sigma2))[1]) * mechanism.resolution
    raise InvalidParameterError(f"mechanism must be an exact discrete mechanism, got {type(mechanism).__name__}",
                                parameter="mechanism")


def count_mechanism(*, epsilon: float, delta: float, max_count_per_person: int, n_sensors: int,
                    noise: str = "best") -> CountMechanism:
    r"""The per-sensor noise of a ``counts`` network (module docstring): exact, on the integers, calibrated to C.

    Parameters
    ----------
    epsilon, delta : float
        (ε, δ) of one window; δ = 0 allowed (then discrete Laplace).
    max_count_per_person : int
        C ≥ 1: how often one person may be counted per window, over all sensors (Δ1 = Δ2 = C).
    n_sensors : int
        Sensors released together (the mechanism's dimension; integer inputs add no slack).
    noise : {"best", "laplace", "gaussian"}
        ``"best"``: the one with the smaller expected absolute error per reading
        (:func:`expected_absolute_noise`; discrete Laplace when δ = 0 or on a tie).

    Privacy guarantee
    -----------------
    Neighbouring count vectors (one person's ≤ C counts added or removed) differ by ≤ C in ℓ1 and
    ℓ2; discrete Laplace of scale b ≥ C/ε is ε-DP (CKS 2020 §2), the discrete Gaussian is
    ½(C/σ)²-zCDP, converted to (ε, δ) (CKS 2020 Theorem 14).

    Examples
    --------
    >>> count_mechanism(epsilon=1.0, delta=0.0, max_count_per_person=3, n_sensors=5).scale  # b = C/ε
    Fraction(3, 1)
    >>> big = count_mechanism(epsilon=8.0, delta=0.1, max_count_per_person=4, n_sensors=5, noise="gaussian")
    >>> type(big).__name__, big.grid_sensitivity
    ('DiscreteGaussianMechanism', 4.0)
    """
    eps = check_real("epsilon", epsilon, low=0.0)
    dlt = check_probability("delta", delta, open_low=False)
    c = check_int("max_count_per_person", max_count_per_person, minimum=1)
    m = check_int("n_sensors", n_sensors, minimum=1)
    check_choice("noise", noise, ("best", "laplace", "gaussian"))
    unit = f"one person's contribution (at most {c} count{'s' if c > 1 else ''} per window over all sensors)"
    laplace = DiscreteLaplaceMechanism(epsilon=eps, sensitivity=float(c), dimension=m, neighbouring=unit,
                                       integer_inputs=True)
    if noise == "laplace" or (dlt == 0.0 and noise == "best"):
        return laplace
    if dlt == 0.0:
        raise InvalidParameterError("noise='gaussian' needs delta > 0 (the discrete Gaussian is not pure ε-DP)",
                                    parameter="noise")
    gauss = DiscreteGaussianMechanism(epsilon=eps, delta=dlt, sensitivity=float(c), dimension=m, neighbouring=unit,
                                      integer_inputs=True)
    if noise == "gaussian":
        return gauss
    return gauss if expected_absolute_noise(gauss) < expected_absolute_noise(laplace) else laplace


def count_guarantee_text(*, epsilon: float, delta: float, max_count_per_person: int, mechanism: CountMechanism,
                         reading_unit: str) -> str:
    """The guarantee of one window of a ``counts`` network, in words (unconditional).

    Examples
    --------
    >>> import textwrap
    >>> mech = count_mechanism(epsilon=1.0, delta=1e-6, max_count_per_person=1, n_sensors=3)
    >>> text = count_guarantee_text(epsilon=1.0, delta=1e-6, max_count_per_person=1, mechanism=mech,
    ...                             reading_unit="people")
    >>> print(textwrap.fill(text, 100))
    ε = 1-DP per window for one person's contribution (counted at most once per window over all
    sensors); unconditional: it holds whatever the counts (exact discrete Laplace noise, scale 1 people,
    on each sensor's count)
    """
    c = check_int("max_count_per_person", max_count_per_person, minimum=1)
    times = "once" if c == 1 else f"{c} times"
    if isinstance(mechanism, DiscreteLaplaceMechanism):
        claim, noise = f"ε = {epsilon:g}-DP", f"exact discrete Laplace noise, scale {mechanism.scale_value:.4g}"
    else:
        claim = f"(ε, δ) = ({epsilon:g}, {delta:g})-DP"
        noise = f"exact discrete Gaussian noise, σ {mechanism.sigma:.4g}"
    return (f"{claim} per window for one person's contribution (counted at most {times} per window over all "
            f"sensors); unconditional: it holds whatever the counts ({noise} {reading_unit}, on each sensor's count)")


def field_guarantee_text(*, epsilon: float, delta: float, privacy_unit: str, model: str,
                         misfit: float | None) -> str:
    """The guarantee of one window of a ``field`` network, in words: conditional on the model, misfit beside it.

    Examples
    --------
    >>> import textwrap
    >>> text = field_guarantee_text(epsilon=1.0, delta=1e-6, privacy_unit="one person moved by up to 100 m",
    ...                             model="graph diffusion, τ = 12000 m²", misfit=0.37)
    >>> print(textwrap.fill(text, 100))
    (ε, δ) = (1, 1e-06)-DP per window for one person moved by up to 100 m, holds if the readings follow
    the model (graph diffusion, τ = 12000 m²); model misfit on public history: 37 % of the readings
    unexplained
    """
    fit = ("not measured (choose_diffusion_time reports it)" if misfit is None
           else f"{100 * misfit:.3g} % of the readings unexplained")
    return (f"(ε, δ) = ({epsilon:g}, {delta:g})-DP per window for {privacy_unit}, holds if the readings follow the "
            f"model ({model}); model misfit on public history: {fit}")

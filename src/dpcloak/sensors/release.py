r"""What one sensor needs to release a reading: the calibrated mechanism and the budget, without the model.

A :class:`ReleaseSpec` holds the public numbers that fix a network's per-reading release — the kind
of measurement, the number of sensors released together, (ε, δ) of one release, the budget, the
sensitivity Δ2 (for a ``field`` network: of the model's readings under the relation; for ``counts``:
C = ``max_count_per_person``), the reading range and unit — and builds the exact mechanism from them
(:mod:`dpcloak.privacy.discrete`: σ² is calibrated here, an exact rational, never read from a file).

A :class:`~dpcloak.sensors.SensorNetwork` computes Δ2 from its model and releases through its spec;
a sensor node builds the spec alone from the configuration (:func:`~dpcloak.sensors.config.release_spec_from_dict`),
reading Δ2 from the configuration's ``[derived]`` table. That Δ2 is computed when the configuration is
written and is covered by the deployment's fingerprint, which the node checks against its credential
(:class:`dpcloak.service.config.Deployment`), so a node never rebuilds the model (a dense 1000 × 2000
operator and the search over the relation's pairs) to sample one number, and a node given an edited
Δ2 refuses to start.

Examples
--------
>>> spec = ReleaseSpec(measurement="field", n_sensors=4, epsilon=1.0, delta=1e-6, budget=(10.0, 1e-5),
...                    sensitivity=1.5, neighbouring="one person moved by up to 2 m")
>>> type(spec.mechanism).__name__, spec.max_releases() > 1
('DiscreteGaussianMechanism', True)
>>> value = spec.release_reading(12.0)  # the OS CSPRNG: exact discrete Gaussian on the grid
>>> value == round(value / spec.resolution) * spec.resolution  # a point of the grid (cell · resolution)
True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dpcloak._validation import check_choice, check_int, check_probability, check_real
from dpcloak.errors import InvalidParameterError
from dpcloak.privacy.accounting import PrivacySpent, distinct_digits, privacy_spent
from dpcloak.privacy.discrete import DiscreteGaussianMechanism, DiscreteLaplaceMechanism, RandBelow, secure_randbelow
from dpcloak.privacy.mechanisms import check_exact_doubles
from dpcloak.sensors.measurement import MEASUREMENTS, check_unit, count_mechanism

__all__ = ["ReleaseSpec", "ACCOUNTANT", "check_reading_range"]

#: How releases compose: the closed forms of :mod:`dpcloak.privacy.accounting` (zCDP's ρ adds up; pure ε adds up).
ACCOUNTANT = "closed"


def check_reading_range(reading_range: Any) -> tuple[float, float | None]:
    """A reading range ``(low, high)`` with ``low <= high`` (``high`` ``None``: no upper limit).

    Examples
    --------
    >>> check_reading_range((0, None)), check_reading_range((0.0, 200.0))
    ((0.0, None), (0.0, 200.0))
    """
    try:
        low, high = reading_range
    except (TypeError, ValueError):
        raise InvalidParameterError(f"reading_range must be a pair (low, high), got {reading_range!r}",
                                    parameter="reading_range") from None
    lo = check_real("reading_range[0]", low)
    if high is None:
        return lo, None
    return lo, check_real("reading_range[1]", high, low=lo)


@dataclass(frozen=True)
class ReleaseSpec:
    r"""The public parameters of one sensor's release, and the exact mechanism they calibrate.

    Parameters
    ----------
    measurement : {"field", "counts"}
        What the readings are (:mod:`dpcloak.sensors.measurement`).
    n_sensors : int
        Sensors released together (the mechanism's dimension).
    epsilon, delta : float
        (ε, δ) of one release of all sensors, as declared.
    budget : (float, float)
        ``(epsilon_total, delta_total)`` the releases may compose to.
    sensitivity : float
        Δ2 of the reading vector: of the model's readings under the relation (field), or C (counts).
    neighbouring : str
        The relation Δ2 protects, in words (field; a counts mechanism names its own unit).
    reading_range : (low, high), default (0, None)
        Every reading is clipped to it before noise is added.
    reading_unit : str, default "people"
    resolution : float, optional
        Grid of the exact discrete Gaussian (field; default Δ2/1024); 1 for counts.
    max_count_per_person : int, optional
        C for counts (must equal ``sensitivity``); ``None`` for a field network.

    Attributes
    ----------
    mechanism : DiscreteGaussianMechanism or DiscreteLaplaceMechanism
        Calibrated at construction (σ² exact, re-checked with the accountant: never overspends).

    Privacy guarantee
    -----------------
    One release of all sensors is (ε, δ)-DP for reading vectors at ℓ2 distance ≤ ``sensitivity``
    (field: the model's readings of neighbouring sources, so it holds if the readings follow the
    model; counts: unconditional), :class:`~dpcloak.privacy.discrete.DiscreteGaussianMechanism` /
    :func:`~dpcloak.sensors.measurement.count_mechanism`; clipping to ``reading_range`` is
    1-Lipschitz per coordinate and cannot raise Δ2. Releases compose by :meth:`guarantee` (closed form).

    Examples
    --------
    >>> counts = ReleaseSpec(measurement="counts", n_sensors=19, epsilon=1.0, delta=1e-6, budget=(10.0, 1e-5),
    ...                      sensitivity=1.0, neighbouring="", max_count_per_person=1)
    >>> type(counts.mechanism).__name__, counts.resolution
    ('DiscreteLaplaceMechanism', 1.0)
    >>> counts.release_reading(2.5)
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidParameterError: readings of a counts network must be whole counts of people, got 2.5 ...
    """

    measurement: str
    n_sensors: int
    epsilon: float
    delta: float
    budget: tuple[float, float]
    sensitivity: float
    neighbouring: str
    reading_range: tuple[float, float | None] = (0.0, None)
    reading_unit: str = "people"
    resolution: float | None = None
    max_count_per_person: int | None = None
    mechanism: DiscreteGaussianMechanism | DiscreteLaplaceMechanism = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        kind = check_choice("measurement", self.measurement, MEASUREMENTS)
        m = check_int("n_sensors", self.n_sensors, minimum=1)
        try:
            eps_total, delta_total = self.budget
        except (TypeError, ValueError):
            raise InvalidParameterError(f"budget must be a pair (epsilon_total, delta_total), got {self.budget!r}",
                                        parameter="budget") from None
        budget = (check_real("budget epsilon", eps_total, low=0.0), check_probability("budget delta", delta_total))
        low, high = check_reading_range(self.reading_range)
        unit = check_unit("reading_unit", self.reading_unit)
        mechanism: DiscreteGaussianMechanism | DiscreteLaplaceMechanism
        if kind == "counts":
            if self.resolution not in (None, 1.0):
                raise InvalidParameterError(f"resolution must be 1 for measurement='counts' (counts are integers), "
                                            f"got {self.resolution!r}", parameter="resolution")
            if not float(low).is_integer() or (high is not None and not float(high).is_integer()):
                raise InvalidParameterError(f"reading_range must have integer ends for counts, got {(low, high)!r}",
                                            parameter="reading_range")
            c = check_int("max_count_per_person", self.max_count_per_person, minimum=1)
            if self.sensitivity != c:
                raise InvalidParameterError(f"sensitivity must be max_count_per_person={c} for counts, got "
                                            f"{self.sensitivity!r}", parameter="sensitivity")
            delta = check_probability("delta", self.delta, open_low=False)
            mechanism = count_mechanism(epsilon=self.epsilon, delta=delta, max_count_per_person=c, n_sensors=m)
        else:
            if self.max_count_per_person is not None:
                raise InvalidParameterError(f"max_count_per_person is for measurement='counts', got "
                                            f"{self.max_count_per_person!r} with 'field'",
                                            parameter="max_count_per_person")
            delta = self.delta
            mechanism = DiscreteGaussianMechanism(epsilon=self.epsilon, delta=delta, sensitivity=self.sensitivity,
                                                  resolution=self.resolution, dimension=m,
                                                  neighbouring=str(self.neighbouring))
        for name, value in (("n_sensors", m), ("budget", budget), ("reading_range", (low, high)),
                            ("reading_unit", unit), ("epsilon", float(mechanism.epsilon)), ("delta", float(delta)),
                            ("resolution", float(mechanism.resolution)), ("mechanism", mechanism)):
            object.__setattr__(self, name, value)
        one = self.guarantee(1)
        if not one.epsilon <= budget[0]:
            spent, allowed = distinct_digits(one.epsilon, budget[0])
            raise InvalidParameterError(
                f"one release already spends epsilon={spent} at delta={budget[1]:g}, over the budget "
                f"epsilon={allowed}",
                parameter="budget", allowed=f"epsilon >= {spent}", got=allowed
            )

    # --- accounting ---------------------------------------------------------------------------
    def guarantee(self, releases: int) -> PrivacySpent:
        """Composed (ε, δ_budget) after ``releases`` releases: ``k·ρ``-zCDP (or k·ε) in closed form.

        :func:`dpcloak.privacy.accounting.privacy_spent` with ``accountant="closed"`` (Bun & Steinke
        2016 Lemma 2.3; converted by Canonne, Kamath & Steinke 2020 Prop. 12 at the optimal order),
        stated at the budget's δ.
        """
        k = check_int("releases", releases, minimum=0)
        return privacy_spent(self.mechanism, readings=k, delta=self.budget[1], accountant=ACCOUNTANT)

    def max_releases(self) -> int:
        """The largest number of releases the budget allows (≥ 1, checked at construction; capped at 2²⁴)."""
        def fits(k: int) -> bool:
            return self.guarantee(k).epsilon <= self.budget[0]

        lo, hi = 1, 2
        while fits(hi):
            lo, hi = hi, hi * 2
            if hi > 2**24:
                return lo
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if fits(mid) else (lo, mid)
        return lo

    # --- one reading --------------------------------------------------------------------------
    def check_counts(self, values: NDArray[np.float64]) -> None:
        """A counts network releases whole counts: refuse fractions before anything is charged."""
        if self.measurement == "counts" and values.size and not np.all(values == np.rint(values)):
            bad = float(values[values != np.rint(values)][0])
            raise InvalidParameterError(f"readings of a counts network must be whole counts of {self.reading_unit}, "
                                        f"got {bad!r} (a diffusing quantity is measurement='field')",
                                        parameter="readings")

    def clip(self, values: NDArray[np.float64]) -> NDArray[np.float64]:
        """``values`` clipped to ``reading_range``."""
        low, high = self.reading_range
        return np.clip(values, low, np.inf if high is None else high)

    def grid_cell(self, value: float) -> int:
        """The grid index of one raw reading: checked (a finite number; whole for counts), clipped, rounded exactly."""
        x = float(check_exact_doubles(value, np.array(check_real("value", value)), name="value"))
        self.check_counts(np.array([x]))
        return int(self.mechanism.to_grid(self.clip(np.array([x])))[0])

    def add_noise(self, cell: int, randbelow: RandBelow | None = None) -> float:
        """``resolution · (cell + Y)`` with one exact noise draw Y (``randbelow``: default the OS CSPRNG)."""
        noise = self.mechanism.sample_noise(1, secure_randbelow if randbelow is None else randbelow)[0]
        return float((int(cell) + noise) * float(self.resolution))  # type: ignore[arg-type]  # set in __post_init__

    def release_reading(self, value: float, *, randbelow: RandBelow | None = None) -> float:
        """What a sensor sends for one raw reading (:meth:`grid_cell` then :meth:`add_noise`); charges nothing.

        The caller counts the release against the budget first (a sensor node's ledger;
        :meth:`dpcloak.sensors.SensorNetwork.privatize_reading` charges its own counter).

        Privacy guarantee
        -----------------
        One sensor's share of one release (class docstring).
        """
        return self.add_noise(self.grid_cell(value), randbelow)

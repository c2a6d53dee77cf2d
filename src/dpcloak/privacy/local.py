r"""Per-sensor (local) privatisation: each sensor adds noise to its own reading before it leaves.

The privacy boundary is the sensor (seed 000 §3, seed 002 §7.1): sensor ``j`` holds
:math:`y_j = (Mf_0)_j` and sends :math:`\tilde y_j = y_j + Z_j` with independent noise. The
vector :math:`\tilde y` is then (ε, δ)-DP with respect to neighbouring source vectors as soon as the
mechanism is calibrated to the ℓ2 sensitivity Δ2(M) of the *whole* vector of readings (seed 002,
Proposition 7.1). No sensor needs to know the others' readings.

:class:`SensorPrivatizer` works with any :class:`~dpcloak.privacy.mechanisms.Mechanism` (Gaussian,
Laplace, the floating-point-safe discrete samplers, or bounded Fisher-information noise); its
single-reading path :meth:`SensorPrivatizer.privatize` and its vectorised path
:meth:`SensorPrivatizer.privatize_all` have the same semantics: every reading gets independent
noise from the mechanism's per-coordinate distribution.
"""

from __future__ import annotations

from typing import Generic, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcloak._rng import RngLike
from dpcloak._validation import check_int, check_real
from dpcloak.errors import InvalidParameterError
from dpcloak.models.base import LinearModel
from dpcloak.privacy.mechanisms import GaussianMechanism, Mechanism, PrivacyGuarantee, check_values
from dpcloak.privacy.sensitivity import l2_sensitivity

__all__ = ["SensorPrivatizer", "model_neighbouring"]

M = TypeVar("M", bound=Mechanism)


def model_neighbouring(alpha: float) -> str:
    """The neighbouring relation of a model-based release: α-neighbouring source vectors."""
    return f"alpha-neighbouring source vectors (EMD <= {alpha:g}; seed 002 Def. 6.2, seed 000 Def. 2 for alpha=1)"


class SensorPrivatizer(Generic[M]):
    """Privatize the readings of ``n_sensors`` sensors, one reading or all of them at once.

    Parameters
    ----------
    mechanism : Mechanism
        Any object with ``privatize(values, *, rng=None)`` and ``guarantee()``, calibrated to the
        sensitivity of the vector of all ``n_sensors`` readings.
    n_sensors : int
        Number of sensors m (readings per time step).

    Privacy guarantee
    -----------------
    The vector of one time step's noisy readings has the mechanism's guarantee (:meth:`guarantee`)
    with respect to the mechanism's neighbouring relation. Releasing several time steps composes:
    see :mod:`dpcloak.privacy.accounting`.
    """

    def __init__(self, *, mechanism: M, n_sensors: int) -> None:
        if not isinstance(mechanism, Mechanism):
            raise InvalidParameterError(
                f"mechanism must have privatize(values, *, rng) and guarantee() methods, got {type(mechanism).__name__}"
            )
        self.mechanism: M = mechanism
        self.n_sensors = check_int("n_sensors", n_sensors, minimum=1)

    @classmethod
    def from_model(
        cls,
        model: LinearModel,
        *,
        epsilon: float,
        delta: float,
        sensitivity: float | None = None,
        alpha: float = 1.0,
        calibration: str = "analytic",
    ) -> SensorPrivatizer[GaussianMechanism]:
        """A Gaussian privatizer for ``model``'s sensors, calibrated to its exact Δ2.

        Parameters
        ----------
        model : LinearModel
            The forward model; its row count is the number of sensors.
        epsilon, delta : float
            Target (ε, δ).
        sensitivity : float, optional
            Δ2 if already computed; by default :func:`~dpcloak.privacy.l2_sensitivity` (model, alpha).
        alpha : float
            Neighbour radius α (EMD steps) of the neighbouring relation.
        calibration : {"analytic", "classic", "paper"}
            Gaussian calibration (see :class:`~dpcloak.privacy.GaussianMechanism`).
        """
        if not isinstance(model, LinearModel):
            raise InvalidParameterError(f"model must be a LinearModel, got {type(model).__name__}")
        a = check_real("alpha", alpha, low=0.0)
        sens = l2_sensitivity(model, alpha=a) if sensitivity is None else sensitivity
        mech = GaussianMechanism(epsilon=epsilon, delta=delta, sensitivity=sens, calibration=calibration,
                                 neighbouring=model_neighbouring(a))
        return SensorPrivatizer(mechanism=mech, n_sensors=model.shape[0])

    def _check_sensor(self, sensor: int) -> int:
        return check_int("sensor", sensor, minimum=0, maximum=self.n_sensors - 1)

    def privatize(self, reading: float, *, sensor: int, rng: RngLike = None) -> float:
        """Noisy version of one sensor's reading (what sensor ``sensor`` sends)."""
        self._check_sensor(sensor)
        x = check_values(reading, name="reading")
        if x.ndim != 0:
            raise InvalidParameterError(f"reading must be a single number, got an array of shape {x.shape}")
        return float(self.mechanism.privatize(x, rng=rng))

    def privatize_all(self, readings: ArrayLike, *, rng: RngLike = None) -> NDArray[np.float64]:
        """Noisy readings of all sensors: shape ``(m,)`` for one time step or ``(k, m)`` for k steps."""
        y = check_values(readings, name="readings")
        if y.ndim not in (1, 2) or y.shape[-1] != self.n_sensors:
            raise InvalidParameterError(
                f"readings must have shape ({self.n_sensors},) or (k, {self.n_sensors}), got {y.shape}"
            )
        return np.asarray(self.mechanism.privatize(y, rng=rng), dtype=float)

    def guarantee(self) -> PrivacyGuarantee:
        """Guarantee of one time step (all sensors once)."""
        return self.mechanism.guarantee()

    def __repr__(self) -> str:
        return f"SensorPrivatizer(mechanism={self.mechanism!r}, n_sensors={self.n_sensors})"

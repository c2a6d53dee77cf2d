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

Keyed backdoor (seed 002, §7.2, Corollary 7.5)
----------------------------------------------
:class:`KeyedPrivatizer` replaces the randomness by a cryptographic pseudo-random stream so that a
trusted holder of the key can remove the noise while everybody else sees private data:

1. **Keys.** A 32-byte master key; sensor ``j`` is provisioned only with its own key
   ``k_j = HMAC-SHA256(master, "dpcloak/sensor-key/v1" ‖ j)`` (:meth:`KeyedPrivatizer.sensor_key`).
2. **Stream.** The noise of reading number ``r`` of sensor ``j`` comes from the ChaCha20 keystream
   (``cryptography`` package, RFC 8439 block function) under key ``k_j`` with the 16-byte
   nonce ``counter=0 (4 bytes) ‖ j (4 bytes, LE) ‖ r (8 bytes, LE)``: every (sensor, reading) pair has
   its own nonce, so no keystream is ever reused (the privatizer refuses a reading index it has
   already used for that sensor).
3. **Uniform.** The first 8 keystream bytes, as a little-endian integer ``w``, give
   ``u = (2⌊w / 2¹²⌋ + 1) / 2⁵³``: the midpoints of 2⁵² equal cells of (0, 1), computed exactly in
   double precision (never 0 or 1).
4. **Noise.** ``z = F⁻¹(u)`` with the mechanism's exact inverse CDF (``noise_quantile``; for the
   Gaussian ``σ Φ⁻¹(u)``). The released value is ``y + z``.

The holder of the master key recomputes ``z`` bit for bit and returns ``(y + z) − z``, which equals
``y`` up to one rounding of the addition (|error| ≤ ulp(y + z)). Any other key gives an unrelated
``z′`` and an error of order σ√2.

Floating-point-safe variant: with a grid mechanism of :mod:`dpcloak.privacy.discrete`
(:class:`~dpcloak.privacy.DiscreteGaussianMechanism`, :class:`~dpcloak.privacy.DiscreteLaplaceMechanism`)
steps 3–4 become: the keystream of (sensor, reading) is read as a source of uniform integers (minimal
number of bits, rejection) that drives the exact Canonne–Kamath–Steinke sampler, giving an integer
``z``; the sensor sends ``g(⌊y/g⌉ + z)``. The key holder gets back ``g⌊y/g⌉`` exactly — the raw
reading rounded to the grid, which is all the sensor ever used.

Privacy guarantee of the keyed path: simulation-based *computational* DP (Mironov, Pandey, Reingold
& Vadhan 2009; seed 002 Definition 7.4): against adversaries that cannot distinguish ChaCha20 from
random, the release is as private as the mechanism it simulates. With a continuous mechanism it
inherits the floating-point caveat of continuous noise (Mironov 2012; see
:mod:`dpcloak.privacy.discrete`); with a grid mechanism it does not.
"""

from __future__ import annotations

import hmac
from typing import Generic, Protocol, TypeVar, cast, runtime_checkable

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
from numpy.typing import ArrayLike, NDArray

from dpcloak._rng import RngLike
from dpcloak._validation import check_int, check_real
from dpcloak.errors import InvalidParameterError
from dpcloak.models.base import LinearModel
from dpcloak.privacy.discrete import RandBelow
from dpcloak.privacy.mechanisms import GaussianMechanism, Mechanism, PrivacyGuarantee, QuantileNoise, check_values
from dpcloak.privacy.sensitivity import l2_sensitivity

__all__ = ["SensorPrivatizer", "KeyedPrivatizer", "keystream_uniforms", "derive_sensor_key", "model_neighbouring"]

KEY_BYTES = 32
_KEY_LABEL = b"dpcloak/sensor-key/v1"

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
        check_dimension = getattr(mechanism, "check_dimension", None)
        if callable(check_dimension):  # grid mechanisms: rounding slack counted for n_sensors coordinates
            check_dimension(self.n_sensors, name="n_sensors")

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


def _check_key(name: str, key: bytes) -> bytes:
    if not isinstance(key, bytes | bytearray) or len(key) != KEY_BYTES:
        size = len(key) if isinstance(key, bytes | bytearray | str) else "?"
        raise InvalidParameterError(f"{name} must be {KEY_BYTES} bytes (e.g. secrets.token_bytes({KEY_BYTES})), "
                                    f"got {type(key).__name__} of length {size}")
    return bytes(key)


def derive_sensor_key(master_key: bytes, sensor: int) -> bytes:
    """Per-sensor key ``HMAC-SHA256(master_key, "dpcloak/sensor-key/v1" ‖ sensor)`` (32 bytes)."""
    mk = _check_key("master_key", master_key)
    j = check_int("sensor", sensor, minimum=0, maximum=2**32 - 1)
    return hmac.digest(mk, _KEY_LABEL + j.to_bytes(4, "little"), "sha256")


def _chacha_uniforms(key: bytes, sensor: int, index: int, size: int) -> NDArray[np.float64]:
    nonce = bytes(4) + sensor.to_bytes(4, "little") + index.to_bytes(8, "little")
    stream = Cipher(algorithms.ChaCha20(key, nonce), mode=None).encryptor().update(bytes(8 * size))
    words = np.frombuffer(stream, dtype="<u8") >> np.uint64(12)
    odd = (words << np.uint64(1)) | np.uint64(1)
    return odd.astype(np.float64) * 2.0**-53


class _KeystreamIntegers:
    """Uniform integers below ``n`` read from the ChaCha20 stream of one (sensor, reading): a ``RandBelow``.

    Each draw takes the fewest whole bytes holding ``n.bit_length()`` bits, keeps the top bits and
    rejects values ≥ n, so the integers are exactly uniform if the keystream is.
    """

    def __init__(self, key: bytes, sensor: int, index: int) -> None:
        nonce = bytes(4) + sensor.to_bytes(4, "little") + index.to_bytes(8, "little")
        self._stream = Cipher(algorithms.ChaCha20(key, nonce), mode=None).encryptor()

    def __call__(self, n: int) -> int:
        if n == 1:
            return 0
        bits = (n - 1).bit_length()
        nbytes = (bits + 7) // 8
        while True:
            r = int.from_bytes(self._stream.update(bytes(nbytes)), "little") >> (8 * nbytes - bits)
            if r < n:
                return r


@runtime_checkable
class _GridNoise(Protocol):
    """A floating-point-safe grid mechanism (dpcloak.privacy.discrete): integer noise on ``resolution · ℤ``."""

    resolution: float

    def sample_noise(self, count: int, randbelow: RandBelow) -> list[int]: ...


def keystream_uniforms(sensor_key: bytes, *, sensor: int, index: int, size: int = 1) -> NDArray[np.float64]:
    """``size`` uniforms in (0, 1) from the ChaCha20 stream of (sensor key, sensor id, reading index).

    Nonce = 4-byte zero block counter ‖ sensor (uint32 LE) ‖ index (uint64 LE); each uniform takes
    8 keystream bytes ``w`` (LE) to ``(2⌊w/2¹²⌋ + 1)/2⁵³`` exactly (module docstring).
    """
    key = _check_key("sensor_key", sensor_key)
    j = check_int("sensor", sensor, minimum=0, maximum=2**32 - 1)
    r = check_int("index", index, minimum=0, maximum=2**64 - 1)
    return _chacha_uniforms(key, j, r, check_int("size", size, minimum=1))


class KeyedPrivatizer:
    """Per-sensor privatisation with keyed pseudo-random noise and a backdoor for the key holder.

    Seed 002 §7.2 (Corollary 7.5): the noise is a deterministic function of a secret key, the
    sensor id and the reading index (module docstring), so :meth:`remove_noise` with the same key
    recovers the raw reading.

    Parameters
    ----------
    mechanism : Mechanism
        Either an additive i.i.d.-noise mechanism with an exact inverse CDF ``noise_quantile``
        (:class:`~dpcloak.privacy.GaussianMechanism`, :class:`~dpcloak.privacy.LaplaceMechanism`):
        the raw reading comes back to floating point; or a floating-point-safe grid mechanism
        (:class:`~dpcloak.privacy.DiscreteGaussianMechanism`,
        :class:`~dpcloak.privacy.DiscreteLaplaceMechanism`): the reading comes back rounded to the grid.
    n_sensors : int
        Number of sensors m.
    key : bytes
        32-byte master key (``secrets.token_bytes(32)``); keep it secret.

    Privacy guarantee
    -----------------
    Computational (ε, δ)-DP (SIM-CDP, seed 002 Definition 7.4) with the mechanism's ε and δ, for
    adversaries without the key; none at all against the key holder (by design).
    """

    def __init__(self, *, mechanism: Mechanism, n_sensors: int, key: bytes) -> None:
        grid = isinstance(mechanism, _GridNoise)
        if not isinstance(mechanism, Mechanism) or not (grid or isinstance(mechanism, QuantileNoise)):
            raise InvalidParameterError(
                "mechanism must have privatize and guarantee methods and either noise_quantile (additive noise with "
                f"an inverse CDF) or resolution and sample_noise (a grid mechanism), got {type(mechanism).__name__}"
            )
        self.mechanism = mechanism
        self._grid: _GridNoise | None = mechanism if isinstance(mechanism, _GridNoise) else None
        self._quantile: QuantileNoise | None = mechanism if isinstance(mechanism, QuantileNoise) else None
        self.n_sensors = check_int("n_sensors", n_sensors, minimum=1)
        self._key = _check_key("key", key)
        self._sensor_keys = [derive_sensor_key(self._key, j) for j in range(self.n_sensors)]
        self._last_index = [-1] * self.n_sensors

    def sensor_key(self, sensor: int) -> bytes:
        """The key to provision sensor ``sensor`` with (it needs no other secret)."""
        return self._sensor_keys[check_int("sensor", sensor, minimum=0, maximum=self.n_sensors - 1)]

    def _raw_noise(self, sensor: int, index: int) -> float:
        """Noise of one (sensor, reading): in reading units, or in grid cells for a grid mechanism."""
        key = self._sensor_keys[sensor]
        if self._grid is not None:
            return float(self._grid.sample_noise(1, _KeystreamIntegers(key, sensor, index))[0])
        quantile = cast(QuantileNoise, self._quantile)  # not None when there is no grid (checked in __init__)
        return float(quantile.noise_quantile(_chacha_uniforms(key, sensor, index, 1))[0])

    def noise(self, *, sensor: int, index: int) -> float:
        """The noise of reading ``index`` of sensor ``sensor`` in reading units (deterministic given the key)."""
        j = check_int("sensor", sensor, minimum=0, maximum=self.n_sensors - 1)
        z = self._raw_noise(j, check_int("index", index, minimum=0, maximum=2**64 - 1))
        return z * self._grid.resolution if self._grid is not None else z

    def _noise_block(self, k: int, start: int) -> NDArray[np.float64]:
        """Raw noise of reading indices ``start … start + k − 1`` of every sensor."""
        if start + k - 1 > 2**64 - 1:
            raise InvalidParameterError(f"reading indices must stay below 2**64, got up to {start + k - 1}")
        z = np.empty((k, self.n_sensors))
        if self._grid is not None:
            for r in range(k):
                for j in range(self.n_sensors):
                    z[r, j] = self._raw_noise(j, start + r)
            return z
        for r in range(k):  # uniforms first, then one vectorised inverse CDF (same values as _raw_noise)
            for j, key in enumerate(self._sensor_keys):
                z[r, j] = _chacha_uniforms(key, j, start + r, 1)[0]
        return np.asarray(cast(QuantileNoise, self._quantile).noise_quantile(z), dtype=float)

    def _add(self, values: NDArray[np.float64], z: NDArray[np.float64]) -> NDArray[np.float64]:
        if self._grid is None:
            return values + z
        g = self._grid.resolution
        return (np.rint(values / g) + z) * g  # integers (exact in float64) times the grid step

    def _subtract(self, noisy: NDArray[np.float64], z: NDArray[np.float64]) -> NDArray[np.float64]:
        if self._grid is None:
            return noisy - z
        g = self._grid.resolution
        return (np.rint(noisy / g) - z) * g

    def _reserve(self, sensors: range, first: int, last: int) -> None:
        for j in sensors:
            if first <= self._last_index[j]:
                raise InvalidParameterError(
                    f"reading index {first} of sensor {j} is not after its last used index {self._last_index[j]}; "
                    "reusing an index would reuse the noise and leak the difference of the readings"
                )
        for j in sensors:
            self._last_index[j] = last

    def _check_block(self, name: str, values: ArrayLike) -> NDArray[np.float64]:
        y = check_values(values, name=name)
        if y.ndim not in (1, 2) or y.shape[-1] != self.n_sensors:
            raise InvalidParameterError(f"{name} must have shape ({self.n_sensors},) or (k, {self.n_sensors}), "
                                        f"got {y.shape}")
        return y

    def _check_one(self, name: str, value: float, sensor: int, index: int) -> tuple[NDArray[np.float64], int, int]:
        x = check_values(value, name=name)
        if x.ndim != 0:
            raise InvalidParameterError(f"{name} must be a single number, got an array of shape {x.shape}")
        j = check_int("sensor", sensor, minimum=0, maximum=self.n_sensors - 1)
        return x, j, check_int("index", index, minimum=0, maximum=2**64 - 1)

    def privatize(self, reading: float, *, sensor: int, index: int) -> float:
        """What sensor ``sensor`` sends for its reading number ``index``."""
        x, j, r = self._check_one("reading", reading, sensor, index)
        out = float(self._add(x, np.asarray(self._raw_noise(j, r))))
        self._reserve(range(j, j + 1), r, r)
        return out

    def privatize_all(self, readings: ArrayLike, *, start: int = 0) -> NDArray[np.float64]:
        """All sensors at once: row ``r`` of a ``(k, m)`` block (or one ``(m,)`` row) is reading index ``start + r``.

        Elementwise identical to calling :meth:`privatize` for every (sensor, index).
        """
        y = self._check_block("readings", readings)
        s0 = check_int("start", start, minimum=0)
        block = np.atleast_2d(y)
        out = self._add(block, self._noise_block(block.shape[0], s0))
        self._reserve(range(self.n_sensors), s0, s0 + block.shape[0] - 1)
        return out.reshape(y.shape)

    def remove_noise(self, noisy: float, *, sensor: int, index: int) -> float:
        """Backdoor: the raw reading from one noisy value.

        Exact up to one floating-point rounding for continuous noise; exactly the reading rounded to
        the grid for a grid mechanism.
        """
        x, j, r = self._check_one("noisy", noisy, sensor, index)
        return float(self._subtract(x, np.asarray(self._raw_noise(j, r))))

    def remove_noise_all(self, noisy: ArrayLike, *, start: int = 0) -> NDArray[np.float64]:
        """Backdoor for a block produced by :meth:`privatize_all` with the same ``start``."""
        y = self._check_block("noisy", noisy)
        s0 = check_int("start", start, minimum=0)
        block = np.atleast_2d(y)
        return self._subtract(block, self._noise_block(block.shape[0], s0)).reshape(y.shape)

    def guarantee(self) -> PrivacyGuarantee:
        """The mechanism's (ε, δ), as computational DP (SIM-CDP) against adversaries without the key."""
        g = self.mechanism.guarantee()
        how = "exact integer sampler driven by the keystream" if self._grid is not None else "inverse-CDF transform"
        return PrivacyGuarantee(
            kind=f"{g.kind.replace('-DP', '')}-SIM-CDP (computational, keyed ChaCha20 noise)",
            epsilon=g.epsilon,
            delta=g.delta,
            neighbouring=g.neighbouring,
            sensitivity=g.sensitivity,
            norm=g.norm,
            mechanism=f"{g.mechanism}; noise from ChaCha20 keyed per sensor, {how}",
            source="seed 002 §7.2, Definition 7.4 and Corollary 7.5 (Mironov et al. 2009); " + g.source,
        )

    def __repr__(self) -> str:
        return f"KeyedPrivatizer(mechanism={self.mechanism!r}, n_sensors={self.n_sensors}, key=<secret>)"

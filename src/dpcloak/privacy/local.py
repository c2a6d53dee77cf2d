r"""Per-sensor (local) privatisation: each sensor adds noise to its own reading before it leaves.

The privacy boundary is the sensor (Gilbert & McMillan §3, McMillan's thesis §7.1): sensor ``j`` holds
:math:`y_j = (Mf_0)_j` and sends :math:`\tilde y_j = y_j + Z_j` with independent noise. The
vector :math:`\tilde y` is then (ε, δ)-DP with respect to neighbouring source vectors as soon as the
mechanism is calibrated to the ℓ2 sensitivity Δ2(M) of the *whole* vector of readings (McMillan's thesis,
Proposition 7.1). No sensor needs to know the others' readings.

Secure by default
-----------------
Both privatizers release data, so by default they

* sample **exact integer noise** on a grid (:class:`~dpcloak.privacy.DiscreteGaussianMechanism`,
  :class:`~dpcloak.privacy.DiscreteLaplaceMechanism`; Canonne, Kamath & Steinke 2020) from the
  operating system's CSPRNG — floating-point samplers leak through their low-order bits (Mironov
  2012) and a fixed seed makes every release's noise predictable, so a release path refuses both;
* **charge an accountant** (:class:`~dpcloak.privacy.ReadingAccountant`) *before* every release:
  one charge per released vector (a time step of all sensors) and one per single reading. With a
  budget, a release past it raises :class:`~dpcloak.errors.BudgetExceededError` and nothing is
  sampled or returned; with a ledger file the count survives restarts and is shared by every
  object using the file (write-ahead: a charged release counts as spent even if it then fails);
* report in :meth:`~SensorPrivatizer.guarantee` the **composed total** of the releases so far.

Simulations and experiments opt out explicitly with ``SensorPrivatizer(..., simulation=True)`` (or
``from_model(..., noise="float")``): any mechanism, any ``rng`` (seed, Generator), and a guarantee
that says it describes idealised real-valued noise.

Keyed backdoor (McMillan's thesis, §7.2, Corollary 7.5)
----------------------------------------------
:class:`KeyedPrivatizer` replaces the randomness by a cryptographic pseudo-random stream so that a
trusted holder of the key can remove the noise while everybody else sees private data:

1. **Keys.** A 32-byte master key; sensor ``j`` is provisioned only with its own key
   ``k_j = HMAC-SHA256(master, "dpcloak/sensor-key/v1" ‖ j)`` (:func:`derive_sensor_key`).
2. **Nonces.** Every release draws a fresh 16-byte nonce from the OS CSPRNG and publishes it with
   the noisy values (it carries no information about the readings). Two releases share noise
   only if they draw the same 128-bit nonce: probability below :math:`n^2/2^{129}` after n releases
   (< 10⁻²⁰ for n = 10⁹), whichever objects or processes hold the key — there is no reading index
   a caller could reuse.
3. **Stream.** The noise of sensor ``j`` in the release with nonce ``r`` comes from the ChaCha20
   keystream (``cryptography`` package, RFC 8439) under the stream key
   ``HMAC-SHA256(k_j, "dpcloak/release-stream/v2" ‖ j (4 bytes, LE) ‖ r)`` (all-zero ChaCha20 nonce:
   each stream key is used once).
4. **Noise.** The keystream is read as a source of uniform integers (fewest whole bytes, rejection
   of values ≥ n: exactly uniform, never truncated — the stream is as long as the sampler needs)
   that drives the exact discrete Gaussian / discrete Laplace sampler, giving an integer ``z``; the
   sensor sends ``g(⌊y/g⌉ + z)`` (g the grid spacing).

The key holder recomputes ``z`` and gets back ``g⌊y/g⌉`` exactly — the reading rounded to the grid,
which is all the sensor ever used. Continuous mechanisms are refused: driving an inverse CDF with a
53-bit uniform truncates the noise (``|z| ≤ 8.21σ`` for a Gaussian, ``36.04b`` for a Laplace), which
breaks the stated δ (at (ε, δ) = (50, 10⁻¹²) the exact δ is ≥ 1.5·10⁻³) and any pure ε-DP.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass, replace
from os import PathLike
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
from numpy.typing import ArrayLike, NDArray

from dpcloak._rng import RngLike
from dpcloak._validation import check_choice, check_int, check_real
from dpcloak.errors import InvalidParameterError
from dpcloak.models.base import LinearModel
from dpcloak.privacy.accounting import ReadingAccountant, accountable
from dpcloak.privacy.discrete import DiscreteGaussianMechanism, RandBelow
from dpcloak.privacy.mechanisms import GaussianMechanism, Mechanism, PrivacyGuarantee, check_values
from dpcloak.privacy.sensitivity import l2_sensitivity

__all__ = [
    "SensorPrivatizer",
    "KeyedPrivatizer",
    "KeyedRelease",
    "keyed_noise",
    "derive_sensor_key",
    "model_neighbouring",
    "NOISE_KINDS",
]

KEY_BYTES = 32
NONCE_BYTES = 16
NOISE_KINDS = ("secure", "float")
_KEY_LABEL = b"dpcloak/sensor-key/v1"
_STREAM_LABEL = b"dpcloak/release-stream/v2"

M = TypeVar("M", bound=Mechanism)


def model_neighbouring(alpha: float, *, unit: str = "neighbour steps", spacing: float | None = None,
                       spacing_unit: str = "domain units") -> str:
    """The neighbouring relation of a model-based release, in the units the user works in.

    McMillan's thesis Definition 6.2: source vectors are α-neighbours when their earth mover's distance is at
    most α — the total of (source mass moved × distance moved). :func:`~dpcloak.privacy.l2_sensitivity`
    measures that distance in *neighbour steps* (one step = to an adjacent location), so α = 1 is seed
    000's Definition 2 (one unit of source moved to the next location).

    Parameters
    ----------
    alpha : float
        The radius α (≥ 0) in ``unit``.
    unit : str
        What α counts: ``"neighbour steps"`` (the default of :func:`~dpcloak.privacy.l2_sensitivity`),
        ``"m"`` (metres) or ``"hops"`` (graph edges).
    spacing : float, optional
        For ``unit="neighbour steps"``: the length of one step in ``spacing_unit`` (e.g. the grid
        spacing 1/n of Gilbert & McMillan's line), so that the relation can also be read in coordinates.
    spacing_unit : str
        Unit of ``spacing``.

    Examples
    --------
    >>> text = model_neighbouring(1.0, spacing=0.01)
    >>> text.split("(")[0]
    'source vectors that differ by moving source mass a total of at most 1 neighbour step '
    >>> text.split("; ")[1]
    'one step = 0.01 domain units, so EMD <= 0.01 domain units)'
    """
    a = check_real("alpha", alpha, low=0.0, low_inclusive=True)
    name = {"neighbour steps": "neighbour step" if a == 1 else "neighbour steps", "m": "m",
            "hops": "hop" if a == 1 else "hops"}.get(unit, unit)
    short = {"neighbour steps": "step" if a == 1 else "steps"}.get(unit, name)
    text = (f"source vectors that differ by moving source mass a total of at most {a:g} {name} "
            f"(mass x distance, i.e. EMD <= {a:g} {short}")
    if spacing is not None:
        h = check_real("spacing", spacing, low=0.0)
        text += f"; one step = {h:g} {spacing_unit}, so EMD <= {a * h:g} {spacing_unit}"
    return text + "); McMillan's thesis Def. 6.2"


@runtime_checkable
class _GridNoise(Protocol):
    """An exact integer-noise mechanism (dpcloak.privacy.discrete): noise on ``resolution · ℤ``."""

    resolution: float

    def sample_noise(self, count: int, randbelow: RandBelow) -> list[int]: ...

    def to_grid(self, values: ArrayLike) -> NDArray[np.int64]: ...


def _check_dimension(mechanism: Any, n_sensors: int) -> None:
    """Grid mechanisms count the rounding slack of ``dimension`` coordinates: refuse more sensors than that."""
    check = getattr(mechanism, "check_dimension", None)
    if callable(check):
        check(n_sensors, name="n_sensors")


class _Accounted:
    """Shared part of the privatizers: the accountant charged before each release, and the composed guarantee."""

    mechanism: Any
    accountant: ReadingAccountant | None

    def _set_accountant(self, epsilon_budget: float | None, delta_budget: float | None,
                        ledger: str | PathLike[str] | None, accountant: str, *, required: bool) -> None:
        if not accountable(self.mechanism) and not required and epsilon_budget is None and ledger is None:
            self.accountant = None  # a non-DP guarantee (e.g. Fisher information), simulation only
            return
        self.accountant = ReadingAccountant(mechanism=self.mechanism, epsilon_budget=epsilon_budget,
                                            delta_budget=delta_budget, accountant=accountant, ledger=ledger)

    def _charge(self, releases: int) -> None:
        """Charge ``releases`` before sampling (raises BudgetExceededError: nothing is sampled)."""
        if self.accountant is not None:
            self.accountant.charge(releases)

    def _composed(self, *, kind: str, mechanism: str, source: str) -> PrivacyGuarantee:
        one = self.mechanism.guarantee()
        if self.accountant is None:
            return one
        spent = self.accountant.spent()
        return replace(one, kind=f"{kind}, composed over the {spent.readings} release(s) made so far",
                       epsilon=spent.epsilon, delta=spent.delta,
                       mechanism=f"{mechanism}; each release: ({one.epsilon:g}, {one.delta:g})",
                       source=f"{source}; composition: {spent.method}")


class SensorPrivatizer(_Accounted, Generic[M]):
    """Privatize the readings of ``n_sensors`` sensors, one reading or all of them at once.

    Parameters
    ----------
    mechanism : Mechanism
        Calibrated to the sensitivity of the vector of all ``n_sensors`` readings. For deployment
        (``simulation=False``) an exact grid mechanism whose ``dimension`` is at least ``n_sensors``
        (:class:`~dpcloak.privacy.DiscreteGaussianMechanism`,
        :class:`~dpcloak.privacy.DiscreteLaplaceMechanism`); with ``simulation=True`` anything with
        ``privatize(values, *, rng)`` and ``guarantee()`` (Gaussian, Laplace, Fisher-information noise).
    n_sensors : int
        Number of sensors m (readings per time step).
    epsilon_budget, delta_budget, ledger, accountant
        The accountant charged before every release (:class:`~dpcloak.privacy.ReadingAccountant`):
        ``epsilon_budget=None`` counts without refusing; ``ledger`` persists the count in a file.
    simulation : bool
        ``False`` (default): a release path — exact integer noise from the OS CSPRNG, ``rng`` refused.
        ``True``: simulation — any mechanism and any ``rng``, not for releasing data.

    Attributes
    ----------
    accountant : ReadingAccountant or None
        ``None`` only for a simulated mechanism without a DP accounting.

    Privacy guarantee
    -----------------
    Deployment: each released vector (all sensors at one time step, :meth:`privatize_all`) or single
    reading (:meth:`privatize`) is the mechanism's exact integer-noise release — the reading rounded
    to the grid plus exact discrete noise, a fixed function of integers — and the k releases made so
    far are composed in closed form (:mod:`dpcloak.privacy.accounting`): :meth:`guarantee` states that
    total, :meth:`release_guarantee` one release. Simulation: the same statement for idealised noise;
    a float sampler's low-order bits and a seeded generator void it.

    Examples
    --------
    A release path (the default) uses exact grid noise from the OS CSPRNG and counts every release:

    >>> import numpy as np
    >>> from dpcloak.privacy import DiscreteLaplaceMechanism
    >>> mech = DiscreteLaplaceMechanism(epsilon=0.5, sensitivity=1.0, resolution=0.25, dimension=3)
    >>> p = SensorPrivatizer(mechanism=mech, n_sensors=3, epsilon_budget=1.2)
    >>> p.privatize_all(np.array([1.0, 2.0, 3.0])).shape
    (3,)
    >>> p.accountant.readings, p.release_guarantee().epsilon
    (1, 0.5)
    >>> p.privatize_all(np.array([1.0, 2.0, 3.0]), rng=0)
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidParameterError: rng must be None on a release path ...

    Simulation accepts any mechanism and a seed:

    >>> from dpcloak.privacy import GaussianMechanism
    >>> sim = SensorPrivatizer(mechanism=GaussianMechanism(epsilon=1.0, delta=1e-5, sensitivity=1.0),
    ...                        n_sensors=2, simulation=True)
    >>> sim.privatize_all(np.zeros(2), rng=0).shape
    (2,)

    :meth:`from_model` calibrates to a forward model's exact Δ2:

    >>> from dpcloak.models import heat_kernel_1d
    >>> p = SensorPrivatizer.from_model(heat_kernel_1d(20, 5, 0.05), epsilon=1.0, delta=1e-6)
    >>> type(p.mechanism).__name__, p.mechanism.guarantee().epsilon <= 1.0
    ('DiscreteGaussianMechanism', True)
    """

    def __init__(self, *, mechanism: M, n_sensors: int, epsilon_budget: float | None = None,
                 delta_budget: float | None = None, ledger: str | PathLike[str] | None = None,
                 accountant: str = "closed", simulation: bool = False) -> None:
        if not isinstance(mechanism, Mechanism):
            raise InvalidParameterError(
                f"mechanism must have privatize(values, *, rng) and guarantee() methods, got "
                f"{type(mechanism).__name__}", parameter="mechanism"
            )
        self.simulation = bool(simulation)
        if not self.simulation and not isinstance(mechanism, _GridNoise):
            raise InvalidParameterError(
                f"{type(mechanism).__name__} draws floating-point noise, which leaks through its low-order bits "
                "(Mironov 2012): a release path needs an exact grid mechanism (DiscreteGaussianMechanism, "
                "DiscreteLaplaceMechanism); for simulation pass simulation=True",
                parameter="mechanism", got=type(mechanism).__name__
            )
        self.mechanism: M = mechanism
        self.n_sensors = check_int("n_sensors", n_sensors, minimum=1)
        _check_dimension(mechanism, self.n_sensors)
        self._set_accountant(epsilon_budget, delta_budget, ledger, accountant, required=not self.simulation)

    @classmethod
    def from_model(
        cls,
        model: LinearModel,
        *,
        epsilon: float,
        delta: float,
        sensitivity: float | None = None,
        alpha: float = 1.0,
        noise: str = "secure",
        resolution: float | None = None,
        calibration: str | None = None,
        epsilon_budget: float | None = None,
        delta_budget: float | None = None,
        ledger: str | PathLike[str] | None = None,
    ) -> SensorPrivatizer[Any]:
        """A Gaussian privatizer for ``model``'s sensors, calibrated to its exact Δ2.

        Parameters
        ----------
        model : LinearModel
            The forward model; its row count is the number of sensors m.
        epsilon, delta : float
            Target (ε, δ) of one release (one vector of all m readings).
        sensitivity : float, optional
            Δ2 if already computed; by default :func:`~dpcloak.privacy.l2_sensitivity` (model, alpha).
        alpha : float
            Neighbour radius α in neighbour steps (see :func:`model_neighbouring`).
        noise : {"secure", "float"}
            ``"secure"`` (default, for releases): the exact discrete Gaussian calibrated for
            ``dimension = m`` coordinates, OS CSPRNG. ``"float"``: the continuous
            :class:`~dpcloak.privacy.GaussianMechanism` for simulation (``simulation=True``).
        resolution : float, optional
            Grid spacing of the secure noise (default Δ2/1024); refused with ``noise="float"``.
        calibration : {"analytic", "classic", "paper"}, optional
            Gaussian calibration of the float noise (default ``"analytic"``); refused with ``noise="secure"``
            (the discrete Gaussian has its own, see :class:`~dpcloak.privacy.DiscreteGaussianMechanism`).
        epsilon_budget, delta_budget, ledger
            The budget over all releases (see :class:`SensorPrivatizer`).
        """
        if not isinstance(model, LinearModel):
            raise InvalidParameterError(f"model must be a LinearModel, got {type(model).__name__}", parameter="model")
        kind = check_choice("noise", noise, NOISE_KINDS)
        a = check_real("alpha", alpha, low=0.0)
        sens = l2_sensitivity(model, alpha=a) if sensitivity is None else sensitivity
        spacing = getattr(model.domain, "spacing", None)
        relation = model_neighbouring(a, spacing=spacing if isinstance(spacing, float) else None)
        m = model.shape[0]
        budget: dict[str, Any] = {"epsilon_budget": epsilon_budget, "delta_budget": delta_budget, "ledger": ledger}
        if kind == "secure":
            if calibration is not None:
                raise InvalidParameterError(f"calibration applies to noise='float' only, got calibration="
                                            f"{calibration!r} with noise='secure'", parameter="calibration")
            mech: Mechanism = DiscreteGaussianMechanism(epsilon=epsilon, delta=delta, sensitivity=sens,
                                                        resolution=resolution, dimension=m, neighbouring=relation)
            return SensorPrivatizer(mechanism=mech, n_sensors=m, **budget)
        if resolution is not None:
            raise InvalidParameterError(f"resolution applies to noise='secure' only, got resolution={resolution!r} "
                                        "with noise='float'", parameter="resolution")
        mech = GaussianMechanism(epsilon=epsilon, delta=delta, sensitivity=sens,
                                 calibration="analytic" if calibration is None else calibration, neighbouring=relation)
        return SensorPrivatizer(mechanism=mech, n_sensors=m, simulation=True, **budget)

    def _rng(self, rng: RngLike) -> RngLike:
        if rng is not None and not self.simulation:
            raise InvalidParameterError(
                f"rng must be None on a release path (the noise comes from the OS CSPRNG), got {rng!r}: a seed or a "
                "numpy Generator makes the noise predictable; build the privatizer with simulation=True for "
                "experiments", parameter="rng"
            )
        return rng

    def _validate(self, values: NDArray[np.float64]) -> None:
        """Refuse readings the grid cannot hold *before* charging (the mechanism checks again when sampling)."""
        if isinstance(self.mechanism, _GridNoise):
            self.mechanism.to_grid(values)

    def privatize(self, reading: float, *, sensor: int, rng: RngLike = None) -> float:
        """Noisy version of one sensor's reading (what sensor ``sensor`` sends); charged as one release.

        Privacy guarantee
        -----------------
        Charged to the accountant first (refused past the budget: nothing sampled). Deployment: the
        reading is rounded to the grid (exact rational rounding, slack in the calibration) and exact
        integer noise from the OS CSPRNG is added, untruncated; the result is that integer times the
        grid step. A single reading is charged as a whole release, so m single readings of one time
        step cost m releases (use :meth:`privatize_all` for a time step). Simulation: the mechanism's
        own sampler with ``rng``, a guarantee for idealised noise only.
        """
        check_int("sensor", sensor, minimum=0, maximum=self.n_sensors - 1)
        x = check_values(reading, name="reading")
        if x.ndim != 0:
            raise InvalidParameterError(f"reading must be a single number, got an array of shape {x.shape}",
                                        parameter="reading")
        gen = self._rng(rng)
        self._validate(x)
        self._charge(1)
        return float(self.mechanism.privatize(x, rng=gen))

    def privatize_all(self, readings: ArrayLike, *, rng: RngLike = None) -> NDArray[np.float64]:
        """Noisy readings of all sensors: shape ``(m,)`` for one time step or ``(k, m)`` for k steps (k releases).

        Privacy guarantee
        -----------------
        The k rows are charged first (all or nothing). Each row is one release of the vector
        mechanism: every coordinate rounded to the grid, independent exact integer noise (OS CSPRNG,
        untruncated), the integers times the grid step; :meth:`guarantee` composes all releases so far.
        Simulation: the mechanism's sampler with ``rng``, idealised noise only.
        """
        y = check_values(readings, name="readings")
        if y.ndim not in (1, 2) or y.shape[-1] != self.n_sensors:
            raise InvalidParameterError(
                f"readings must have shape ({self.n_sensors},) or (k, {self.n_sensors}), got {y.shape}",
                parameter="readings"
            )
        gen = self._rng(rng)
        self._validate(y)
        self._charge(1 if y.ndim == 1 else y.shape[0])
        return np.asarray(self.mechanism.privatize(y, rng=gen), dtype=float)

    def release_guarantee(self) -> PrivacyGuarantee:
        """Guarantee of one release (all sensors once), as the mechanism states it."""
        return self.mechanism.guarantee()

    def guarantee(self) -> PrivacyGuarantee:
        """Composed guarantee of every release charged so far (the per-release one without an accounting)."""
        one = self.mechanism.guarantee()
        how = ("SIMULATION: holds for idealised noise only (floating-point low-order bits and a seeded rng void it)"
               if self.simulation else "exact integer noise from the OS CSPRNG")
        return self._composed(kind=one.kind, mechanism=f"{one.mechanism}; {how}", source=one.source)

    def __repr__(self) -> str:
        return (f"SensorPrivatizer(mechanism={self.mechanism!r}, n_sensors={self.n_sensors}, "
                f"accountant={self.accountant!r}, simulation={self.simulation})")


def _check_key(name: str, key: bytes) -> bytes:
    if not isinstance(key, bytes | bytearray) or len(key) != KEY_BYTES:
        size = len(key) if isinstance(key, bytes | bytearray | str) else "?"
        raise InvalidParameterError(f"{name} must be {KEY_BYTES} bytes (e.g. secrets.token_bytes({KEY_BYTES})), "
                                    f"got {type(key).__name__} of length {size}", parameter=name)
    return bytes(key)


def _check_nonce(nonce: bytes) -> bytes:
    if not isinstance(nonce, bytes | bytearray) or len(nonce) != NONCE_BYTES:
        raise InvalidParameterError(f"nonce must be the {NONCE_BYTES} bytes published with the release, got {nonce!r}",
                                    parameter="nonce")
    return bytes(nonce)


def derive_sensor_key(master_key: bytes, sensor: int) -> bytes:
    """Per-sensor key ``HMAC-SHA256(master_key, "dpcloak/sensor-key/v1" ‖ sensor)`` (32 bytes).

    Examples
    --------
    >>> k0 = derive_sensor_key(bytes(32), 0)
    >>> len(k0), k0 == derive_sensor_key(bytes(32), 0), k0 == derive_sensor_key(bytes(32), 1)
    (32, True, False)
    """
    mk = _check_key("master_key", master_key)
    j = check_int("sensor", sensor, minimum=0, maximum=2**32 - 1)
    return hmac.digest(mk, _KEY_LABEL + j.to_bytes(4, "little"), "sha256")


class _KeystreamIntegers:
    """Uniform integers below ``n`` read from one ChaCha20 keystream: a ``RandBelow``.

    Each draw takes the fewest whole bytes holding ``(n − 1).bit_length()`` bits, keeps the top bits
    and rejects values ≥ n, so the integers are exactly uniform if the keystream is; the stream never
    runs out, so no draw is truncated.
    """

    def __init__(self, stream_key: bytes) -> None:
        self._stream = Cipher(algorithms.ChaCha20(stream_key, bytes(16)), mode=None).encryptor()

    def __call__(self, n: int) -> int:
        if n == 1:
            return 0
        bits = (n - 1).bit_length()
        nbytes = (bits + 7) // 8
        while True:
            r = int.from_bytes(self._stream.update(bytes(nbytes)), "little") >> (8 * nbytes - bits)
            if r < n:
                return r


def _grid_mechanism(mechanism: Any) -> _GridNoise:
    if not isinstance(mechanism, _GridNoise) or not isinstance(mechanism, Mechanism):
        raise InvalidParameterError(
            f"the keyed path needs an exact grid mechanism (DiscreteGaussianMechanism, DiscreteLaplaceMechanism), got "
            f"{type(mechanism).__name__}: a continuous mechanism driven by a 53-bit keyed uniform has truncated "
            "tails (|z| <= 8.21 sigma for a Gaussian) and does not have its stated (epsilon, delta)",
            parameter="mechanism", got=type(mechanism).__name__
        )
    return mechanism


def keyed_noise(mechanism: Any, sensor_key: bytes, *, sensor: int, nonce: bytes) -> int:
    """The integer noise (grid units) of ``sensor`` in the release with ``nonce``: what a sensor node computes.

    Needs only the sensor's own key (:func:`derive_sensor_key`); deterministic given the key, so the
    key holder recomputes it (module docstring, steps 3–4).

    Examples
    --------
    The key holder recomputes a sensor's noise from the sensor key and the public nonce:

    >>> from dpcloak.privacy import DiscreteLaplaceMechanism, KeyedPrivatizer
    >>> mech = DiscreteLaplaceMechanism(epsilon=0.5, sensitivity=1.0, resolution=0.25, dimension=2)
    >>> master = bytes(32)
    >>> release = KeyedPrivatizer(mechanism=mech, n_sensors=2, key=master).privatize_all([1.0, 2.0])
    >>> noise = keyed_noise(mech, derive_sensor_key(master, 0), sensor=0, nonce=release.nonces[0])
    >>> bool(release.values[0] == 1.0 + noise * 0.25)  # reading 1.0 is on the grid
    True
    """
    grid = _grid_mechanism(mechanism)
    key = _check_key("sensor_key", sensor_key)
    j = check_int("sensor", sensor, minimum=0, maximum=2**32 - 1)
    stream_key = hmac.digest(key, _STREAM_LABEL + j.to_bytes(4, "little") + _check_nonce(nonce), "sha256")
    return grid.sample_noise(1, _KeystreamIntegers(stream_key))[0]


@dataclass(frozen=True)
class KeyedRelease:
    """What a keyed release publishes: the noisy values and the public nonces that index their noise.

    Attributes
    ----------
    values : numpy.ndarray
        Noisy readings on the grid: a 0-d array for one reading, ``(m,)`` for one time step, ``(k, m)``.
    sensors : tuple of int
        The sensor of each column (one entry for a single reading).
    nonces : tuple of bytes
        One fresh 16-byte nonce per row (one for a single reading or a single time step).

    Examples
    --------
    Returned by :meth:`KeyedPrivatizer.privatize_all`:

    >>> from dpcloak.privacy import DiscreteLaplaceMechanism
    >>> mech = DiscreteLaplaceMechanism(epsilon=0.5, sensitivity=1.0, resolution=0.25, dimension=2)
    >>> release = KeyedPrivatizer(mechanism=mech, n_sensors=2, key=bytes(32)).privatize_all([1.0, 2.0])
    >>> release.values.shape, release.sensors, len(release.nonces), len(release.nonces[0])
    ((2,), (0, 1), 1, 16)
    """

    values: NDArray[np.float64]
    sensors: tuple[int, ...]
    nonces: tuple[bytes, ...]


class KeyedPrivatizer(_Accounted):
    """Per-sensor privatisation with keyed pseudo-random exact noise and a backdoor for the key holder.

    McMillan's thesis §7.2 (Corollary 7.5): the noise is a deterministic function of a secret key, the sensor
    and a public per-release nonce (module docstring), so :meth:`remove_noise` with the same key
    recovers the readings rounded to the grid.

    Parameters
    ----------
    mechanism : DiscreteGaussianMechanism or DiscreteLaplaceMechanism
        An exact grid mechanism with ``dimension ≥ n_sensors``; continuous mechanisms are refused.
    n_sensors : int
        Number of sensors m.
    key : bytes
        32-byte master key (``secrets.token_bytes(32)``); keep it secret.
    epsilon_budget, delta_budget, ledger, accountant
        The accountant charged before every release (see :class:`SensorPrivatizer`).

    Privacy guarantee
    -----------------
    Computational DP (SIM-CDP, McMillan's thesis Definition 7.4; Mironov, Pandey, Reingold & Vadhan 2009)
    against adversaries without the key who cannot distinguish ChaCha20/HMAC-SHA256 from random: each
    release is the mechanism's exact integer-noise release (the integers driving the exact sampler
    are uniform by rejection and never truncated), fresh 128-bit nonces make noise reuse negligible
    (module docstring), and :meth:`guarantee` composes the releases charged so far. None at all
    against the key holder (by design).

    Examples
    --------
    The key holder removes the noise exactly (readings rounded to the grid); nobody else can:

    >>> from dpcloak.privacy import DiscreteLaplaceMechanism
    >>> mech = DiscreteLaplaceMechanism(epsilon=0.5, sensitivity=1.0, resolution=0.25, dimension=2)
    >>> kp = KeyedPrivatizer(mechanism=mech, n_sensors=2, key=bytes(32))  # use secrets.token_bytes(32)
    >>> release = kp.privatize_all([1.0, 2.1])
    >>> kp.remove_noise(release).tolist()  # 2.1 rounded to the grid 0.25·ℤ
    [1.0, 2.0]
    >>> kp.noise(sensor=0, nonce=bytes(16)) == kp.noise(sensor=0, nonce=bytes(16))  # keyed, not random
    True

    >>> len(kp.sensor_key(0)), kp.sensor_key(0) != kp.sensor_key(1)  # one derived key per sensor
    (32, True)
    """

    def __init__(self, *, mechanism: Any, n_sensors: int, key: bytes, epsilon_budget: float | None = None,
                 delta_budget: float | None = None, ledger: str | PathLike[str] | None = None,
                 accountant: str = "closed") -> None:
        self._grid = _grid_mechanism(mechanism)
        self.mechanism = mechanism
        self.n_sensors = check_int("n_sensors", n_sensors, minimum=1)
        _check_dimension(mechanism, self.n_sensors)
        self._key = _check_key("key", key)
        self._sensor_keys = [derive_sensor_key(self._key, j) for j in range(self.n_sensors)]
        self._set_accountant(epsilon_budget, delta_budget, ledger, accountant, required=True)

    def _sensor(self, sensor: int) -> int:
        return check_int("sensor", sensor, minimum=0, maximum=self.n_sensors - 1)

    def sensor_key(self, sensor: int) -> bytes:
        """The key to provision sensor ``sensor`` with (it needs no other secret)."""
        return self._sensor_keys[self._sensor(sensor)]

    def noise(self, *, sensor: int, nonce: bytes) -> float:
        """The noise of ``sensor`` in the release with ``nonce``, in reading units (deterministic given the key)."""
        j = self._sensor(sensor)
        return keyed_noise(self.mechanism, self._sensor_keys[j], sensor=j, nonce=nonce) * self._grid.resolution

    def _noise_block(self, sensors: tuple[int, ...], nonces: tuple[bytes, ...]) -> NDArray[np.float64]:
        return np.array([[keyed_noise(self.mechanism, self._sensor_keys[j], sensor=j, nonce=r) for j in sensors]
                         for r in nonces], dtype=float)

    def _release(self, values: NDArray[np.float64], sensors: tuple[int, ...]) -> KeyedRelease:
        idx = self._grid.to_grid(values).reshape(-1, len(sensors))  # exact rounding; refuses huge readings
        self._charge(idx.shape[0])
        nonces = tuple(secrets.token_bytes(NONCE_BYTES) for _ in range(idx.shape[0]))
        noisy = (idx + self._noise_block(sensors, nonces)) * self._grid.resolution  # integers times the grid step
        noisy.flags.writeable = False
        return KeyedRelease(values=noisy.reshape(values.shape), sensors=sensors, nonces=nonces)

    def privatize(self, reading: float, *, sensor: int) -> KeyedRelease:
        """What sensor ``sensor`` sends for one reading (one release, one fresh nonce).

        Privacy guarantee
        -----------------
        Charged first. The reading is rounded to the grid and exact integer noise is added, drawn by
        the exact sampler from a keyed ChaCha20 stream unique to (sensor, fresh 128-bit nonce), with
        no truncation; the value and the nonce are published. Computational DP against adversaries
        without the key (class docstring).
        """
        x = check_values(reading, name="reading")
        if x.ndim != 0:
            raise InvalidParameterError(f"reading must be a single number, got an array of shape {x.shape}",
                                        parameter="reading")
        return self._release(x, (self._sensor(sensor),))

    def privatize_all(self, readings: ArrayLike) -> KeyedRelease:
        """All sensors at once: each row of a ``(k, m)`` block (or one ``(m,)`` row) is a release with its own nonce.

        Privacy guarantee
        -----------------
        The k rows are charged first (all or nothing); each row is one release of the vector mechanism
        with keyed exact noise under its own fresh nonce (as :meth:`privatize`, for every sensor).
        """
        y = check_values(readings, name="readings")
        if y.ndim not in (1, 2) or y.shape[-1] != self.n_sensors:
            raise InvalidParameterError(f"readings must have shape ({self.n_sensors},) or (k, {self.n_sensors}), "
                                        f"got {y.shape}", parameter="readings")
        return self._release(y, tuple(range(self.n_sensors)))

    def remove_noise(self, release: KeyedRelease) -> NDArray[np.float64]:
        """Backdoor: the readings rounded to the grid, exactly, from a :class:`KeyedRelease`."""
        if not isinstance(release, KeyedRelease):
            raise InvalidParameterError(f"release must be a KeyedRelease, got {type(release).__name__}",
                                        parameter="release", allowed="KeyedRelease", got=type(release).__name__)
        values = check_values(release.values, name="release values")
        sensors = tuple(self._sensor(j) for j in release.sensors)
        if not sensors or values.size != len(release.nonces) * len(sensors):
            raise InvalidParameterError(f"release has {values.size} values for {len(release.nonces)} nonce(s) and "
                                        f"{len(sensors)} sensor(s)", parameter="release", got=values.size)
        block = self._grid.to_grid(values).reshape(len(release.nonces), len(sensors))
        clean = (block - self._noise_block(sensors, release.nonces)) * self._grid.resolution
        return clean.reshape(values.shape)

    def release_guarantee(self) -> PrivacyGuarantee:
        """Guarantee of one release, as computational DP against adversaries without the key."""
        return self._keyed(self.mechanism.guarantee())

    def guarantee(self) -> PrivacyGuarantee:
        """Composed computational guarantee of every release charged so far."""
        one = self.release_guarantee()
        return self._composed(kind=one.kind, mechanism=one.mechanism, source=one.source)

    @staticmethod
    def _keyed(g: PrivacyGuarantee) -> PrivacyGuarantee:
        return replace(
            g,
            kind=f"{g.kind.replace('-DP', '')}-SIM-CDP (computational, keyed ChaCha20 noise)",
            mechanism=f"{g.mechanism}; exact integer sampler driven by a keyed ChaCha20 stream, fresh 128-bit nonce "
                      "per release",
            source="McMillan's thesis §7.2, Definition 7.4 and Corollary 7.5 (Mironov et al. 2009); " + g.source,
        )

    def __repr__(self) -> str:
        return (f"KeyedPrivatizer(mechanism={self.mechanism!r}, n_sensors={self.n_sensors}, key=<secret>, "
                f"accountant={self.accountant!r})")

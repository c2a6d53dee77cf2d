r"""The deployment: the fixed task parameters every report is bound to, and its secrets.

A deployment plays the role of a DAP *task* (draft-ietf-ppm-dap, §4): its parameters are fixed
when it is created and every report carries the deployment id and the **configuration
fingerprint** (SHA-256 of the canonical JSON of everything that determines the privacy guarantee:
the sensor network's own fingerprint, the window length, the budget and its period). A report made
for another deployment, or for a weaker configuration, does not verify.

Time is rounded to the declared precision: a report names only the index of its window
``w = ⌊(t − start) / window_seconds⌋``, never a timestamp.

Secrets (all 32-byte HMAC-SHA256 outputs, hex on disk):

* the **master key** of the collector (``collector.key``);
* the key of sensor ``j``: ``HMAC(master, "dpcloak/service/report-key/v1" ‖ 0 ‖ deployment id ‖ 0 ‖ j)``,
  and for its credential generation ``g ≥ 1`` (after ``g`` re-provisionings, each of which retires
  the previous credential) the same message followed by ``0 ‖ g``. The label differs from the
  keyed privatizer's (:func:`dpcloak.privacy.local.derive_sensor_key`),
  so a report key can never double as a noise key;
* the **analyst token** ``HMAC(master, "dpcloak/service/analyst/v1" ‖ 0 ‖ deployment id)``, which
  the dashboard and the export need and no sensor has.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import os
import secrets
import uuid
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from dpcloak._files import owner_only
from dpcloak._validation import check_int, check_real
from dpcloak.errors import InvalidParameterError
from dpcloak.sensors import SensorNetwork

__all__ = [
    "Deployment",
    "SensorCredential",
    "canonical_json",
    "sensor_key",
    "analyst_token",
    "write_deployment",
    "load_deployment",
    "load_credential",
    "load_master_key",
    "load_generations",
    "reprovision",
]

KEY_BYTES = 32
_REPORT_KEY_LABEL = b"dpcloak/service/report-key/v1"
_ANALYST_LABEL = b"dpcloak/service/analyst/v1"
DEPLOYMENT_FILE = "deployment.json"
MASTER_KEY_FILE = "collector.key"
ANALYST_FILE = "analyst.token"
SENSOR_DIR = "sensors"
GENERATIONS_FILE = "generations.json"


def canonical_json(value: Any) -> bytes:
    """Canonical JSON bytes: sorted keys, no whitespace, UTF-8, finite numbers only.

    Examples
    --------
    >>> canonical_json({"b": 1, "a": [1.5, "é"]})
    b'{"a":[1.5,"\xc3\xa9"],"b":1}'
    >>> canonical_json({"x": float("nan")})
    Traceback (most recent call last):
        ...
    ValueError: Out of range float values are not JSON compliant
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def _check_master(master_key: bytes) -> bytes:
    if not isinstance(master_key, bytes) or len(master_key) != KEY_BYTES:
        raise InvalidParameterError(f"the collector master key must be {KEY_BYTES} bytes, "
                                    f"got {len(master_key) if isinstance(master_key, bytes) else type(master_key)}")
    return master_key


def sensor_key(master_key: bytes, *, deployment_id: str, sensor: int, generation: int = 0) -> bytes:
    """The report-signing key of sensor ``sensor``'s credential generation ``generation`` (32 bytes; module docstring).

    Examples
    --------
    >>> k = sensor_key(bytes(32), deployment_id="abc123", sensor=0)
    >>> len(k), k == sensor_key(bytes(32), deployment_id="abc123", sensor=1)
    (32, False)
    >>> k == sensor_key(bytes(32), deployment_id="abc123", sensor=0, generation=1)  # a re-provisioned credential
    False
    """
    msg = _REPORT_KEY_LABEL + b"\0" + deployment_id.encode() + b"\0" + str(int(sensor)).encode()
    if generation:
        msg += b"\0" + str(int(generation)).encode()
    return hmac.digest(_check_master(master_key), msg, "sha256")


def analyst_token(master_key: bytes, *, deployment_id: str) -> str:
    """The analyst's bearer token (hex), needed by the dashboard data and the export.

    Examples
    --------
    >>> t = analyst_token(bytes(32), deployment_id="abc123")
    >>> len(t), t == analyst_token(bytes(32), deployment_id="abc123"), t == analyst_token(bytes(32), deployment_id="x")
    (64, True, False)
    """
    return hmac.digest(_check_master(master_key), _ANALYST_LABEL + b"\0" + deployment_id.encode(), "sha256").hex()


@dataclass(frozen=True)
class Deployment:
    """A deployment's public, fixed parameters (the DAP task).

    Parameters
    ----------
    deployment_id : str
        Random identifier (UUID4 hex) of the deployment.
    network : dict
        ``SensorNetwork.to_dict()`` of the sensor network.
    window_seconds : float
        Time precision: length of one reporting window, > 0 seconds.
    start : float
        Unix time at which window 0 starts.
    period_windows : int
        Length of a budget period in windows (≥ 1).
    grace_seconds : float
        How long after its end a window still accepts late reports before it is closed and recovered.

    Privacy guarantee
    -----------------
    One window's readings of all sensors are one release of the network's mechanism (calibrated
    to Δ2 of the whole vector): (``network.epsilon``, ``network.delta``)-DP. The network's budget
    ``(epsilon_total, delta_total)`` is spent **per period**: within a period every sensor sends at
    most ``releases_per_period = min(period_windows, network.max_releases())`` readings. Each window
    is a Gaussian release of the sub-vector of the sensors present, so for any fixed pair of
    neighbouring count histories the squared sensitivities summed over the period are at most
    ``releases_per_period · Δ2²`` (every coordinate appears at most that often), and the period's
    releases are ``network.guarantee(releases_per_period)`` — within the budget (pattern-level
    privacy within a period, Gilbert & McMillan's slides "Continual Monitoring"). Periods compose (ε and δ add up).

    Examples
    --------
    >>> from dpcloak.service.examples import two_sensor_deployment
    >>> deployment = two_sensor_deployment()
    >>> deployment.window_at(125.0), deployment.window_end(2), deployment.period_of(25)
    (2, 180.0, 2)
    >>> eps, delta = deployment.guarantee(1)  # one reading per sensor
    >>> round(eps, 4), delta
    (0.884, 1e-05)
    >>> deployment.network_for_period(0).n_sensors
    2
    """

    deployment_id: str
    network: dict[str, Any]
    window_seconds: float
    start: float
    period_windows: int
    grace_seconds: float = 5.0
    version: int = field(default=1)

    def __post_init__(self) -> None:
        # normalised types: the fingerprint must not depend on 60 vs 60.0
        for name, value in (("window_seconds", check_real("window_seconds", self.window_seconds, low=0.0)),
                            ("start", check_real("start", self.start)),
                            ("period_windows", check_int("period_windows", self.period_windows, minimum=1)),
                            ("grace_seconds", check_real("grace_seconds", self.grace_seconds, low=0.0,
                                                         low_inclusive=True))):
            object.__setattr__(self, name, value)
        if not isinstance(self.deployment_id, str) or not self.deployment_id.isalnum():
            raise InvalidParameterError(f"deployment_id must be a non-empty alphanumeric string, "
                                        f"got {self.deployment_id!r}")

    @cached_property
    def sensor_network(self) -> SensorNetwork:
        """The :class:`~dpcloak.sensors.SensorNetwork` the deployment runs."""
        return SensorNetwork.from_dict(self.network)

    @property
    def n_sensors(self) -> int:
        return int(self.sensor_network.n_sensors)

    @cached_property
    def releases_per_period(self) -> int:
        """Readings a sensor may release per period: ``min(period_windows, network.max_releases())``."""
        return min(self.period_windows, int(self.sensor_network.max_releases()))

    def network_for_period(self, period: int) -> SensorNetwork:
        """A network whose in-memory release counter belongs to budget period ``period`` (for sensor nodes).

        ``SensorNetwork.privatize_reading`` charges an in-process counter against the network's budget;
        the budget is per period here, so each period gets a fresh network object (the durable count
        is the sensor's ledger, :mod:`dpcloak.service.ledger`).
        """
        current = self.__dict__.get("_period_network")
        if current is None or current[0] != period:
            current = (period, SensorNetwork.from_dict(self.network))
            self.__dict__["_period_network"] = current
        return current[1]

    def public_dict(self) -> dict[str, Any]:
        """Everything that determines the guarantee (what the fingerprint hashes), plus the id."""
        return {
            "deployment_id": self.deployment_id,
            "network": self.network,
            "network_fingerprint": self.sensor_network.fingerprint(),
            "window_seconds": self.window_seconds,
            "start": self.start,
            "period_windows": self.period_windows,
            "grace_seconds": self.grace_seconds,
            "version": self.version,
        }

    @cached_property
    def fingerprint(self) -> str:
        """Hex SHA-256 of the canonical JSON of the privacy-determining configuration."""
        body = {k: v for k, v in self.public_dict().items() if k not in ("deployment_id", "network", "grace_seconds")}
        return hashlib.sha256(canonical_json(body)).hexdigest()

    def window_at(self, t: float) -> int:
        """Index of the window containing Unix time ``t`` (negative before the start)."""
        return math.floor((t - self.start) / self.window_seconds)

    def window_end(self, window: int) -> float:
        """Unix time at which window ``window`` ends."""
        return self.start + (window + 1) * self.window_seconds

    def period_of(self, window: int) -> int:
        """Budget period of a window."""
        return window // self.period_windows

    def guarantee(self, releases: int) -> tuple[float, float]:
        """Composed (ε, δ_budget) of ``releases`` releases of one sensor in a period (``network.guarantee``)."""
        g = self.sensor_network.guarantee(max(0, int(releases)))
        return (float(g.epsilon), float(g.delta))

    @classmethod
    def create(cls, *, network: SensorNetwork, window_seconds: float, period_windows: int, start: float,
               grace_seconds: float = 5.0) -> Deployment:
        """A new deployment with a fresh random id; the network's budget is spent per period."""
        return cls(deployment_id=uuid.uuid4().hex, network=network.to_dict(), window_seconds=window_seconds,
                   start=start, period_windows=period_windows, grace_seconds=grace_seconds)

    @classmethod
    def from_public_dict(cls, data: dict[str, Any]) -> Deployment:
        """Inverse of :meth:`public_dict`; refuses a file whose network fingerprint does not match."""
        try:
            dep = cls(deployment_id=data["deployment_id"], network=data["network"],
                      window_seconds=float(data["window_seconds"]), start=float(data["start"]),
                      period_windows=int(data["period_windows"]),
                      grace_seconds=float(data["grace_seconds"]), version=int(data["version"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidParameterError(f"deployment file is malformed: {exc!r}") from None
        if dep.sensor_network.fingerprint() != data.get("network_fingerprint"):
            raise InvalidParameterError("deployment file: network_fingerprint does not match the network it holds")
        return dep


@dataclass(frozen=True)
class SensorCredential:
    """What sensor ``sensor`` is provisioned with: its id, its key and the deployment it belongs to.

    ``generation`` counts the re-provisionings of the sensor (each retires the previous credential);
    ``path`` is the file it was loaded from, if any — the sensor's ledger records its head there
    (:mod:`dpcloak.service.ledger`).

    Examples
    --------
    >>> from dpcloak.service.examples import two_sensor_deployment
    >>> deployment = two_sensor_deployment()
    >>> import tempfile
    >>> from pathlib import Path
    >>> tmp = tempfile.TemporaryDirectory()
    >>> directory = Path(tmp.name)
    >>> _ = write_deployment(directory, deployment, master_key=bytes(32))
    >>> cred = load_credential(directory / "sensors" / "sensor-1.json")
    >>> isinstance(cred, SensorCredential), cred.sensor, cred.deployment_id
    (True, 1, 'abc123')
    >>> cred.key == sensor_key(bytes(32), deployment_id="abc123", sensor=1)
    True
    >>> tmp.cleanup()
    """

    deployment_id: str
    fingerprint: str
    sensor: int
    key: bytes = field(repr=False)
    generation: int = 0
    path: Path | None = field(default=None, compare=False, repr=False)


def _write_secret(path: Path, text: str) -> None:
    """Write ``path`` with mode 0600, atomically and durably (a crash leaves the old or the new file)."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _credential_json(deployment: Deployment, key: bytes, sensor: int, generation: int) -> str:
    cred: dict[str, Any] = {"deployment_id": deployment.deployment_id, "fingerprint": deployment.fingerprint,
                            "sensor": sensor, "generation": generation,
                            "key": sensor_key(key, deployment_id=deployment.deployment_id, sensor=sensor,
                                              generation=generation).hex()}
    return json.dumps(cred, indent=2)


def write_deployment(directory: Path, deployment: Deployment, *, master_key: bytes | None = None) -> Path:
    """Write ``deployment.json``, ``collector.key``, ``analyst.token`` and ``sensors/sensor-<j>.json``.

    Secrets are written with mode 0600. Refuses a directory that already holds a deployment.

    Examples
    --------
    >>> from dpcloak.service.examples import two_sensor_deployment
    >>> deployment = two_sensor_deployment()
    >>> import tempfile
    >>> from pathlib import Path
    >>> tmp = tempfile.TemporaryDirectory()
    >>> directory = Path(tmp.name)
    >>> write_deployment(directory, deployment).name
    'deployment.json'
    >>> sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file())
    ['analyst.token', 'collector.key', 'deployment.json', 'sensors/sensor-0.json', 'sensors/sensor-1.json']
    >>> oct((directory / "collector.key").stat().st_mode & 0o777)
    '0o600'
    >>> write_deployment(directory, deployment)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidParameterError: ... already holds a deployment (deployment.json); choose another
    >>> tmp.cleanup()
    """
    directory = Path(directory)
    if (directory / DEPLOYMENT_FILE).exists():
        raise InvalidParameterError(f"{directory} already holds a deployment ({DEPLOYMENT_FILE}); choose another")
    key = secrets.token_bytes(KEY_BYTES) if master_key is None else _check_master(master_key)
    (directory / SENSOR_DIR).mkdir(parents=True, exist_ok=True)
    (directory / DEPLOYMENT_FILE).write_text(json.dumps(deployment.public_dict(), indent=2, sort_keys=True) + "\n")
    _write_secret(directory / MASTER_KEY_FILE, key.hex())
    _write_secret(directory / ANALYST_FILE, analyst_token(key, deployment_id=deployment.deployment_id))
    for j in range(deployment.n_sensors):
        _write_secret(directory / SENSOR_DIR / f"sensor-{j}.json", _credential_json(deployment, key, j, 0))
    return directory / DEPLOYMENT_FILE


def load_generations(directory: Path) -> dict[int, int]:
    """Each re-provisioned sensor's current credential generation (``generations.json``; absent: all 0).

    Every generation below a sensor's current one is retired: the collector refuses its reports.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> tmp = tempfile.TemporaryDirectory()
    >>> load_generations(Path(tmp.name))
    {}
    >>> tmp.cleanup()
    """
    path = Path(directory) / GENERATIONS_FILE
    if not path.exists():
        return {}
    data = _read_json(path, "credential generations")
    out: dict[int, int] = {}
    for sensor, generation in data.items():
        if not (sensor.isdigit() and isinstance(generation, int) and not isinstance(generation, bool)
                and generation >= 0):
            raise InvalidParameterError(f"credential generations file {path}: each entry must map a sensor id to a "
                                        f"non-negative integer, got {sensor!r}: {generation!r}")
        out[int(sensor)] = generation
    return out


def reprovision(directory: Path, *, sensor: int) -> SensorCredential:
    """Retire sensor ``sensor``'s credential and write its next generation to ``sensors/sensor-<j>.json``.

    The way back for a sensor whose ledger is lost, restored or in doubt, or whose credential was
    copied: the new credential has a new key (:func:`sensor_key` with the next generation) and no
    ledger; ``generations.json`` records the generation, and the collector refuses every older one
    (at its next start, or at the new credential's first valid report, whichever comes first).

    Examples
    --------
    >>> from dpcloak.service.examples import two_sensor_deployment
    >>> import tempfile
    >>> from pathlib import Path
    >>> tmp = tempfile.TemporaryDirectory()
    >>> directory = Path(tmp.name)
    >>> _ = write_deployment(directory, two_sensor_deployment(), master_key=bytes(32))
    >>> cred = reprovision(directory, sensor=1)
    >>> cred.generation, cred.key == sensor_key(bytes(32), deployment_id="abc123", sensor=1, generation=1)
    (1, True)
    >>> load_generations(directory), load_credential(directory / "sensors" / "sensor-1.json").generation
    ({1: 1}, 1)
    >>> tmp.cleanup()
    """
    directory = Path(directory)
    deployment = load_deployment(directory)
    key = load_master_key(directory)
    j = check_int("sensor", sensor, minimum=0)
    if j >= deployment.n_sensors:
        raise InvalidParameterError(f"sensor must be in [0, {deployment.n_sensors - 1}], got {sensor}")
    generations = load_generations(directory)
    generations[j] = generations.get(j, 0) + 1
    _write_secret(directory / GENERATIONS_FILE, json.dumps({str(s): g for s, g in sorted(generations.items())}))
    path = directory / SENSOR_DIR / f"sensor-{j}.json"
    _write_secret(path, _credential_json(deployment, key, j, generations[j]))
    return load_credential(path)


def _read_json(path: Path, what: str) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise InvalidParameterError(f"{what} file not found: {path}") from None
    except (OSError, ValueError) as exc:
        raise InvalidParameterError(f"{what} file {path} is not readable JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InvalidParameterError(f"{what} file {path} must hold a JSON object")
    return data


def load_deployment(path: Path) -> Deployment:
    """Read a deployment from ``deployment.json`` or the directory holding it.

    Examples
    --------
    >>> from dpcloak.service.examples import two_sensor_deployment
    >>> deployment = two_sensor_deployment()
    >>> import tempfile
    >>> from pathlib import Path
    >>> tmp = tempfile.TemporaryDirectory()
    >>> directory = Path(tmp.name)
    >>> _ = write_deployment(directory, deployment)
    >>> load_deployment(directory) == deployment, load_deployment(directory / "deployment.json").deployment_id
    (True, 'abc123')
    >>> tmp.cleanup()
    """
    p = Path(path)
    return Deployment.from_public_dict(_read_json(p / DEPLOYMENT_FILE if p.is_dir() else p, "deployment"))


def load_master_key(directory: Path) -> bytes:
    """The collector's master key from ``collector.key`` in the deployment directory.

    Examples
    --------
    >>> from dpcloak.service.examples import two_sensor_deployment
    >>> deployment = two_sensor_deployment()
    >>> import tempfile
    >>> from pathlib import Path
    >>> tmp = tempfile.TemporaryDirectory()
    >>> directory = Path(tmp.name)
    >>> _ = write_deployment(directory, deployment, master_key=bytes(range(32)))
    >>> load_master_key(directory) == bytes(range(32))
    True
    >>> tmp.cleanup()
    """
    path = Path(directory) / MASTER_KEY_FILE
    owner_only(path)  # a key copied in with mode 0644 is made 0600 (with a warning in the log)
    try:
        key = bytes.fromhex(path.read_text().strip())
    except FileNotFoundError:
        raise InvalidParameterError(f"collector key file not found: {path}") from None
    except ValueError:
        raise InvalidParameterError(f"collector key file {path} must hold {KEY_BYTES} bytes in hex") from None
    return _check_master(key)


def load_credential(path: Path) -> SensorCredential:
    """A sensor's credential file (``sensors/sensor-<j>.json``).

    Examples
    --------
    >>> from dpcloak.service.examples import two_sensor_deployment
    >>> deployment = two_sensor_deployment()
    >>> import tempfile
    >>> from pathlib import Path
    >>> tmp = tempfile.TemporaryDirectory()
    >>> directory = Path(tmp.name)
    >>> _ = write_deployment(directory, deployment, master_key=bytes(32))
    >>> cred = load_credential(directory / "sensors" / "sensor-0.json")
    >>> cred.sensor, cred.key == sensor_key(bytes(32), deployment_id="abc123", sensor=0)
    (0, True)
    >>> tmp.cleanup()
    """
    data = _read_json(Path(path), "sensor credential")
    try:
        generation = data.get("generation", 0)
        if isinstance(generation, bool) or not isinstance(generation, int) or generation < 0:
            raise ValueError(f"generation must be a non-negative integer, got {generation!r}")
        return SensorCredential(deployment_id=str(data["deployment_id"]), fingerprint=str(data["fingerprint"]),
                                sensor=int(data["sensor"]), key=bytes.fromhex(data["key"]), generation=generation,
                                path=Path(path))
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidParameterError(f"sensor credential file {path} is malformed: {exc!r}") from None

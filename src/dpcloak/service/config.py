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
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from dpcloak._files import owner_only
from dpcloak._validation import check_int, check_probability, check_real
from dpcloak.errors import InvalidFileError, InvalidParameterError
from dpcloak.sensors import SensorNetwork
from dpcloak.sensors.config import config_fingerprint, release_spec_from_dict
from dpcloak.sensors.release import ReleaseSpec

if TYPE_CHECKING:
    from dpcloak.privacy.continual import ContinualCounter, ContinualCountingEvent

__all__ = [
    "Deployment",
    "PolicyStatement",
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
    "every_window",
    "schedule_words",
]

KEY_BYTES = 32
_REPORT_KEY_LABEL = b"dpcloak/service/report-key/v1"
_ANALYST_LABEL = b"dpcloak/service/analyst/v1"
DEPLOYMENT_FILE = "deployment.json"
MASTER_KEY_FILE = "collector.key"
ANALYST_FILE = "analyst.token"
SENSOR_DIR = "sensors"
GENERATIONS_FILE = "generations.json"
MIN_WINDOW_SECONDS = 1e-3
"""Shortest window (seconds): window indices of a century of 1 ms windows stay below 2^42, far inside the
reports' and the database's 2^62 (a window of 1e-300 s numbered the first window past any integer type)."""

DEPLOYMENT_VERSION = 3
"""Version of the deployment format: 3 binds the network's Δ2 into the fingerprint (a node calibrates to it); 2
declared the release policy; version 1 counted releases per sensor."""
_EARLIER = ("version 1 counted releases per sensor, which understates the composition when sensors report in "
            "different windows; version 2's fingerprint did not cover the Δ2 a sensor node calibrates its noise to")


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
                                    f"got {len(master_key) if isinstance(master_key, bytes) else type(master_key)}",
                                    parameter="master_key", allowed=f"{KEY_BYTES} bytes")
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


def schedule_words(deployment: Deployment) -> str:
    """The public release schedule in words: ``"every 3rd window"``, or for a burst schedule (a declared stride that
    fills the sliding window) ``"every window until 4 fill the sliding window, then none (skipped for budget) until it
    renews"``.

    Examples
    --------
    >>> from dpcloak.service.examples import two_sensor_deployment
    >>> schedule_words(two_sensor_deployment(policy_releases=4)), schedule_words(two_sensor_deployment())
    ('every 3rd window', 'every window')
    """
    stride, _, _, fills = deployment._cycle()
    if not fills:
        return every_window(stride)
    return (f"{every_window(stride)} until {deployment.releases_per_period} fill the sliding window, then none "
            "(skipped for budget) until it renews")


def every_window(stride: int) -> str:
    """``"every window"``, ``"every 2nd window"``, ``"every 12th window"``: the release schedule in words.

    Examples
    --------
    >>> every_window(1), every_window(2), every_window(12), every_window(23)
    ('every window', 'every 2nd window', 'every 12th window', 'every 23rd window')
    """
    return "every window" if stride == 1 else f"every {_ordinal(stride)} window"


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


CONTINUAL_FIELDS = ("horizon", "epsilon", "delta")
"""The keys of a deployment's ``continual`` declaration: the counter's horizon (releases per sensor) and its (ε, δ)
for one count of one window of one sensor's stream."""


def _check_continual(value: Any, spec: ReleaseSpec) -> dict[str, Any]:
    """A validated ``continual`` declaration (counts networks only; the counter is built to check ε and δ)."""
    from dpcloak.privacy.continual import MAX_FACTORIZATION_HORIZON, ContinualCounter

    if not isinstance(value, dict) or sorted(value) != sorted(CONTINUAL_FIELDS):
        raise InvalidParameterError(f"continual must be an object with exactly the keys {', '.join(CONTINUAL_FIELDS)}, "
                                    f"got {value!r}", parameter="continual", allowed=", ".join(CONTINUAL_FIELDS),
                                    got=value)
    if spec.measurement != "counts":
        raise InvalidParameterError(f"continual needs a counts network (running totals of counts), got measurement="
                                    f"{spec.measurement!r}", parameter="continual", allowed="counts",
                                    got=spec.measurement)
    out: dict[str, Any] = {
        "horizon": check_int("continual horizon", value["horizon"], minimum=1, maximum=MAX_FACTORIZATION_HORIZON),
        "epsilon": check_real("continual epsilon", value["epsilon"], low=0.0),
        "delta": check_probability("continual delta", value["delta"])}
    ContinualCounter(horizon=out["horizon"], epsilon=out["epsilon"], delta=out["delta"])  # refuses what cannot fit
    return out


def _check_areas(value: Any, n_sensors: int) -> dict[str, list[int]]:
    """Validated named groups of sensors: non-empty names, each a non-empty list of distinct sensor indices."""
    if not isinstance(value, dict) or not value:
        raise InvalidParameterError(f"areas must be a non-empty object mapping names to lists of sensors, got "
                                    f"{value!r}", parameter="areas", got=value)
    out: dict[str, list[int]] = {}
    for name, sensors in value.items():
        if not isinstance(name, str) or not name.strip() or len(name) > 64:
            raise InvalidParameterError(f"area names must be non-empty strings of at most 64 characters, got "
                                        f"{name!r}", parameter="areas", got=name)
        if (not isinstance(sensors, list) or not sensors
                or len({check_int(f"areas[{name!r}] sensor", j, minimum=0, maximum=n_sensors - 1)
                        for j in sensors}) != len(sensors)):
            raise InvalidParameterError(f"area {name!r} must list distinct sensors in [0, {n_sensors - 1}], got "
                                        f"{sensors!r}", parameter="areas", got=sensors)
        out[name] = [int(j) for j in sensors]
    return out


@dataclass(frozen=True)
class PolicyStatement:
    """What a deployment's release policy guarantees, level by level (:meth:`Deployment.policy_statement`).

    Attributes
    ----------
    window : (float, float)
        (ε, δ) of one window's readings of all sensors (event level).
    span_windows, span_releases, stride : int
        Any ``span_windows`` consecutive windows hold at most ``span_releases`` release windows (every
        ``stride``-th window).
    span : (float, float)
        Their composition (ε, δ) at the budget's δ.
    lifetime_releases : int or None
        The lifetime cap on release windows (``None``: no cap).
    lifetime : (float, float) or None
        The composition of the lifetime's release windows.

    Examples
    --------
    >>> statement = PolicyStatement(window=(1.0, 1e-6), span_windows=10, span_releases=4, stride=3,
    ...                             span=(1.887, 1e-5), lifetime_releases=None, lifetime=None)
    >>> statement.span_releases, statement.lifetime
    (4, None)
    """

    window: tuple[float, float]
    span_windows: int
    span_releases: int
    stride: int
    span: tuple[float, float]
    lifetime_releases: int | None
    lifetime: tuple[float, float] | None


@dataclass(frozen=True)
class Deployment:
    r"""A deployment's public, fixed parameters (the DAP task), with its long-run release policy.

    Parameters
    ----------
    deployment_id : str
        Random identifier (UUID4 hex) of the deployment.
    network : dict
        ``SensorNetwork.to_dict()`` of the sensor network.
    window_seconds : float
        Time precision: length of one reporting window, at least :data:`MIN_WINDOW_SECONDS` (1 ms; a shorter
        window numbers the windows of a few years past what the collector's database and the reports hold).
    start : float
        Unix time at which window 0 starts.
    period_windows : int
        W ≥ 1: the policy's sliding window ("any W consecutive windows").
    grace_seconds : float
        How long after its end a window still accepts late reports before it is closed and recovered.
    policy_releases : int, optional
        k: release windows in any W consecutive windows, 1 ≤ k ≤ min(W, ``network.max_releases()``)
        (the network's budget bounds the composition of k releases). Default: that largest k.
    lifetime_releases : int, optional
        L ≥ 1: release windows since the start, in all (default: no lifetime cap).
    stride : int, optional
        s ≥ 1: release windows are multiples of s (default ⌈W/k⌉: the k release windows spread evenly, so
        the sliding window never fills). A smaller s releases more often: the sliding window fills after
        k release windows, and then every sensor **skips for budget** until it renews (class docstring).
    clock_skew_seconds : float, optional
        How far ahead of real time (the collector's clock) a node's clock may run: no window is
        released, nor accepted by the collector, before ``window_start − clock_skew_seconds``
        (default: one window, ``window_seconds``).
    version : int
        :data:`DEPLOYMENT_VERSION` (earlier versions are refused: version 1 counted releases per sensor,
        version 2's fingerprint did not cover the network's Δ2).

    Privacy guarantee
    -----------------
    A window in which any sensor releases is one release of the network's mechanism on the
    sub-vector S of the sensors present, with noise calibrated to Δ2 of the whole vector; as
    Δ2(S) ≤ Δ2 (a sub-vector of a difference is no longer than the difference) it is
    (``network.epsilon``, ``network.delta``)-DP (event level: one window). The neighbouring relation
    is over count histories, so the adversary may pick a different worst pair in every window: the
    composition is charged per **release window** (one vector release at full Δ2 for every window in
    which anyone releases), never per sensor. Nodes cannot see each other, so the release windows
    are public. With the stride s (default ``⌈W/k⌉``), the cycle ``C = s·⌈W/s⌉`` (the smallest multiple
    of s that is at least W) and ``k' = min(k, C/s)`` release windows per cycle, window ``w`` is a release
    window iff ``w ≥ 0``, ``w mod s = 0``, ``w mod C < k'·s`` and fewer than L release windows come
    before it: a burst of k' release windows s apart at the start of every cycle. With the default
    stride ``k'·s ≥ C``, so every multiple of s releases (the even schedule). With a smaller stride the
    sliding window fills after k' release windows and the sensors skip for budget until the next cycle,
    when the burst's first window has left it (the sliding window renews). Any W consecutive windows hold
    at most k' ≤ k release windows: windows from two bursts c and c + 1 (the tail of burst c from its
    i-th, the head of burst c + 1 to its j-th) span ``C + (j − i)·s + 1 ≤ W`` windows, so j < i and
    they hold (k' − i) + (j + 1) ≤ k'; three bursts span more than C ≥ W. So they compose to at most k
    releases: ``guarantee(k)`` (k·ρ-zCDP, within the network's budget); the whole lifetime to
    ``guarantee(L)``. Each node releases at most once per window, in
    release windows only, in increasing windows no later than its clock (plus the skew); the
    collector refuses reports outside the schedule or from the future, and states the composition
    of the release windows in which reports actually arrived (:meth:`policy_statement`).

    Examples
    --------
    >>> from dpcloak.service.examples import two_sensor_deployment
    >>> deployment = two_sensor_deployment()
    >>> deployment.window_at(125.0), deployment.window_end(2), deployment.period_of(25)
    (2, 180.0, 2)
    >>> eps, delta = deployment.guarantee(1)  # one release window
    >>> round(eps, 4), delta
    (0.884, 1e-05)
    >>> deployment.release_spec.n_sensors, deployment.n_sensors
    (2, 2)

    A policy of 4 release windows in any 10: every third window releases, never more:

    >>> sparse = two_sensor_deployment(policy_releases=4, lifetime_releases=5)
    >>> sparse.release_stride, [w for w in range(20) if sparse.is_release_window(w)]
    (3, [0, 3, 6, 9, 12])
    >>> sparse.next_release_window(13) is None, sparse.next_release_window(4)  # lifetime cap: 5 in all
    (True, 6)

    The same policy with stride 1: the sliding window fills in 4 windows, then the sensors skip for budget
    until it renews (6 windows later):

    >>> burst = two_sensor_deployment(policy_releases=4, stride=1)
    >>> [w for w in range(20) if burst.is_release_window(w)], burst.releases_per_period
    ([0, 1, 2, 3, 10, 11, 12, 13], 4)
    >>> burst.budget_skip(5), burst.budget_skip(1), burst.next_release_window(5), burst.previous_release_window(9)
    (True, False, 10, 3)
    """

    deployment_id: str
    network: dict[str, Any]
    window_seconds: float
    start: float
    period_windows: int
    grace_seconds: float = 5.0
    policy_releases: int | None = None
    lifetime_releases: int | None = None
    clock_skew_seconds: float | None = None
    stride: int | None = None
    version: int = field(default=DEPLOYMENT_VERSION)
    continual: dict[str, Any] | None = None
    areas: dict[str, list[int]] | None = None

    def __post_init__(self) -> None:
        if self.version != DEPLOYMENT_VERSION:
            raise InvalidParameterError(
                f"deployment version must be {DEPLOYMENT_VERSION}, got {self.version!r}: {_EARLIER}; create the "
                "deployment again (dpcloak deploy init) and provision its sensors",
                parameter="version", allowed=str(DEPLOYMENT_VERSION), got=self.version)
        # normalised types: the fingerprint must not depend on 60 vs 60.0
        for name, value in (("window_seconds", check_real("window_seconds", self.window_seconds,
                                                          low=MIN_WINDOW_SECONDS, low_inclusive=True)),
                            ("start", check_real("start", self.start)),
                            ("period_windows", check_int("period_windows", self.period_windows, minimum=1)),
                            ("grace_seconds", check_real("grace_seconds", self.grace_seconds, low=0.0,
                                                         low_inclusive=True))):
            object.__setattr__(self, name, value)
        if not isinstance(self.deployment_id, str) or not self.deployment_id.isalnum():
            raise InvalidParameterError(f"deployment_id must be a non-empty alphanumeric string, "
                                        f"got {self.deployment_id!r}",
                                        parameter="deployment_id", allowed="non-empty alphanumeric",
                                        got=self.deployment_id)
        spec = self.release_spec
        if self.continual is not None:  # the counters release instead of the network's per-window mechanism
            object.__setattr__(self, "continual", _check_continual(self.continual, spec))
        most = self.period_windows if self.continual is not None else min(self.period_windows, spec.max_releases())
        k = most if self.policy_releases is None else check_int("policy_releases", self.policy_releases, minimum=1)
        if k > most:
            raise InvalidParameterError(
                f"policy_releases must be in [1, {most}] (at most period_windows={self.period_windows} and the "
                f"{spec.max_releases()} releases the network's budget epsilon={spec.budget[0]:g} allows), got {k}",
                parameter="policy_releases", allowed=f"[1, {most}]", got=k)
        object.__setattr__(self, "policy_releases", k)
        horizon = None if self.continual is None else int(self.continual["horizon"])
        life = horizon if self.lifetime_releases is None else check_int("lifetime_releases", self.lifetime_releases,
                                                                        minimum=1, maximum=horizon)
        object.__setattr__(self, "lifetime_releases", life)
        if self.stride is not None:
            object.__setattr__(self, "stride", check_int("stride", self.stride, minimum=1))
        skew = self.window_seconds if self.clock_skew_seconds is None else self.clock_skew_seconds
        object.__setattr__(self, "clock_skew_seconds", check_real("clock_skew_seconds", skew, low=0.0,
                                                                  low_inclusive=True))
        if self.areas is not None:
            object.__setattr__(self, "areas", _check_areas(self.areas, spec.n_sensors))

    @cached_property
    def release_spec(self) -> ReleaseSpec:
        """What a sensor node needs to release (:func:`~dpcloak.sensors.config.release_spec_from_dict`): the
        mechanism calibrated to the network's stated Δ2, which :attr:`fingerprint` binds; no model is built."""
        return release_spec_from_dict(self.network)

    @cached_property
    def counter(self) -> ContinualCounter | None:
        """Each count sensor's continual counter (``continual`` declared; else ``None``): one count per window of
        its stream changed by at most 1, over ``continual["horizon"]`` of its releases, factorisation method."""
        if self.continual is None:
            return None
        from dpcloak.privacy.continual import ContinualCounter

        c = self.continual
        return ContinualCounter(horizon=int(c["horizon"]), epsilon=float(c["epsilon"]), delta=float(c["delta"]),
                                sensitivity=1.0, method="factorization")

    def counter_position(self, window: int) -> int:
        """The position of ``window`` in every sensor's counter stream: the release windows of the schedule before it
        (the same for all sensors, so their streams stay aligned; a node that missed release windows catches up with
        zero counts whose outputs it never releases)."""
        return self._released_through(int(window) - 1)

    def counter_run(self, reports: Sequence[tuple[int, float]], *, start: int = 0) -> list[int]:
        """A count sensor's released integers V_start, V_start+1, … (grid units) from its stored ``(window, value)``
        reports in window order from position ``start`` on, up to its first missing position (a report at another
        window than the next position's ends it; at most the counter's horizon)."""
        counter = self.counter
        if counter is None:
            raise InvalidParameterError("this deployment declares no continual counter", parameter="continual")
        run = []
        for t, (window, value) in enumerate(reports[:max(0, counter.horizon - start)], start):
            if self.counter_position(window) != t or not self.is_release_window(window):
                break
            run.append(round(value / counter.grid))
        return run

    def decoded_stream(self, reports: Sequence[tuple[int, float]]) -> NDArray[np.float64]:
        """A count sensor's released running totals (count units) decoded from its stored ``(window, value)`` reports
        in window order (:meth:`~dpcloak.privacy.continual.ContinualCounter.decode` of :meth:`counter_run`,
        post-processing), up to its first missing position: entry t is the running total through
        :meth:`counter_window` (t).

        Examples
        --------
        >>> from dpcloak.service.examples import counting_deployment
        >>> dep = counting_deployment()
        >>> stream = dep.counter.stream()
        >>> reports = [(w, stream.push(3) * dep.counter.grid) for w in range(5)]
        >>> dep.decoded_stream(reports).shape, dep.decoded_stream(reports[:2] + reports[3:]).shape  # 2 missing
        ((5,), (2,))
        """
        run = self.counter_run(reports)
        assert self.counter is not None  # counter_run refuses a deployment without one
        return np.asarray(self.counter.decode(np.array(run, dtype=float))) if run else np.zeros(0)

    def counter_window(self, position: int) -> int:
        """The release window at counter ``position`` (the inverse of :meth:`counter_position` on release windows)."""
        return self._release_window(check_int("position", position, minimum=0), self._cycle())

    def counter_event(self, windows: int) -> ContinualCountingEvent:
        r"""The counters' joint release as **one** accountant event, for one person's counts in any ``windows``
        consecutive windows (``windows=1``: one event).

        A person is counted at most C times per window over all sensors (C = ``max_count_per_person``). Split
        into C threads of at most one count per window each (at any sensors), one thread changes the counts of
        ``windows`` consecutive windows of the sensors' independent streams by ≤ 1 each, spread over at most
        ``min(windows, n_sensors)`` sensors: :meth:`~dpcloak.privacy.continual.ContinualCounter.span_rho` with
        ``streams`` (the norm of the sum of w consecutive columns of the factor, with the rounding drift). The C
        threads' shifts add (triangle inequality in the noise-weighted ℓ2 norm), so the level is C²·ρ_w.
        Periods beyond the counter's horizon do not exist: the node refuses them.

        Examples
        --------
        >>> from dpcloak.service.examples import counting_deployment
        >>> dep = counting_deployment()
        >>> one, day = dep.counter_event(1), dep.counter_event(24)
        >>> one.kind, float(one.zcdp_rho()) == dep.counter.rho, one.zcdp_rho() < day.zcdp_rho()
        ('continual-counting', True, True)
        """
        from dpcloak.privacy.continual import ContinualCountingEvent

        counter = self.counter
        if counter is None:
            raise InvalidParameterError("the deployment declares no continual counter", parameter="continual")
        w = check_int("windows", windows, minimum=1)
        c = int(self.release_spec.max_count_per_person)  # type: ignore[arg-type]  # counts: checked
        rho = Fraction(counter.span_rho(w, streams=min(w, self.n_sensors))) * c * c
        return ContinualCountingEvent(sensitivity=float(c), scale=math.sqrt(float(counter.noise_variances()[0])),
                                      dimension=counter.horizon, rho=rho, method=counter.method)

    def counter_guarantee(self, windows: int) -> tuple[float, float]:
        """(ε, δ) of the counters' joint release for one person in any ``windows`` consecutive windows: the one event
        :meth:`counter_event` composed alone by the accountant (:func:`~dpcloak.privacy.accounting.compose`)."""
        from dpcloak.privacy.accounting import compose

        counter = self.counter
        assert counter is not None  # counter_event raises first
        spent = compose([self.counter_event(windows)], delta=counter.delta)
        return (float(spent.epsilon), float(counter.delta))

    @cached_property
    def network_fingerprint(self) -> str:
        """:func:`~dpcloak.sensors.config.config_fingerprint` of the network as held (hashed once)."""
        return config_fingerprint(self.network)

    @cached_property
    def sensor_network(self) -> SensorNetwork:
        """The :class:`~dpcloak.sensors.SensorNetwork` the deployment runs (the model rebuilt; Δ2 and σ recomputed
        and checked against the stated ones, its fingerprint against the stated network's)."""
        net = SensorNetwork.from_dict(self.network)
        if net.fingerprint() != self.network_fingerprint:
            raise InvalidFileError("the network rebuilt from the deployment has another fingerprint than the network "
                                   "it holds (the file comes from another dpcloak version)", field="network",
                                   parameter="deployment")
        return net

    @property
    def n_sensors(self) -> int:
        return self.release_spec.n_sensors

    @property
    def releases_per_period(self) -> int:
        """The most release windows in any ``period_windows`` consecutive windows (at most ``policy_releases``)."""
        return self._most(self.period_windows)

    @property
    def release_stride(self) -> int:
        """s: the declared ``stride``, default ⌈W/k⌉ (k = ``policy_releases``); release windows are multiples of s."""
        return self._cycle()[0]

    def _cycle(self) -> tuple[int, int, int, bool]:
        """(s, C, k', fills): the stride, the cycle C = s·⌈W/s⌉, the release windows k' = min(k, C/s) per cycle and
        whether k'·s < C (a few integer operations: recomputed rather than cached)."""
        w, k = self.period_windows, int(self.policy_releases)  # type: ignore[arg-type]  # set in __post_init__
        s = -(-w // k) if self.stride is None else self.stride
        cycle = s * -(-w // s)
        per = min(k, cycle // s)
        return s, cycle, per, per * s < cycle

    @property
    def fills_up(self) -> bool:
        """Whether the schedule fills the sliding window and then skips for budget until it renews (a declared stride
        below ⌈W/k⌉: k'·s < C), rather than spreading its release windows evenly."""
        return self._cycle()[3]

    def _released_through(self, window: int, cyc: tuple[int, int, int, bool] | None = None) -> int:
        """How many release windows of the cycles (the lifetime cap aside) lie in [0, ``window``]."""
        if window < 0:
            return 0
        s, cycle, per, _ = self._cycle() if cyc is None else cyc
        return (window // cycle) * per + min(per, (window % cycle) // s + 1)

    def _release_window(self, index: int, cyc: tuple[int, int, int, bool]) -> int:
        """The ``index``-th release window (from 0) of the cycles, the lifetime cap aside."""
        s, cycle, per, _ = cyc
        return (index // per) * cycle + (index % per) * s

    def max_release_windows(self, windows: int) -> int:
        """The most release windows in any ``windows`` consecutive windows (and at most the lifetime cap).

        The busiest run of n windows starts at a release window (moving its start forward to the next one
        loses none), and the schedule repeats every cycle: the count is the largest over the k' release
        windows of one cycle. With every multiple of s releasing it is ⌈n/s⌉.
        """
        return self._most(check_int("windows", windows, minimum=0))

    def _most(self, n: int) -> int:
        """:meth:`max_release_windows` of a validated ``n``."""
        cyc = self._cycle()
        s, _, per, fills = cyc
        if not fills:  # the even schedule: every multiple of s
            most = -(-n // s)
        else:
            most = max((self._released_through(i * s + n - 1, cyc) - i for i in range(per)), default=0) if n else 0
        return most if self.lifetime_releases is None else min(most, self.lifetime_releases)

    def is_release_window(self, window: int) -> bool:
        """Whether the policy lets sensors release in ``window`` (class docstring)."""
        cyc = self._cycle()
        s, cycle, per, fills = cyc
        if window < 0 or window % s or (fills and window % cycle >= per * s):
            return False
        return self.lifetime_releases is None or self._released_through(window, cyc) <= self.lifetime_releases

    def next_release_window(self, window: int) -> int | None:
        """The first release window ≥ ``window``; ``None`` once the lifetime cap is reached."""
        cyc = self._cycle()
        index = self._released_through(window - 1, cyc)  # release windows before ``window``: the next has this index
        if self.lifetime_releases is not None and index >= self.lifetime_releases:
            return None
        return self._release_window(index, cyc)

    def previous_release_window(self, window: int) -> int | None:
        """The last release window ≤ ``window``; ``None`` before the first one."""
        cyc = self._cycle()
        index = self._released_through(window, cyc)
        if self.lifetime_releases is not None:
            index = min(index, self.lifetime_releases)
        return None if index == 0 else self._release_window(index - 1, cyc)

    def budget_skip(self, window: int) -> bool:
        """Whether sensors skip ``window`` for budget: the sliding window holds the schedule's release windows and
        renews only after more than one stride (a burst's skip phase; the even schedule's gaps of one stride, and the
        lifetime cap, are not)."""
        if window < 0 or not self.fills_up or self.is_release_window(window):
            return False
        before, after = self.previous_release_window(window), self.next_release_window(window)
        return before is not None and after is not None and after - before > self.release_stride

    def window_start(self, window: int) -> float:
        """Unix time at which window ``window`` starts."""
        return self.start + window * self.window_seconds

    def latest_window(self, now: float) -> int:
        """The latest window a clock reading ``now`` may release or report for: ``window_at(now + skew)``."""
        return self.window_at(now + float(self.clock_skew_seconds))  # type: ignore[arg-type]

    def public_dict(self) -> dict[str, Any]:
        """Everything that determines the guarantee (what the fingerprint hashes), plus the id.

        ``stride`` appears only when declared (so a deployment without one keeps its fingerprint)."""
        return {
            "deployment_id": self.deployment_id,
            "network": self.network,
            "network_fingerprint": self.network_fingerprint,
            "window_seconds": self.window_seconds,
            "start": self.start,
            "period_windows": self.period_windows,
            "grace_seconds": self.grace_seconds,
            "policy_releases": self.policy_releases,
            "lifetime_releases": self.lifetime_releases,
            "clock_skew_seconds": self.clock_skew_seconds,
            "version": self.version,
            **({} if self.stride is None else {"stride": self.stride}),
            **({} if self.continual is None else {"continual": self.continual}),
            **({} if self.areas is None else {"areas": self.areas}),
        }

    @cached_property
    def fingerprint(self) -> str:
        """Hex SHA-256 of the canonical JSON of the privacy-determining configuration.

        It covers the network's fingerprint, the release policy and the network's Δ2 as stated in the file
        (``network["derived"]["delta2"]``, what a node calibrates its noise to without rebuilding the model):
        a node whose deployment file was edited (the network, the policy or Δ2) no longer matches the
        fingerprint in its credential and refuses to start.
        """
        body = {k: v for k, v in self.public_dict().items() if k not in ("deployment_id", "network", "grace_seconds")}
        body["sensitivity"] = self.release_spec.sensitivity
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
        """Composed (ε, δ_budget) of ``releases`` release windows (``network.guarantee``: vector releases, full Δ2);
        with ``continual``, of ``releases`` consecutive positions of the counters (:meth:`counter_guarantee`, at the
        counter's δ)."""
        if self.counter is not None:
            n = min(max(0, int(releases)), self.counter.horizon)
            return self.counter_guarantee(n) if n else (0.0, self.counter.delta)
        g = self.release_spec.guarantee(max(0, int(releases)))
        return (float(g.epsilon), float(g.delta))

    def policy_statement(self) -> PolicyStatement:
        """The guarantee at each level of the policy: one window, any W consecutive windows, the lifetime.

        Examples
        --------
        >>> from dpcloak.service.examples import two_sensor_deployment
        >>> statement = two_sensor_deployment(policy_releases=4).policy_statement()
        >>> statement.window, statement.span_windows, statement.span_releases, round(statement.span[0], 3)
        ((1.0, 1e-06), 10, 4, 1.887)
        >>> statement.lifetime is None
        True
        """
        mech = self.release_spec.mechanism
        k = self.releases_per_period
        life = self.lifetime_releases
        if self.continual is not None:  # one event of the accountant at each level (counter_event)
            assert life is not None  # the counter's horizon at most
            return PolicyStatement(window=self.counter_guarantee(1), span_windows=self.period_windows,
                                   span_releases=k, stride=self.release_stride, span=self.counter_guarantee(k),
                                   lifetime_releases=life, lifetime=self.counter_guarantee(life))
        return PolicyStatement(window=(float(mech.epsilon), float(mech.delta)), span_windows=self.period_windows,
                               span_releases=k, stride=self.release_stride, span=self.guarantee(k),
                               lifetime_releases=life, lifetime=None if life is None else self.guarantee(life))

    @classmethod
    def create(cls, *, network: SensorNetwork, window_seconds: float, period_windows: int, start: float,
               grace_seconds: float = 5.0, policy_releases: int | None = None, lifetime_releases: int | None = None,
               clock_skew_seconds: float | None = None, stride: int | None = None,
               continual: dict[str, Any] | None = None, areas: dict[str, list[int]] | None = None) -> Deployment:
        """A new deployment with a fresh random id; the network's budget bounds any ``period_windows`` windows (or,
        with ``continual``, the counters' statement does)."""
        return cls(deployment_id=uuid.uuid4().hex, network=network.to_dict(), window_seconds=window_seconds,
                   start=start, period_windows=period_windows, grace_seconds=grace_seconds,
                   policy_releases=policy_releases, lifetime_releases=lifetime_releases,
                   clock_skew_seconds=clock_skew_seconds, stride=stride, continual=continual, areas=areas)

    @classmethod
    def from_public_dict(cls, data: dict[str, Any], *, rebuild: bool = True) -> Deployment:
        """Inverse of :meth:`public_dict`; refuses a file whose network fingerprint does not match.

        ``rebuild``: also rebuild the network (:attr:`sensor_network`: the model, Δ2 and σ checked), before the
        fingerprint is compared, so an edited network is named by what is wrong in it."""
        try:
            if int(data["version"]) != DEPLOYMENT_VERSION:
                raise InvalidParameterError(f"deployment file: version {data['version']} is not supported (this "
                                            f"dpcloak reads version {DEPLOYMENT_VERSION}); {_EARLIER}: create the "
                                            "deployment again (dpcloak deploy init)",
                                            parameter="version", allowed=str(DEPLOYMENT_VERSION), got=data["version"])
            lifetime = data["lifetime_releases"]
            dep = cls(deployment_id=data["deployment_id"], network=data["network"],
                      window_seconds=float(data["window_seconds"]), start=float(data["start"]),
                      period_windows=int(data["period_windows"]), grace_seconds=float(data["grace_seconds"]),
                      policy_releases=int(data["policy_releases"]),
                      lifetime_releases=None if lifetime is None else int(lifetime),
                      clock_skew_seconds=float(data["clock_skew_seconds"]), version=int(data["version"]),
                      stride=None if data.get("stride") is None else int(data["stride"]),
                      continual=data.get("continual"), areas=data.get("areas"))
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidParameterError(f"the deployment is malformed: {exc!r}", parameter="deployment") from None
        if rebuild:
            _ = dep.sensor_network
        if dep.network_fingerprint != data.get("network_fingerprint"):
            raise InvalidFileError("network_fingerprint does not match the network it holds (the network was edited, "
                                   "or the file comes from another dpcloak version)", field="network_fingerprint",
                                   parameter="deployment", got=data.get("network_fingerprint"))
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
        raise InvalidParameterError(f"{directory} already holds a deployment ({DEPLOYMENT_FILE}); choose another",
                                    parameter="directory", got=str(directory))
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
                                        f"non-negative integer, got {sensor!r}: {generation!r}",
                                        parameter="path", got=generation)
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
        raise InvalidParameterError(f"sensor must be in [0, {deployment.n_sensors - 1}], got {sensor}",
                                    parameter="sensor", allowed=f"[0, {deployment.n_sensors - 1}]", got=sensor)
    generations = load_generations(directory)
    generations[j] = generations.get(j, 0) + 1
    _write_secret(directory / GENERATIONS_FILE, json.dumps({str(s): g for s, g in sorted(generations.items())}))
    path = directory / SENSOR_DIR / f"sensor-{j}.json"
    _write_secret(path, _credential_json(deployment, key, j, generations[j]))
    return load_credential(path)


DEPLOYMENT_FIELDS: dict[str, tuple[type, ...]] = {
    "deployment_id": (str,), "network": (dict,), "network_fingerprint": (str,), "window_seconds": (int, float),
    "start": (int, float), "period_windows": (int,), "grace_seconds": (int, float), "policy_releases": (int,),
    "lifetime_releases": (type(None), int), "clock_skew_seconds": (int, float), "version": (int,), "stride": (int,),
    "continual": (dict,), "areas": (dict,)}
"""The fields of ``deployment.json`` and their JSON types (``lifetime_releases`` may be null): each is required
except ``stride`` (absent: the even schedule), ``continual`` and ``areas`` (absent: none), no other is accepted."""
CREDENTIAL_FIELDS: dict[str, tuple[type, ...]] = {
    "deployment_id": (str,), "fingerprint": (str,), "sensor": (int,), "key": (str,), "generation": (int,),
    "ledger": (dict,)}
"""The fields of a sensor credential (``generation`` may be absent: 0; ``ledger`` is the anchor of the sensor's
ledger, written by the node, checked by :class:`dpcloak.privacy.ledger.Anchor`)."""
_TYPE_WORDS = {str: "a string", dict: "a JSON object", int: "an integer", float: "a number"}


def _read_json(path: Path, what: str) -> dict[str, Any]:
    from dpcloak._textfiles import read_text

    p = Path(path)
    if not p.exists():
        raise InvalidFileError(f"{path}: no such {what} file (not found)", path=p)
    text = read_text(p, what=f"{what} file")
    try:
        data = json.loads(text, parse_constant=_no_constant)
    except ValueError as exc:
        raise InvalidFileError(f"{path}: the {what} file is not readable JSON: {exc}", path=p,
                               line=getattr(exc, "lineno", None)) from None
    if not isinstance(data, dict):
        raise InvalidFileError(f"{path}: the {what} file must hold a JSON object", path=p)
    return data


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def _check_fields(data: dict[str, Any], fields_: dict[str, tuple[type, ...]], path: Path, what: str,
                  optional: tuple[str, ...] = ()) -> None:
    """Every field present (except ``optional``) with its JSON type, no unknown field."""
    for name in data:
        if name not in fields_:
            raise InvalidFileError(f"{path}: unknown field {name!r} in the {what} file (fields: {', '.join(fields_)})",
                                   path=path, field=name, got=name)
    for name, types in fields_.items():
        if name not in data:
            if name in optional:
                continue
            raise InvalidFileError(f"{path}: field {name!r} of the {what} file is missing", path=path, field=name)
        value = data[name]
        if isinstance(value, bool) or not isinstance(value, types):
            shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
            raise InvalidFileError(f"{path}: {name} must be {_TYPE_WORDS[types[-1]]} in the {what} file, got {shown}",
                                   path=path, field=name, got=value)


def load_deployment(path: Path, *, rebuild: bool = True) -> Deployment:
    """Read a deployment from ``deployment.json`` or the directory holding it.

    ``rebuild`` (default) also rebuilds the network's model and checks its Δ2, σ and fingerprint
    against the stated ones (:attr:`Deployment.sensor_network`: what the collector and the analyst
    use). A sensor node passes ``rebuild=False``: it needs only :attr:`Deployment.release_spec`, read
    off the file and bound by the fingerprint its credential holds, so it starts in milliseconds
    whatever the size of the model.

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
    >>> load_deployment(directory, rebuild=False).release_spec.n_sensors  # what a sensor node needs
    2
    >>> tmp.cleanup()
    """
    p = Path(path)
    file = p / DEPLOYMENT_FILE if p.is_dir() else p
    data = _read_json(file, "deployment")
    _check_fields(data, DEPLOYMENT_FIELDS, file, "deployment", optional=("stride", "continual", "areas"))
    try:
        return Deployment.from_public_dict(data, rebuild=rebuild)
    except InvalidParameterError as exc:  # the network's own checks, named with the file
        if isinstance(exc, InvalidFileError) and exc.path is not None:
            raise
        field = exc.field if isinstance(exc, InvalidFileError) else f"network.{exc.parameter or ''}".rstrip(".")
        raise InvalidFileError(f"{file}: {exc}", path=file, field=field, got=exc.got) from None


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
        raise InvalidParameterError(f"collector key file not found: {path}", parameter="path", got=str(path)) from None
    except ValueError:
        raise InvalidParameterError(f"collector key file {path} must hold {KEY_BYTES} bytes in hex",
                                    parameter="path", allowed=f"{KEY_BYTES} bytes in hex") from None
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
    _check_fields(data, CREDENTIAL_FIELDS, Path(path), "sensor credential", optional=("generation", "ledger"))
    try:
        generation = data.get("generation", 0)
        if isinstance(generation, bool) or not isinstance(generation, int) or generation < 0:
            raise ValueError(f"generation must be a non-negative integer, got {generation!r}")
        return SensorCredential(deployment_id=str(data["deployment_id"]), fingerprint=str(data["fingerprint"]),
                                sensor=int(data["sensor"]), key=bytes.fromhex(data["key"]), generation=generation,
                                path=Path(path))
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidParameterError(f"sensor credential file {path} is malformed: {exc!r}",
                                    parameter="sensor") from None

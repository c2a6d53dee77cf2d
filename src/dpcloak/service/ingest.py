"""What the collector checks on every report, before anything is stored.

The order is fixed and each failure has its own status and error code (JSON, never a traceback):

====  ====================  =====================================================================
415   ``unsupported_media_type`` the request is not ``Content-Type: application/json``
422   ``malformed``         the body does not parse; the message names the field
404   ``unknown_deployment`` the report names another deployment
409   ``wrong_configuration`` the report is bound to another configuration fingerprint
422   ``out_of_range``       the sensor or key id is not a sensor of the deployment
403   ``retired_credential`` the report names a credential generation that was re-provisioned since
401   ``unauthenticated``    the MAC does not verify under the key the report names (``key_id``, ``generation``)
403   ``forbidden``          a valid key of one sensor used to report for another sensor id
403   ``sensor_flagged``     the sensor's credential sent two different reports for one slot (a security event)
422   ``outside_policy``     the window is not a release window of the deployment's policy
422   ``window_in_future``   the window starts later than the collector's now plus the stated clock skew
409   ``window_closed``      the window is already recovered (or its grace period is over); not with a
                             continual counter (see below)
422   ``out_of_range``       the value is off the mechanism's grid or outside what the noise can produce
409   ``conflict``           the (sensor, window) slot holds a different report: a security event
====  ====================  =====================================================================

A retry of an already stored report (same id, same content) is acknowledged again with 200 and
``"status": "duplicate"``: nothing new is stored. A *different* authenticated report for a taken
slot can only come from the sensor's key: a second release of one window (a lost or restored
ledger, a credential copied to a second device). The collector keeps both reports as evidence
(:meth:`~dpcloak.service.store.Store.security_events`), flags the credential and refuses its
later reports (``sensor_flagged``) until the sensor is re-provisioned (a new credential
generation, whose first valid report retires the older ones).

With a continual counter (``Deployment.continual``) a report for a closed window is a **catch-up**: the
counter's output at a position the node did not deliver in time (it was down, the report was lost or
refused). Decoding a sensor's running totals needs every position of its stream, and the counter's
guarantee covers all of its outputs, so the collector stores it in its (sensor, window) slot like any
report — the same output again is a duplicate (200), a different one a conflict (409, a security event as
above) — but the closed window's map is not recovered again: the catch-up reaches the running totals
(:mod:`dpcloak.service.totals`) and the later windows' maps (:class:`~dpcloak.service.windows.ContinualStreams`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus

from pydantic import BaseModel, ConfigDict, Field

from dpcloak.service import _network
from dpcloak.service.auth import KeyedVerifier, verify_report
from dpcloak.service.config import Deployment, schedule_words

__all__ = ["ReportIn", "BatchIn", "ReportError", "Verifier", "PROBLEM_JSON", "problem_details"]

MAX_BATCH = 1000
_HEX64 = r"^[0-9a-f]{64}$"
_ID = r"^[0-9A-Za-z_-]{8,64}$"


class ReportIn(BaseModel):
    """One signed report: a sensor's private reading for one window.

    Examples
    --------
    >>> import tempfile
    >>> from dpcloak.service.examples import two_sensor_node
    >>> tmp = tempfile.TemporaryDirectory()
    >>> deployment, node = two_sensor_node(tmp.name)
    >>> from dpcloak.service.ingest import ReportIn
    >>> entry = node.release(12.0)  # window 0 (t = 30 s): noisy, signed and recorded in the ledger
    >>> report = ReportIn(**node.report_body(entry))
    >>> report.sensor, report.window, len(report.mac)
    (0, 0, 64)
    >>> from pydantic import ValidationError
    >>> try:
    ...     ReportIn(**{**node.report_body(entry), "deployment": "not-hex!"})
    ... except ValidationError as err:
    ...     print(err.errors()[0]["loc"], err.errors()[0]["type"])
    ('deployment',) string_pattern_mismatch
    >>> node.close()
    >>> tmp.cleanup()
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    deployment: str = Field(min_length=1, max_length=64, pattern=r"^[0-9A-Za-z]+$",
                            description="Deployment id the report is for.")
    fingerprint: str = Field(pattern=_HEX64, description="Configuration fingerprint (hex SHA-256).")
    sensor: int = Field(ge=0, le=2**31 - 1, description="Sensor id the reading is from.")
    key_id: int = Field(ge=0, le=2**31 - 1, description="Sensor id whose key signed the report.")
    generation: int = Field(0, ge=0, le=2**31 - 1, description="Credential generation of the signing key "
                            "(0 until the sensor is re-provisioned).")
    window: int = Field(ge=0, le=2**62, description="Window index (time rounded to the window length).")
    report_id: str = Field(pattern=_ID, description="Idempotency key: the same on every retry.")
    value: float = Field(allow_inf_nan=False, description="The private (noisy) reading.")
    mac: str = Field(pattern=_HEX64, description="Hex HMAC-SHA256 of the canonical report encoding.")


class BatchIn(BaseModel):
    """Reports forwarded together by a gateway (each keeps its own MAC).

    Examples
    --------
    >>> import tempfile
    >>> from dpcloak.service.examples import two_sensor_node
    >>> tmp = tempfile.TemporaryDirectory()
    >>> deployment, node = two_sensor_node(tmp.name)
    >>> bodies = [node.report_body(node.release(v, window=w)) for w, v in [(0, 3.0), (1, 4.0)]]
    >>> batch = BatchIn(reports=bodies)
    >>> [r.window for r in batch.reports]
    [0, 1]
    >>> node.close()
    >>> tmp.cleanup()
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    reports: list[ReportIn] = Field(min_length=1, max_length=MAX_BATCH)


PROBLEM_JSON = "application/problem+json"
"""The media type of an error answer (RFC 9457) for a client that asks for it (``Accept``)."""


@dataclass(eq=False)
class ReportError(Exception):
    """A refused request: HTTP status, error code, message, the field at fault and, for 429/503, the wait.

    Not frozen: raising an exception sets its ``__traceback__`` (a frozen dataclass refuses that when the
    exception crosses a thread, e.g. from a dependency FastAPI runs in its thread pool).

    :meth:`body` is the short form inside a batch's per-report outcomes; :meth:`problem` is every error
    answer's body, an RFC 9457 problem (``type``, ``title``, ``status``, ``detail``) that keeps the short
    form's members (``error``, ``message``, ``field``, ``retry_after``) for clients that read those.

    Examples
    --------
    >>> err = ReportError(401, "unauthenticated", "the MAC does not verify", "mac")
    >>> err.status, err.body()
    (401, {'error': 'unauthenticated', 'message': 'the MAC does not verify', 'field': 'mac'})
    >>> err.problem()["type"], err.problem()["title"], err.problem()["detail"] == err.message
    ('urn:dpcloak:error:unauthenticated', 'Unauthorized', True)
    >>> ReportError(503, "overloaded", "retry after 2 s", retry_after=2).headers()
    {'Retry-After': '2'}
    """

    status: int
    code: str
    message: str
    field: str | None = None
    retry_after: int | None = None
    challenge: str | None = None
    """A ``WWW-Authenticate`` challenge to send with a 401."""

    def body(self) -> dict[str, object]:
        out: dict[str, object] = {"error": self.code, "message": self.message}
        if self.field is not None:
            out["field"] = self.field
        if self.retry_after is not None:
            out["retry_after"] = self.retry_after
        return out

    def problem(self) -> dict[str, object]:
        """The error answer's body: :func:`problem_details` of :meth:`body`."""
        return problem_details(self.status, self.body())

    def headers(self) -> dict[str, str] | None:
        """``Retry-After`` and ``WWW-Authenticate`` when this error has them."""
        out = {} if self.retry_after is None else {"Retry-After": str(self.retry_after)}
        if self.challenge is not None:
            out["WWW-Authenticate"] = self.challenge
        return out or None


def problem_details(status: int, body: Mapping[str, object]) -> dict[str, object]:
    """The one place an error answer's body is built: an RFC 9457 problem from a short error body.

    ``type`` names the error code (``urn:dpcloak:error:<code>``), ``title`` is the status's phrase,
    ``detail`` the message; the short body's members (``error``, ``message``, ``field``, ``retry_after``)
    are kept as the problem's extension members.

    Examples
    --------
    >>> problem_details(429, {"error": "rate_limited", "message": "retry after 3 s", "field": "sensor",
    ...                       "retry_after": 3})  # doctest: +NORMALIZE_WHITESPACE
    {'type': 'urn:dpcloak:error:rate_limited', 'title': 'Too Many Requests', 'status': 429,
     'detail': 'retry after 3 s', 'error': 'rate_limited', 'message': 'retry after 3 s', 'field': 'sensor',
     'retry_after': 3}
    """
    return {"type": f"urn:dpcloak:error:{body['error']}", "title": HTTPStatus(status).phrase, "status": status,
            "detail": body["message"], **body}


class Verifier:
    """Checks reports against one deployment (everything but the database's uniqueness).

    Examples
    --------
    >>> from dpcloak.service.config import sensor_key
    >>> import tempfile
    >>> from dpcloak.service.examples import two_sensor_node
    >>> tmp = tempfile.TemporaryDirectory()
    >>> deployment, node = two_sensor_node(tmp.name, master_key=bytes(32))
    >>> from dpcloak.service.ingest import ReportIn
    >>> entry = node.release(12.0)  # window 0 (t = 30 s): noisy, signed and recorded in the ledger
    >>> report = ReportIn(**node.report_body(entry))
    >>> keys = [sensor_key(bytes(32), deployment_id="abc123", sensor=j) for j in range(2)]
    >>> verifier = Verifier(deployment, sensor_keys=keys)
    >>> verifier.check(report, now=30.0, closed=False)  # accepted, not a catch-up
    False
    >>> try:
    ...     verifier.check(report.model_copy(update={"value": report.value + 1}), now=30.0, closed=False)
    ... except ReportError as err:
    ...     print(err.status, err.code)
    401 unauthenticated
    >>> node.close()
    >>> tmp.cleanup()
    """

    def __init__(self, deployment: Deployment, *, sensor_keys: list[bytes], generations: list[int] | None = None,
                 derive: Callable[[int, int], bytes] | None = None) -> None:
        self.deployment = deployment
        self.network = deployment.sensor_network
        self.keys = sensor_keys
        self.generations = list(generations) if generations is not None else [0] * len(sensor_keys)
        """Current credential generation of each sensor (``sensor_keys`` are its keys)."""
        self.flagged: set[tuple[int, int]] = set()
        """(sensor, generation) credentials refused after a security event."""
        self._derive = derive
        self._macs = KeyedVerifier(sensor_keys)
        if deployment.counter is None:
            self.low, self.high = _network.value_bounds(self.network)
            self.grid = _network.grid_step(self.network)
        else:  # a counter's output V·g: on the counter's grid, within what the declared counts and the noise give
            self.low, self.high = _network.counter_value_bounds(deployment.counter,
                                                                deployment.release_spec.reading_range)
            self.grid = deployment.counter.grid

    def _authentic(self, report: ReportIn) -> bool:
        """Whether the MAC verifies; a valid MAC of a newer generation retires the older ones."""
        if report.generation == self.generations[report.key_id]:
            return self._macs.verify(report.key_id, report.mac, deployment_id=report.deployment,
                                     fingerprint=report.fingerprint, sensor=report.sensor, window=report.window,
                                     report_id=report.report_id, value=report.value)
        if self._derive is None:
            return False
        key = self._derive(report.key_id, report.generation)
        if not verify_report(key, report.mac, deployment_id=report.deployment, fingerprint=report.fingerprint,
                             sensor=report.sensor, window=report.window, report_id=report.report_id,
                             value=report.value):
            return False
        self._macs.replace(report.key_id, key)  # only the master key's holder can make a newer generation
        self.generations[report.key_id] = report.generation
        return True

    def check(self, report: ReportIn, *, now: float, closed: bool) -> bool:
        """Raise :class:`ReportError` for the first check the report fails (module table); else whether the report
        is a catch-up: a continual counter's output for a window already closed (``closed``, or its grace period
        is over), which a continual deployment takes into its (sensor, window) slot (module docstring)."""
        dep = self.deployment
        if report.deployment != dep.deployment_id:
            raise ReportError(404, "unknown_deployment", f"this collector serves deployment {dep.deployment_id}, "
                              f"not {report.deployment}", "deployment")
        if report.fingerprint != dep.fingerprint:
            raise ReportError(409, "wrong_configuration", "the report is bound to configuration fingerprint "
                              f"{report.fingerprint}, the deployment's is {dep.fingerprint}", "fingerprint")
        for name, sensor in (("sensor", report.sensor), ("key_id", report.key_id)):
            if sensor >= len(self.keys):
                raise ReportError(422, "out_of_range", f"{name} must be a sensor id in [0, {len(self.keys) - 1}], "
                                  f"got {sensor}", name)
        current = self.generations[report.key_id]
        if report.generation < current:
            raise ReportError(403, "retired_credential", f"generation {report.generation} of sensor "
                              f"{report.key_id}'s credential is retired (re-provisioned; the current generation "
                              f"is {current})", "generation")
        if not self._authentic(report):
            raise ReportError(401, "unauthenticated", f"the MAC does not verify under the key of sensor "
                              f"{report.key_id} (credential generation {report.generation})", "mac")
        if report.key_id != report.sensor:
            raise ReportError(403, "forbidden", f"the key of sensor {report.key_id} may not report for sensor "
                              f"{report.sensor}", "sensor")
        if (report.sensor, report.generation) in self.flagged:
            raise ReportError(403, "sensor_flagged", f"sensor {report.sensor} sent two different reports for one "
                              "window (a security event); its reports are refused until it is re-provisioned",
                              "sensor")
        if not dep.is_release_window(report.window):
            nxt = dep.next_release_window(report.window)
            raise ReportError(422, "outside_policy", f"window {report.window} is not a release window of the "
                              f"policy ({schedule_words(dep)}; next: {nxt}); the report is refused",
                              "window")
        latest = dep.latest_window(now)
        if report.window > latest:
            raise ReportError(422, "window_in_future", f"window must be at most {latest} (the window at the "
                              f"collector's clock plus the stated skew of {dep.clock_skew_seconds:g} s), got "
                              f"{report.window}: check the sensor's clock", "window")
        late = closed or now >= dep.window_end(report.window) + dep.grace_seconds
        if late and dep.counter is None:
            raise ReportError(409, "window_closed", f"window {report.window} is closed (recovered, or its "
                              f"grace period of {dep.grace_seconds:g} s after its end is over)", "window")
        if not (self.low <= report.value <= self.high and _network.on_grid(self.grid, report.value)):
            raise ReportError(422, "out_of_range", f"value must be a multiple of the grid step "
                              f"{self.grid:.6g} in [{self.low:.6g}, {self.high:.6g}], "
                              f"got {report.value!r}", "value")
        return late

"""The sensor ingest endpoints at the ASGI level: one body read, one JSON parse, the collector, one answer.

``POST /api/v1/reports`` and ``POST /api/v1/reports/batch`` are the collector's hot path (every
reading of every sensor). :class:`IngestEndpoints` answers them directly from the ASGI scope: it
reads the body under the size limit (413), parses and validates it in one step with the same
pydantic models the OpenAPI schema is generated from (``model_validate_json``: 422 naming the
field), runs :meth:`Collector.ingest` (authentication, replay, window and range checks, group
commit; acknowledged only after the commit) and sends the JSON answer. The FastAPI routes of the
same paths (:mod:`dpcloak.service.app`) document the endpoints and share :meth:`IngestEndpoints.report`
and :meth:`IngestEndpoints.batch`; what is skipped is only the framework's per-request machinery
(routing, dependency resolution, telemetry and middleware layers), which cost more than the checks.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from dpcloak.service.collector import Collector, Overloaded
from dpcloak.service.ingest import BatchIn, ReportError, ReportIn
from dpcloak.service.limits import ClientFailureLimit, SensorRateLimit

__all__ = ["REPORT_PATH", "BATCH_PATH", "MAX_BODY_BYTES", "IngestEndpoints", "error_field", "malformed",
           "retry_after_header", "is_json", "NOT_JSON"]

log = logging.getLogger("dpcloak.service")

REPORT_PATH = "/api/v1/reports"
BATCH_PATH = "/api/v1/reports/batch"
MAX_BODY_BYTES = 1 << 20
"""Largest request body accepted (a batch of 1,000 reports is about 400 kB)."""

Answer = tuple[int, dict[str, Any], dict[str, str] | None]
"""HTTP status, JSON body and extra headers."""


def error_field(loc: Sequence[Any]) -> str:
    """``("body", "reports", 3, "mac")`` → ``reports[3].mac``; the body itself → ``body``.

    Examples
    --------
    >>> error_field(("body", "reports", 3, "mac")), error_field(("body",)), error_field(("body", "value"))
    ('reports[3].mac', 'body', 'value')
    """
    out = ""
    for part in loc[1:] if loc and loc[0] == "body" else loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "body"


def malformed(errors: Sequence[Any]) -> ReportError:
    """The 422 of a body that does not validate: the first error, naming its field.

    Examples
    --------
    >>> err = malformed([{"loc": ("body", "reports", 0, "value"), "msg": "Input should be a valid number"},
    ...                  {"loc": ("body", "reports", 1, "mac"), "msg": "Field required"}])
    >>> err.status, err.field, err.message
    (422, 'reports[0].value', 'reports[0].value: Input should be a valid number')
    >>> malformed([]).message
    'body: malformed body'
    """
    first = errors[0] if errors else {"loc": ("body",), "msg": "malformed body"}
    field = error_field(tuple(first.get("loc", ("body",))))
    return ReportError(422, "malformed", f"{field}: {first.get('msg', 'invalid')}", field)


def retry_after_header(body: dict[str, Any]) -> dict[str, str] | None:
    """``Retry-After`` (the longest asked for) when a sensor's flood limit refused a report in this answer.

    ``body`` is one report's outcome or a batch's ``{"results": [...]}``; no header when nothing was limited.

    Examples
    --------
    >>> retry_after_header({"results": [{"http_status": 201}, {"http_status": 429, "retry_after": 3}]})
    {'Retry-After': '3'}
    >>> retry_after_header({"http_status": 201}) is None
    True
    """
    outcomes = body.get("results", [body])
    waits = [int(o["retry_after"]) for o in outcomes if "retry_after" in o]
    return {"Retry-After": str(max(waits))} if waits else None


def encode(body: dict[str, Any]) -> bytes:
    """JSON bytes as Starlette's ``JSONResponse`` renders them."""
    return json.dumps(body, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")).encode()


class IngestEndpoints:
    """The two sensor endpoints of one collector, as an ASGI handler and as plain coroutines.

    Examples
    --------
    One sensor's signed report sent twice, then a body that does not validate:

    >>> import asyncio, json, tempfile
    >>> from pathlib import Path
    >>> from dpcloak.service.examples import two_sensor_node
    >>> from dpcloak.service.store import Store, sqlite_url
    >>> tmp = tempfile.TemporaryDirectory()
    >>> deployment, node = two_sensor_node(tmp.name, master_key=bytes(32))
    >>> body = json.dumps(node.report_body(node.release(12.0))).encode()
    >>> store = Store(sqlite_url(Path(tmp.name) / "collector.db"))
    >>> collector = Collector(deployment, store, master_key=bytes(32), clock=lambda: 30.0)
    >>> endpoints = IngestEndpoints(collector)
    >>> async def session():
    ...     await collector.start()
    ...     try:
    ...         first = await endpoints.answer(REPORT_PATH, body)
    ...         again = await endpoints.answer(REPORT_PATH, body)
    ...         bad = await endpoints.answer(REPORT_PATH, b'{"sensor_id": 0}')
    ...     finally:
    ...         await collector.stop()
    ...     return first[0], again[0], bad[0], bad[1]["error"]
    >>> asyncio.run(session())  # stored, acknowledged retry, malformed
    (201, 200, 422, 'malformed')
    >>> store.report_counts("abc123")
    {0: 1}
    >>> node.close(); store.dispose(); tmp.cleanup()
    """

    def __init__(self, collector: Collector) -> None:
        self.collector = collector
        self.failures = ClientFailureLimit()  # failed authentications per client address (limits module)
        self._routes: dict[str, tuple[type[BaseModel], Callable[[Any], Awaitable[tuple[int, dict[str, Any]]]]]] = {
            REPORT_PATH: (ReportIn, self.report), BATCH_PATH: (BatchIn, self.batch)}

    def handles(self, scope: dict[str, Any]) -> bool:
        """Whether this is a request for one of the two endpoints."""
        return scope["type"] == "http" and scope["method"] == "POST" and scope["path"] in self._routes

    async def report(self, report: ReportIn) -> tuple[int, dict[str, Any]]:
        """Store one signed report (201), or acknowledge a retry of a stored one (200); else its error."""
        return (await self.collector.ingest([report]))[0]

    async def batch(self, batch: BatchIn) -> tuple[int, dict[str, Any]]:
        """One outcome per report, in order, with the totals."""
        outcomes = await self.collector.ingest(batch.reports)
        return 200, {"results": [{"http_status": s, **b} for s, b in outcomes],
                     "stored": sum(s == 201 for s, _ in outcomes), "duplicates": sum(s == 200 for s, _ in outcomes),
                     "rejected": sum(s >= 400 for s, _ in outcomes)}

    async def answer(self, path: str, body: bytes) -> Answer:
        """Parse, validate and ingest one request body."""
        model, endpoint = self._routes[path]
        try:
            parsed = model.model_validate_json(body)
        except ValidationError as exc:
            err = malformed(exc.errors(include_url=False, include_input=False))
            return err.status, err.body(), None
        try:
            status, out = await endpoint(parsed)
        except Overloaded as exc:
            return 503, ReportError(503, exc.code, exc.message).body(), {"Retry-After": str(exc.retry_after)}
        return status, out, retry_after_header(out)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        client = str((scope.get("client") or ("",))[0] or "")
        wait = self.failures.wait(client)
        status: int
        out: dict[str, Any]
        headers: dict[str, str] | None
        if wait > 0:  # this address failed authentication too often: refused before its body is read
            after = SensorRateLimit.retry_after(wait)
            status, out, headers = 429, {**ReportError(
                429, "rate_limited", f"too many reports from this address failed authentication; retry after {after} "
                "s", "mac").body(), "retry_after": after}, {"Retry-After": str(after)}
        else:
            body = NOT_JSON if not is_json(scope) else await _read_body(scope, receive)
            if body is None:  # the client went away
                return
            status, out, headers = await self._answer(scope["path"], body)
            results: list[dict[str, Any]] = out.get("results", [])
            failed = int(status == 401) + sum(r.get("http_status") == 401 for r in results)
            if self.failures.charge(client, failed):
                log.warning("client %s: too many reports failed authentication (wrong keys, forged MACs); its "
                            "requests get 429 for %d s", client or "?", SensorRateLimit.retry_after(
                                self.failures.wait(client)))
        data = encode(out)
        raw = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
        raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
        await send({"type": "http.response.start", "status": status, "headers": raw})
        await send({"type": "http.response.body", "body": data})


    async def _answer(self, path: str, body: bytes | ReportError) -> Answer:
        if isinstance(body, ReportError):
            return body.status, body.body(), None
        try:
            return await self.answer(path, body)
        except Exception as exc:  # never a traceback in a response; nothing was acknowledged
            log.error("internal error: %s: %s", type(exc).__name__, exc)
            return 500, ReportError(500, "internal", "internal error (logged on the collector)").body(), None


NOT_JSON = ReportError(415, "unsupported_media_type",
                        "reports must be sent as JSON with the header Content-Type: application/json", "content-type")


def is_json(scope: Mapping[str, Any]) -> bool:
    """Whether the request declares a JSON body (``Content-Type: application/json``, parameters allowed).

    Anything else is refused with 415 before the body is read: a web page of another origin can send
    ``text/plain`` (or a form) without asking the browser's permission first, never ``application/json``.

    Examples
    --------
    >>> is_json({"headers": [(b"content-type", b"application/json; charset=utf-8")]})
    True
    >>> is_json({"headers": [(b"content-type", b"text/plain")]}), is_json({"headers": []})
    (False, False)
    """
    for name, value in scope.get("headers") or ():
        if name == b"content-type":
            return value.split(b";", 1)[0].strip().lower() == b"application/json"
    return False


_TOO_LARGE = ReportError(413, "too_large", f"request body must be at most {MAX_BODY_BYTES} bytes", "body")


async def _read_body(scope: dict[str, Any], receive: Any) -> bytes | ReportError | None:
    """The request body, or the 413 error (declared or streamed size over the limit), or ``None`` on disconnect."""
    declared = b"0"
    for name, value in scope.get("headers") or ():
        if name == b"content-length":
            declared = value
    if not declared.isdigit() or int(declared) > MAX_BODY_BYTES:
        return _TOO_LARGE
    chunks: list[bytes] = []
    seen = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        seen += len(chunk)
        if seen > MAX_BODY_BYTES:
            return _TOO_LARGE
        chunks.append(chunk)
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)

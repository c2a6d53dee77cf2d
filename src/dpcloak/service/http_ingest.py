"""The sensor ingest endpoints: one implementation, served at the ASGI level and documented from it.

``POST /api/v1/reports`` and ``POST /api/v1/reports/batch`` are the collector's hot path (every
reading of every sensor). :class:`IngestEndpoints` answers them directly from the ASGI scope: it
reads the body under the size limit (413), parses and validates it in one step with the pydantic
model of the endpoint (``model_validate_json``: 422 naming the field), runs :meth:`Collector.ingest`
(authentication, replay, window and range checks, group commit; acknowledged only after the commit)
and sends the JSON answer (an error as an RFC 9457 problem, :mod:`dpcloak.service.problems`).

The same endpoints are the OpenAPI document's ingest operations: :meth:`IngestEndpoints.routes` makes
one :class:`IngestRoute` per endpoint, which FastAPI describes from the coroutine that ingests (its
body model, the statuses in :data:`STATUSES`) and which is served by the :class:`IngestEndpoints`
itself, never by the framework's request machinery (routing, dependency resolution and middleware
layers cost more than the checks; :class:`~dpcloak.service.app.CollectorApp` hands these two requests
to it first).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from fastapi.routing import APIRoute
from pydantic import BaseModel, ValidationError
from starlette.types import Receive, Scope, Send

from dpcloak.service.collector import Collector, Overloaded
from dpcloak.service.ingest import BatchIn, ReportError, ReportIn, problem_details
from dpcloak.service.limits import ClientFailureLimit, SensorRateLimit
from dpcloak.service.problems import as_report_error, documented, encode, malformed, problem_media_type

__all__ = ["REPORT_PATH", "BATCH_PATH", "MAX_BODY_BYTES", "STATUSES", "IngestEndpoints", "IngestRoute",
           "retry_after_header", "is_json", "NOT_JSON", "TOO_LARGE"]

log = logging.getLogger("dpcloak.service")

REPORT_PATH = "/api/v1/reports"
BATCH_PATH = "/api/v1/reports/batch"
MAX_BODY_BYTES = 1 << 20
"""Largest request body accepted (a batch of 1,000 reports is about 400 kB)."""

STATUSES = {REPORT_PATH: (201, 200, 401, 403, 404, 409, 413, 415, 422, 429, 503),
            BATCH_PATH: (200, 413, 415, 422, 429, 503)}
"""The statuses each endpoint answers (a batch states each report's outcome in its 200 body)."""

Answer = tuple[int, dict[str, Any], dict[str, str] | None]
"""HTTP status, JSON body (an error's short form, :meth:`ReportError.body`) and extra headers."""


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


class IngestEndpoints:
    """The two sensor endpoints of one collector: an ASGI handler, the coroutines it runs, the routes documenting them.

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
    >>> [(r.path, r.app is endpoints, r.body_field.field_info.annotation.__name__)
    ...  for r in endpoints.routes()]
    [('/api/v1/reports', True, 'ReportIn'), ('/api/v1/reports/batch', True, 'BatchIn')]
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
        """Store up to 1000 signed reports forwarded by a gateway; one outcome per report, in order, with the totals."""
        outcomes = await self.collector.ingest(batch.reports)
        return 200, {"results": [{"http_status": s, **b} for s, b in outcomes],
                     "stored": sum(s == 201 for s, _ in outcomes), "duplicates": sum(s == 200 for s, _ in outcomes),
                     "rejected": sum(s >= 400 for s, _ in outcomes)}

    def routes(self) -> list[IngestRoute]:
        """The documented operations of the two endpoints (``POST``; described by :meth:`report` and :meth:`batch`)."""
        duplicate = {200: {"description": "Duplicate of a stored report: acknowledged, nothing stored"}}
        return [IngestRoute(path, endpoint, methods=["POST"], status_code=STATUSES[path][0], tags=["sensors"],
                            response_model=None, responses={**(duplicate if path == REPORT_PATH else {}),
                                                            **documented(*(s for s in STATUSES[path] if s >= 400))})
                for path, (_, endpoint) in self._routes.items()]

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
            return 503, exc.error.body(), exc.error.headers()
        return status, out, retry_after_header(out)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        client = str((scope.get("client") or ("",))[0] or "")
        wait = self.failures.wait(client)
        status: int
        out: dict[str, Any]
        headers: dict[str, str] | None
        if wait > 0:  # this address failed authentication too often: refused before its body is read
            after = SensorRateLimit.retry_after(wait)
            err = ReportError(429, "rate_limited", f"too many reports from this address failed authentication; "
                              f"retry after {after} s", "mac", retry_after=after)
            status, out, headers = err.status, err.body(), err.headers()
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
        if status >= 400:
            data, media = encode(problem_details(status, out)), problem_media_type(scope.get("headers") or ())
        else:
            data, media = encode(out), "application/json"
        raw = [(b"content-type", media.encode()), (b"content-length", str(len(data)).encode())]
        raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
        await send({"type": "http.response.start", "status": status, "headers": raw})
        await send({"type": "http.response.body", "body": data})

    async def _answer(self, path: str, body: bytes | ReportError) -> Answer:
        if isinstance(body, ReportError):
            return body.status, body.body(), None
        try:
            return await self.answer(path, body)
        except Exception as exc:  # never a traceback in a response; nothing was acknowledged
            err = as_report_error(exc)
            return err.status, err.body(), err.headers()


class IngestRoute(APIRoute):
    """An ingest operation: documented by FastAPI from ``endpoint`` (a coroutine of :class:`IngestEndpoints`:
    its body model, its responses), served by the :class:`IngestEndpoints` it belongs to.

    Examples
    --------
    :meth:`IngestEndpoints.routes` makes them; any other endpoint is refused:

    >>> async def stand_alone(report: ReportIn) -> None:
    ...     pass
    >>> try:
    ...     IngestRoute(REPORT_PATH, stand_alone, methods=["POST"])
    ... except TypeError as exc:
    ...     print(exc)
    an ingest route's endpoint is a coroutine of IngestEndpoints, got stand_alone
    """

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        owner = getattr(endpoint, "__self__", None)
        if not isinstance(owner, IngestEndpoints):
            raise TypeError(f"an ingest route's endpoint is a coroutine of IngestEndpoints, got {endpoint.__name__}")
        super().__init__(path, endpoint, **kwargs)
        self.app = owner


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


TOO_LARGE = ReportError(413, "too_large", f"request body must be at most {MAX_BODY_BYTES} bytes", "body")


async def _read_body(scope: Scope, receive: Receive) -> bytes | ReportError | None:
    """The request body, or the 413 error (declared or streamed size over the limit), or ``None`` on disconnect."""
    declared = b"0"
    for name, value in scope.get("headers") or ():
        if name == b"content-length":
            declared = value
    if not declared.isdigit() or int(declared) > MAX_BODY_BYTES:
        return TOO_LARGE
    chunks: list[bytes] = []
    seen = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        seen += len(chunk)
        if seen > MAX_BODY_BYTES:
            return TOO_LARGE
        chunks.append(chunk)
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)

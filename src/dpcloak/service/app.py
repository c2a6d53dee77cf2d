"""The collector's ASGI application (FastAPI): sensor ingest, analyst API, export and the dashboard.

Sensor endpoints take signed reports (:mod:`dpcloak.service.ingest`). Everything an analyst reads
— the dashboard's data, the windows, the export — needs the analyst token as a bearer token; the
dashboard page itself is static and reads the token from the URL fragment (never sent to the
server in the URL). Every error is a small JSON object ``{"error", "message", "field"?}``; no
request can produce a traceback in a response.
"""

from __future__ import annotations

import hmac
import logging
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Query, Request
from fastapi import Path as PathParam
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse, Response, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from dpcloak import __version__
from dpcloak.service import views
from dpcloak.service.collector import STORAGE_RETRY_AFTER, Collector, Overloaded
from dpcloak.service.http_ingest import (
    BATCH_PATH,
    MAX_BODY_BYTES,
    NOT_JSON,
    REPORT_PATH,
    IngestEndpoints,
    is_json,
    malformed,
    retry_after_header,
)
from dpcloak.service.ingest import BatchIn, ReportError, ReportIn
from dpcloak.service.store import ClosingCursor, Store, WindowRecord, storage_full

__all__ = ["create_app", "CollectorApp", "SECURITY_HEADERS"]

log = logging.getLogger("dpcloak.service")
ASSETS = Path(__file__).parent / "assets"
_BEARER = HTTPBearer(auto_error=False)
WindowIndex = Annotated[int, PathParam(ge=0, le=2**62, description="Window index (as in reports).")]
"""A window in a URL: the range of ``ReportIn.window`` (a larger integer would not fit the database's BIGINT)."""


MAX_PAGE = 1000
"""Most windows one answer of ``GET /api/v1/windows`` lists (without their maps)."""


def format_cursor(cursor: ClosingCursor | None) -> str | None:
    """A closing position as the opaque cursor string of the windows API (``None`` stays ``None``).

    Examples
    --------
    >>> format_cursor((1700000000.25, 12)), parse_cursor(format_cursor((1700000000.25, 12)))
    ('1700000000.25:12', (1700000000.25, 12))
    >>> parse_cursor("nan:1"), parse_cursor("1.5:-2"), parse_cursor("x")
    (None, None, None)
    """
    return None if cursor is None else f"{cursor[0]!r}:{cursor[1]}"


def parse_cursor(text: str) -> ClosingCursor | None:
    """The closing position a cursor string names; ``None`` when it is not one :func:`format_cursor` writes."""
    closed_at, sep, window = text.partition(":")
    try:
        position = (float(closed_at), int(window))
    except ValueError:
        return None
    if not sep or not math.isfinite(position[0]) or not 0 <= position[1] <= 2**62:
        return None
    return position


def _closing_state(store: Store, deployment_id: str) -> tuple[int, ClosingCursor | None]:
    """The number of closed windows and the last closing position, read consistently: retried (a few
    times) when a window closed in between, which a second count shows. A count that still moved makes
    the client's next poll see a mismatch and reload its page (``total`` is a check, not a promise)."""
    for _ in range(3):
        total = store.window_count(deployment_id)
        cursor = store.last_closed(deployment_id)
        if store.window_count(deployment_id) == total:
            break
    return total, cursor


def _window_page(records: list[WindowRecord], *, total: int | None, more: bool,
                 cursor: ClosingCursor | None) -> JSONResponse:
    return JSONResponse({"windows": [r.as_dict(with_map=False) for r in records], "total": total, "more": more,
                         "cursor": format_cursor(cursor)})


def _error(status: int, code: str, message: str, field: str | None = None,
           headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(ReportError(status, code, message, field).body(), status_code=status, headers=headers)


class ErrorBody(BaseModel):
    """Every error answer: a machine-readable ``error`` code, a sentence, the field at fault and, for 429, the wait."""

    error: str
    message: str
    field: str | None = None
    retry_after: int | None = None


class Outlier(BaseModel):
    """A sensor the others contradict, left out of the map: its index and how many σ it is from their prediction."""

    sensor: int
    z: float


class WindowSummary(BaseModel):
    """A closed window without its map (:class:`~dpcloak.service.store.WindowRecord`): when it closed, how its map
    was obtained and how certain it is, who reported, the noise and the privacy spent."""

    window: int
    closed_at: float
    status: Literal["fit", "least-residual", "empty", "private counts"] | None = Field(description=(
        "How the map was obtained: fit (within the noise of the readings), least-residual (no map of the model "
        "comes within the noise: the model does not explain the readings; no uncertainty is stated), empty, or "
        "private counts (a counts network). null: closed before the status was recorded."))
    misfit: float | None = Field(description=(
        "Share of the private readings' energy the map leaves unexplained (model misfit and noise together)."))
    residual: float | None = Field(description="Distance from the map's readings to the private readings "
                                               "(reading units).")
    radius: float | None = Field(description="The residual the noise allows (reading units); larger: least-residual.")
    uncertainty: float | None = Field(description="Median bootstrap EMD in metres (null: not stated).")
    uncertainty_90: float | None = Field(description="90th percentile of the bootstrap EMD in metres (null: not "
                                                     "stated).")
    uncertainty_text: str = Field(description="The uncertainty in words, or why none is stated.")
    reporting: list[int] = Field(description="The sensors whose reports the map was recovered from.")
    missing: int = Field(description="How many sensors sent nothing for the window.")
    outliers: list[Outlier] = Field(description="The sensor the others contradict, left out of the map (at most one).")
    flagged: bool = Field(description="A sensor was missing or flagged as an outlier (see status for the map).")
    sigma: float = Field(description="The noise's σ per reading (reading units).")
    epsilon_window: float = Field(description="One window's ε (at delta_window).")
    delta_window: float
    epsilon_period: float = Field(description="The composed ε of the policy's sliding window ending here.")
    delta_period: float
    releases_in_period: int = Field(description="Release windows charged in that sliding window.")
    converged: bool = Field(description="Whether the recovery's solver certified its answer optimal.")
    message: str = Field(description="The solver's message.")
    total: float = Field(description="The whole map's sum (source units).")
    peak: float = Field(description="The largest value of one source location (source units).")


class Window(WindowSummary):
    """A closed window with its recovered map (one value per source location, source units)."""

    source_map: list[float]


class WindowPage(BaseModel):
    """A page of closed windows (see ``GET /api/v1/windows``)."""

    windows: list[WindowSummary]
    total: int | None
    more: bool
    cursor: str | None


_WHY = {401: "No valid credential (a report's MAC, or the analyst token)", 403: "The credential may not do this",
        404: "Another deployment, or no such window", 409: "Conflicts with what is stored (see error)",
        413: "Body larger than the collector accepts", 415: "Not sent as Content-Type: application/json",
        422: "Malformed or out of range (see field)",
        429: "This sensor's flood limit, or too many failed authentications from this address: retry after Retry-After",
        503: "Overloaded or the database cannot write: retry after Retry-After (nothing stored)"}
_RETRY_AFTER = {"Retry-After": {"description": "Seconds to wait before resending", "schema": {"type": "integer"}}}


def documented(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for the error statuses a route answers (each an :class:`ErrorBody`).

    Examples
    --------
    >>> sorted(documented(401, 503)), "headers" in documented(503)[503]
    ([401, 503], True)
    """
    return {s: {"model": ErrorBody, "description": _WHY[s], **({"headers": _RETRY_AFTER} if s in (429, 503) else {})}
            for s in statuses}


class BodyLimit:
    """ASGI middleware: 413 for a body over ``MAX_BODY_BYTES`` (declared or streamed), before it is parsed."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length", b"0")
        if not declared.isdigit() or int(declared) > MAX_BODY_BYTES:
            await _error(413, "too_large", f"request body must be at most {MAX_BODY_BYTES} bytes",
                         "body")(scope, receive, send)
            return
        seen = 0

        async def limited() -> Any:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > MAX_BODY_BYTES:
                raise StarletteHTTPException(413, f"request body must be at most {MAX_BODY_BYTES} bytes")
            return message

        await self.app(scope, limited, send)


SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                                 b"connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
)
"""Headers on every answer of the dashboard and the analyst API: scripts, styles and data from this origin
only (no inline script), never framed, no MIME sniffing, no referrer."""


def _with_security_headers(send: Any) -> Any:
    """``send`` adding :data:`SECURITY_HEADERS` to the start of the response."""

    async def with_headers(message: Any) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), *SECURITY_HEADERS]}
        await send(message)

    return with_headers


class CollectorApp(FastAPI):
    """FastAPI application whose two sensor ingest endpoints are answered before the framework's layers.

    ``POST /api/v1/reports`` and ``/api/v1/reports/batch`` go straight to :class:`IngestEndpoints`
    (same models, same checks, same answers as the documented routes; :mod:`dpcloak.service.http_ingest`);
    every other request goes through FastAPI as usual, and its answer carries :data:`SECURITY_HEADERS`.

    Examples
    --------
    :func:`create_app` builds one and attaches the collector's ingest endpoints:

    >>> from dpcloak.service.store import Store, sqlite_url
    >>> from dpcloak.service.collector import Collector
    >>> from dpcloak.service.http_ingest import IngestEndpoints
    >>> from dpcloak.service.examples import two_sensor_deployment
    >>> deployment = two_sensor_deployment()
    >>> import tempfile
    >>> from pathlib import Path
    >>> tmp = tempfile.TemporaryDirectory()
    >>> store = Store(sqlite_url(Path(tmp.name) / "collector.db"))
    >>> app = create_app(Collector(deployment, store, master_key=bytes(32)), analyst_token="t0ken")
    >>> isinstance(app, CollectorApp), isinstance(app.ingest, IngestEndpoints)
    (True, True)
    >>> [app.ingest.handles({"type": "http", "method": "POST", "path": p})
    ...  for p in ("/api/v1/reports", "/api/v1/reports/batch", "/api/v1/health")]
    [True, True, False]
    >>> store.dispose()
    >>> tmp.cleanup()
    """

    ingest: IngestEndpoints | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if self.ingest is not None and self.ingest.handles(scope):
            await self.ingest(scope, receive, send)
            return
        await super().__call__(scope, receive, _with_security_headers(send) if scope["type"] == "http" else send)


def create_app(collector: Collector, *, analyst_token: str) -> CollectorApp:
    """The FastAPI application serving ``collector``.

    Examples
    --------
    >>> from dpcloak.service.collector import Collector
    >>> import tempfile
    >>> from dpcloak.service.examples import two_sensor_store
    >>> tmp = tempfile.TemporaryDirectory()
    >>> deployment, store = two_sensor_store(tmp.name)
    >>> app = create_app(Collector(deployment, store, master_key=bytes(32)), analyst_token="t0ken")
    >>> for path in sorted(r.path for r in app.routes if r.path.startswith("/api/v1/reports")):
    ...     print(path)
    /api/v1/reports
    /api/v1/reports/batch
    >>> store.dispose()
    >>> tmp.cleanup()
    """

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await collector.start()
        try:
            yield
        finally:
            await collector.stop()

    app = CollectorApp(title="dpcloak collector", version=__version__, lifespan=lifespan, docs_url=None,
                       redoc_url=None,  # no interactive pages (they load scripts from a CDN): /openapi.json only
                       description="Collects differentially private sensor reports, recovers maps per window.")
    dep, store = collector.deployment, collector.store
    endpoints = IngestEndpoints(collector)

    @app.exception_handler(RequestValidationError)
    async def _malformed(_: Request, exc: RequestValidationError) -> JSONResponse:
        err = malformed(exc.errors())
        return _error(err.status, err.code, err.message, err.field)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {401: "unauthenticated", 404: "not_found", 405: "method_not_allowed", 413: "too_large"}.get(
            exc.status_code, "error")
        return _error(exc.status_code, code, str(exc.detail), headers=getattr(exc, "headers", None))

    @app.exception_handler(ReportError)
    async def _refused(_: Request, exc: ReportError) -> JSONResponse:
        return JSONResponse(exc.body(), status_code=exc.status)

    @app.exception_handler(Overloaded)
    async def _overloaded(_: Request, exc: Overloaded) -> JSONResponse:
        return _error(503, exc.code, exc.message, headers={"Retry-After": str(exc.retry_after)})

    @app.exception_handler(Exception)
    async def _internal(_: Request, exc: Exception) -> JSONResponse:
        if storage_full(exc):  # e.g. an analyst's close while the disk is full: 503, one bounded account
            collector.storage.refused(str(getattr(exc, "orig", exc))[:200])
            return _error(503, "storage_full", "the collector's database cannot write (disk full); retry after "
                          f"{STORAGE_RETRY_AFTER} s", headers={"Retry-After": str(STORAGE_RETRY_AFTER)})
        log.error("internal error: %s: %s", type(exc).__name__, exc)
        return _error(500, "internal", "internal error (logged on the collector)")

    def analyst(creds: Annotated[HTTPAuthorizationCredentials | None, Depends(_BEARER)]) -> None:
        if creds is None:
            raise StarletteHTTPException(401, "the analyst token is required (Authorization: Bearer <token>)",
                                         headers={"WWW-Authenticate": "Bearer"})
        if not hmac.compare_digest(creds.credentials.encode(), analyst_token.encode()):
            raise StarletteHTTPException(401, "this token is not valid for this deployment",
                                         headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})

    def json_body(request: Request) -> None:
        if not is_json(request.scope):
            raise NOT_JSON

    @app.post(REPORT_PATH, status_code=201, tags=["sensors"], dependencies=[Depends(json_body)],
              responses={200: {"description": "Duplicate of a stored report: acknowledged, nothing stored"},
                         **documented(401, 403, 404, 409, 413, 415, 422, 429, 503)})
    async def post_report(report: ReportIn) -> JSONResponse:
        """Store one signed report (201), or acknowledge a retry of a stored one (200)."""
        status, body = await endpoints.report(report)
        return JSONResponse(body, status_code=status, headers=retry_after_header(body))

    @app.post(BATCH_PATH, tags=["sensors"], dependencies=[Depends(json_body)],
              responses=documented(413, 415, 422, 429, 503))
    async def post_batch(batch: BatchIn) -> JSONResponse:
        """Store up to 1000 signed reports forwarded by a gateway; one outcome per report, in order."""
        body = (await endpoints.batch(batch))[1]
        return JSONResponse(body, headers=retry_after_header(body))

    @app.get("/api/v1/health", tags=["public"])
    async def health() -> dict[str, Any]:
        """Liveness, the deployment served and whether its sensors release now (public).

        ``status`` is ``"degraded"`` while sensors skip where the policy lets them release (the last due
        release window, ``policy.skipping``) or once the lifetime cap is reached; windows that the
        policy's schedule skips are normal operation (``"ok"``). ``policy`` says why and when the next
        release window starts, and states the policy in words.
        """
        policy = await collector.run_in_reader(partial(views.policy_view, dep, now=collector.clock(),
                                                       store=collector.store))
        return {"status": policy["status"], "deployment": dep.deployment_id, "fingerprint": dep.fingerprint,
                "window": policy["window"], "policy": policy}

    @app.get("/api/v1/deployment", tags=["analyst"], dependencies=[Depends(analyst)],
              responses=documented(401))
    async def deployment() -> dict[str, Any]:
        """The deployment, its sensor and source positions and its guarantee in numbers and words."""
        return views.deployment_view(dep, now=collector.clock())

    @app.get("/api/v1/sensors", tags=["analyst"], dependencies=[Depends(analyst)],
              responses=documented(401))
    async def sensors() -> dict[str, Any]:
        """Per sensor: last window and time seen, readings and privacy spent in the current period."""
        return await collector.run_in_reader(views.sensors_view, dep, collector.store, collector.clock())

    @app.get("/api/v1/sensors/{sensor}/total", tags=["analyst"], dependencies=[Depends(analyst)],
             responses=documented(401, 404, 422))
    async def sensor_total(
            sensor: Annotated[int, PathParam(ge=0, le=2**31, description="The sensor's index.")],
            since: Annotated[float, Query(ge=0, le=2**40, description="Unix time: windows starting from then.")],
            until: Annotated[float | None, Query(ge=0, le=2**40, description=(
                "Unix time: windows ending by then (default: now)."))] = None,
    ) -> JSONResponse:
        """One sensor's released readings summed over a time range, with an error bar (e.g. since Monday)."""
        if sensor >= dep.n_sensors:
            return _error(404, "not_found", f"sensor must be in [0, {dep.n_sensors - 1}]", "path.sensor")
        end = collector.clock() if until is None else until
        return JSONResponse(await collector.run_in_reader(partial(views.total_view, dep, collector.store,
                                                                  sensor=sensor, since=since, until=end)))

    @app.get("/api/v1/security-events", tags=["analyst"], dependencies=[Depends(analyst)],
              responses=documented(401, 422))
    async def security_events() -> dict[str, Any]:
        """Sensors that sent two different reports for one window: both reports, and the flagged credentials."""
        events = await collector.run_in_reader(collector.store.security_events, dep.deployment_id)
        flagged = sorted(collector.verifier.flagged)
        return {"events": events, "flagged": [{"sensor": s, "generation": g} for s, g in flagged]}

    @app.get("/api/v1/windows", tags=["analyst"], dependencies=[Depends(analyst)],
              responses={200: {"model": WindowPage, "description": "A page of windows"}, **documented(401, 422)})
    async def list_windows(
            limit: Annotated[int, Query(ge=1, le=MAX_PAGE, description="Windows per page (at most 1000).")] = MAX_PAGE,
            after: Annotated[int | None, Query(ge=-1, le=2**62, description=(
                "Only windows after this one (-1: from the first), the first page of them."))] = None,
            before: Annotated[int | None, Query(ge=0, le=2**62, description="Only windows before this one.")] = None,
            since: Annotated[str | None, Query(max_length=64, description=(
                "A cursor from an earlier answer: only the windows closed since, in closing order."))] = None,
            count: Annotated[bool, Query(description=(
                "With since: also count the closed windows (total); the other answers always do."))] = False,
    ) -> JSONResponse:
        """Closed windows without their maps, a page at a time.

        Without ``since``: windows in index order, the last ``limit`` of those before ``before`` (the
        newest page by default), or the first ``limit`` after ``after`` (``-1``: the oldest page). With
        ``since`` (the ``cursor`` of an earlier answer): the windows closed since then, in the order they
        were closed, whatever their index (a dashboard's poll). Every answer carries ``total`` (closed
        windows in all; with ``since`` only when ``count`` is asked, else ``null``: counting reads an index
        entry per window of the history), ``more`` (whether the range holds more than this page) and the
        ``cursor`` to poll from next.
        """
        if since is not None:
            cursor = parse_cursor(since)
            if cursor is None:
                return _error(422, "invalid", "since must be a cursor returned by this endpoint", "query.since")
            position = cursor
            records = await collector.run_in_reader(lambda: store.windows_closed_after(
                dep.deployment_id, position, limit=limit + 1))
            total = await collector.run_in_reader(store.window_count, dep.deployment_id) if count else None
            more, records = len(records) > limit, records[:limit]
            if records:
                cursor = (records[-1].closed_at, records[-1].window)
            return _window_page(records, total=total, more=more, cursor=cursor)
        total, cursor = await collector.run_in_reader(_closing_state, store, dep.deployment_id)
        newest = after is None
        records = await collector.run_in_reader(lambda: store.windows_page(
            dep.deployment_id, after=after, before=before, limit=limit + 1, newest=newest))
        more = len(records) > limit
        records = records[-limit:] if newest else records[:limit]
        return _window_page(records, total=total, more=more, cursor=cursor)

    @app.get("/api/v1/windows/{window}", tags=["analyst"], dependencies=[Depends(analyst)],
              responses={200: {"model": Window, "description": "The window"}, **documented(401, 404, 422)})
    async def get_window(window: WindowIndex) -> JSONResponse:
        """One closed window with its recovered map."""
        records = await collector.run_in_reader(lambda: list(store.windows(dep.deployment_id, window=window)))
        if not records:
            return _error(404, "not_found", f"window {window} is not closed (or does not exist)", "window")
        return JSONResponse(records[0].as_dict())

    @app.post("/api/v1/windows/{window}/close", tags=["analyst"], dependencies=[Depends(analyst)],
              responses={200: {"model": Window, "description": "The window, closed"},
                         **documented(401, 404, 422, 503)})
    async def close(window: WindowIndex) -> JSONResponse:
        """Close a window now and recover it from the reports that arrived."""
        record = await collector.close_window(window)
        if record is None:
            return _error(404, "not_found", f"no sensor reported for window {window}", "window")
        return JSONResponse(record.as_dict())

    @app.get("/api/v1/export.csv", tags=["analyst"], dependencies=[Depends(analyst)],
             response_class=StreamingResponse,
             responses={200: {"content": {"text/csv": {}}}, **documented(401)})
    async def export_csv() -> StreamingResponse:
        """Every closed window's map in long format, streamed: window, its start and end (ISO 8601 UTC), source,
        its coordinates (x_m[, y_m]), value, window metadata."""
        return StreamingResponse(views.export_csv_chunks(dep, store), media_type="text/csv",
                                 headers={"Content-Disposition": f'attachment; filename="{dep.deployment_id}.csv"'})

    @app.get("/api/v1/export.json", tags=["analyst"], dependencies=[Depends(analyst)],
             response_class=StreamingResponse,
             responses={200: {"content": {"application/json": {}}}, **documented(401)})
    async def export_json() -> StreamingResponse:
        """The same table as a JSON array of rows (coordinates an array, window times ISO 8601 UTC), streamed."""
        return StreamingResponse(views.export_json_chunks(dep, store), media_type="application/json",
                                 headers={"Content-Disposition": f'attachment; filename="{dep.deployment_id}.json"'})

    @app.get("/api/v1/export.parquet", tags=["analyst"], dependencies=[Depends(analyst)],
             response_class=StreamingResponse,
             responses={200: {"content": {"application/vnd.apache.parquet": {}}}, **documented(401)})
    async def export_parquet() -> Response:
        """The same table as Parquet (needs pyarrow), streamed a row group at a time."""
        pieces = views.export_parquet_chunks(dep, store)
        if pieces is None:
            return _error(501, "not_available", "Parquet export needs pyarrow: pip install pyarrow")
        return StreamingResponse(pieces, media_type="application/vnd.apache.parquet",
                                 headers={"Content-Disposition": f'attachment; filename="{dep.deployment_id}.parquet"'})

    @app.get("/", include_in_schema=False)
    async def root() -> RedirectResponse:
        return RedirectResponse("/dashboard/")

    app.mount("/dashboard", StaticFiles(directory=ASSETS, html=True), name="dashboard")
    app.add_middleware(BodyLimit)
    app.ingest = endpoints
    return app

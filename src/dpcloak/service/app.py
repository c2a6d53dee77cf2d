"""The collector's ASGI application (FastAPI): sensor ingest, analyst API, export and the dashboard.

Sensor endpoints take signed reports (:mod:`dpcloak.service.http_ingest`, one implementation served
before the framework's layers and documented as the ``sensors`` operations). Everything an analyst
reads — the dashboard's data, the windows, the export — needs the analyst token as a bearer token
(the :func:`require_analyst` dependency of the :data:`analyst` and :data:`exports` routers); the
dashboard page itself is static and reads the token from the URL fragment (never sent to the server
in the URL). The routers' operations get the collector through the :func:`collector_of` dependency
(``app.state``). Every error is an RFC 9457 problem built in one place (:mod:`dpcloak.service.problems`);
no request can produce a traceback in a response.
"""

from __future__ import annotations

import hmac
import math
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, FastAPI, Query, Request
from fastapi import Path as PathParam
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse, Response, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from dpcloak import __version__
from dpcloak.service import totals, views
from dpcloak.service.collector import STORAGE_RETRY_AFTER, Collector, Overloaded
from dpcloak.service.http_ingest import MAX_BODY_BYTES, TOO_LARGE, IngestEndpoints
from dpcloak.service.ingest import ReportError
from dpcloak.service.problems import as_report_error, documented, problem_response
from dpcloak.service.settings import Settings
from dpcloak.service.store import ClosingCursor, Store, WindowRecord, storage_full

__all__ = ["create_app", "CollectorApp", "SECURITY_HEADERS", "collector_of", "require_analyst", "public", "analyst",
           "exports"]

ASSETS = Path(__file__).parent / "assets"
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


def _window_page(records: list[WindowRecord], *, total: int | None, more: bool, cursor: ClosingCursor | None,
                 latest: WindowRecord | None = None) -> JSONResponse:
    return JSONResponse({"windows": [r.as_dict(with_map=False) for r in records], "total": total, "more": more,
                         "cursor": format_cursor(cursor), "latest": None if latest is None else latest.as_dict()})


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
    latest: Window | None = Field(description=(
        "With since and latest=true: the newest of these windows with its map (null otherwise, or with none)."))


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
            await problem_response(TOO_LARGE, scope.get("headers") or ())(scope, receive, send)
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
    """``send`` adding :data:`SECURITY_HEADERS` and a ``Server-Timing`` header to the start of the response.

    ``Server-Timing: app;dur=<ms>`` is the time from this call (the request reaching the app) to the start of
    its answer, in milliseconds: what the collector spent on it, queueing for its reader threads included, set
    apart from what the network and the client add (a dashboard's poll, measured in ``bench_dashboard.py``).

    Examples
    --------
    >>> import asyncio
    >>> sent = []
    >>> async def send(message):
    ...     sent.append(message)
    >>> asyncio.run(_with_security_headers(send)({"type": "http.response.start", "status": 200, "headers": []}))
    >>> name, value = sent[0]["headers"][-1]
    >>> name, value.startswith(b"app;dur=") and float(value[len(b"app;dur="):]) >= 0.0
    (b'server-timing', True)
    """
    started = time.perf_counter()

    async def with_headers(message: Any) -> None:
        if message["type"] == "http.response.start":
            timing = f"app;dur={(time.perf_counter() - started) * 1000:.2f}".encode()
            message = {**message, "headers": [*message.get("headers", []), *SECURITY_HEADERS,
                                              (b"server-timing", timing)]}
        await send(message)

    return with_headers


async def collector_of(request: Request) -> Collector:
    """Dependency: the collector the app serves (``app.state.collector``).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> request = SimpleNamespace(app=SimpleNamespace(state=SimpleNamespace(collector="the collector")))
    >>> import asyncio
    >>> asyncio.run(collector_of(request))  # type: ignore[arg-type]
    'the collector'
    """
    collector: Collector = request.app.state.collector
    return collector


CollectorDep = Annotated[Collector, Depends(collector_of)]
_BEARER = HTTPBearer(auto_error=False)


async def require_analyst(request: Request,
                          creds: Annotated[HTTPAuthorizationCredentials | None, Depends(_BEARER)]) -> None:
    """Dependency: the request carries the analyst token (``app.state.analyst_token``) as a bearer token, else 401.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> request = SimpleNamespace(app=SimpleNamespace(state=SimpleNamespace(analyst_token="t0ken")))
    >>> import asyncio
    >>> asyncio.run(require_analyst(request, HTTPAuthorizationCredentials(scheme="Bearer", credentials="t0ken")))
    >>> try:
    ...     asyncio.run(require_analyst(request, HTTPAuthorizationCredentials(scheme="Bearer", credentials="guess")))
    ... except ReportError as err:
    ...     print(err.status, err.code, err.challenge)
    401 unauthenticated Bearer error="invalid_token"
    """
    if creds is None:
        raise ReportError(401, "unauthenticated", "the analyst token is required (Authorization: Bearer <token>)",
                          challenge="Bearer")
    if not hmac.compare_digest(creds.credentials.encode(), str(request.app.state.analyst_token).encode()):
        raise ReportError(401, "unauthenticated", "this token is not valid for this deployment",
                          challenge='Bearer error="invalid_token"')


_OBJECT: dict[int | str, dict[str, Any]] = {200: {"content": {"application/json": {"schema": {"type": "object"}}}}}
"""The documented answer of the operations that build their JSON object themselves (a ``JSONResponse``, encoded
off the framework's validation and ``jsonable_encoder``: ~1 ms of the event loop for the sensors' table)."""

public = APIRouter(tags=["public"])
"""Operations anyone may call (health)."""

analyst = APIRouter(tags=["analyst"], dependencies=[Depends(require_analyst)], responses=documented(401))
"""The analyst's operations: the deployment, the sensors, the windows and their maps (analyst token)."""

exports = APIRouter(tags=["analyst"], dependencies=[Depends(require_analyst)], responses=documented(401))
"""Every closed window's map as one table, streamed (analyst token)."""


@public.get("/api/v1/health", response_class=JSONResponse,
            responses=_OBJECT)
async def health(collector: CollectorDep) -> JSONResponse:
    """Liveness, the deployment served and whether its sensors release now (public).

    ``status`` is ``"degraded"`` while sensors skip where the policy lets them release (the last due
    release window, ``policy.skipping``) or once the lifetime cap is reached; windows that the
    policy's schedule skips are normal operation (``"ok"``). ``policy`` says why and when the next
    release window starts, and states the policy in words.
    """
    dep = collector.deployment

    def answer(now: float) -> JSONResponse:  # read and encoded on a reader thread, not on the event loop
        policy = views.policy_view(dep, now=now, store=collector.store)
        return JSONResponse({"status": policy["status"], "deployment": dep.deployment_id,
                             "fingerprint": dep.fingerprint, "window": policy["window"], "policy": policy})

    return await collector.run_in_reader(answer, collector.clock())


@analyst.get("/api/v1/deployment", response_class=JSONResponse, responses=_OBJECT)
async def deployment(collector: CollectorDep) -> JSONResponse:
    """The deployment, its sensor and source positions and its guarantee in numbers and words."""
    return JSONResponse(views.deployment_view(collector.deployment, now=collector.clock()))


@analyst.get("/api/v1/sensors", response_class=JSONResponse,
             responses=_OBJECT)
async def sensors(collector: CollectorDep) -> JSONResponse:
    """Per sensor: last window and time seen, readings and privacy spent in the current period."""
    dep, store = collector.deployment, collector.store

    def answer(now: float) -> JSONResponse:  # read and encoded on a reader thread, not on the event loop
        return JSONResponse(views.sensors_view(dep, store, now))

    return await collector.run_in_reader(answer, collector.clock())


@analyst.get("/api/v1/sensors/{sensor}/total", responses=documented(404, 422))
async def sensor_total(
        collector: CollectorDep,
        sensor: Annotated[int, PathParam(ge=0, le=2**31, description="The sensor's index.")],
        since: Annotated[float, Query(ge=0, le=2**40, description="Unix time: windows starting from then.")],
        until: Annotated[float | None, Query(ge=0, le=2**40, description=(
            "Unix time: windows ending by then (default: now)."))] = None,
) -> JSONResponse:
    """One sensor's released readings summed over a time range, with an error bar (e.g. since Monday)."""
    dep = collector.deployment
    if sensor >= dep.n_sensors:
        raise ReportError(404, "not_found", f"sensor must be in [0, {dep.n_sensors - 1}]", "path.sensor")
    if dep.counter is not None:  # correlated counter outputs: their plain sum means nothing
        raise ReportError(404, "not_found", f"this deployment's sensors release running totals: ask "
                          f"/api/v1/counters/sensors/{sensor}/totals")
    end = collector.clock() if until is None else until
    return JSONResponse(await collector.run_in_reader(partial(views.total_view, dep, collector.store,
                                                              sensor=sensor, since=since, until=end)))


@analyst.get("/api/v1/security-events", responses=documented(422))
async def security_events(collector: CollectorDep) -> dict[str, Any]:
    """Sensors that sent two different reports for one window: both reports, and the flagged credentials."""
    events = await collector.run_in_reader(collector.store.security_events, collector.deployment.deployment_id)
    flagged = sorted(collector.verifier.flagged)
    return {"events": events, "flagged": [{"sensor": s, "generation": g} for s, g in flagged]}


@analyst.get("/api/v1/windows", responses={200: {"model": WindowPage, "description": "A page of windows"},
                                           **documented(422)})
async def list_windows(
        collector: CollectorDep,
        limit: Annotated[int, Query(ge=1, le=MAX_PAGE, description="Windows per page (at most 1000).")] = MAX_PAGE,
        after: Annotated[int | None, Query(ge=-1, le=2**62, description=(
            "Only windows after this one (-1: from the first), the first page of them."))] = None,
        before: Annotated[int | None, Query(ge=0, le=2**62, description="Only windows before this one.")] = None,
        since: Annotated[str | None, Query(max_length=64, description=(
            "A cursor from an earlier answer: only the windows closed since, in closing order."))] = None,
        count: Annotated[bool, Query(description=(
            "With since: also count the closed windows (total); the other answers always do."))] = False,
        latest: Annotated[bool, Query(description=(
            "With since: also the newest of the windows listed with its map (latest), the one a dashboard following "
            "the newest window shows next, without a request of its own."))] = False,
) -> JSONResponse:
    """Closed windows without their maps, a page at a time.

    Without ``since``: windows in index order, the last ``limit`` of those before ``before`` (the
    newest page by default), or the first ``limit`` after ``after`` (``-1``: the oldest page). With
    ``since`` (the ``cursor`` of an earlier answer): the windows closed since then, in the order they
    were closed, whatever their index (a dashboard's poll). Every answer carries ``total`` (closed
    windows in all; with ``since`` only when ``count`` is asked, else ``null``: counting reads an index
    entry per window of the history), ``more`` (whether the range holds more than this page), the
    ``cursor`` to poll from next and ``latest`` (with ``since`` and ``latest=true``: the newest of the
    windows listed, with its map, read in the same query; else ``null``).
    """
    store, deployment_id = collector.store, collector.deployment.deployment_id
    if since is not None:
        cursor = parse_cursor(since)
        if cursor is None:
            raise ReportError(422, "invalid", "since must be a cursor returned by this endpoint", "query.since")
        position = cursor
        records = await collector.run_in_reader(lambda: store.windows_closed_after(
            deployment_id, position, limit=limit + 1))
        total = await collector.run_in_reader(store.window_count, deployment_id) if count else None
        more, records = len(records) > limit, records[:limit]
        if records:
            cursor = (records[-1].closed_at, records[-1].window)
        newest = max(records, key=lambda r: r.window) if latest and records else None
        return _window_page(records, total=total, more=more, cursor=cursor, latest=newest)
    total, cursor = await collector.run_in_reader(_closing_state, store, deployment_id)
    newest = after is None
    records = await collector.run_in_reader(lambda: store.windows_page(
        deployment_id, after=after, before=before, limit=limit + 1, newest=newest))
    more = len(records) > limit
    records = records[-limit:] if newest else records[:limit]
    return _window_page(records, total=total, more=more, cursor=cursor)


@analyst.get("/api/v1/windows/{window}", responses={200: {"model": Window, "description": "The window"},
                                                    **documented(404, 422)})
async def get_window(collector: CollectorDep, window: WindowIndex) -> JSONResponse:
    """One closed window with its recovered map."""
    records = await collector.run_in_reader(lambda: list(collector.store.windows(
        collector.deployment.deployment_id, window=window)))
    if not records:
        raise ReportError(404, "not_found", f"window {window} is not closed (or does not exist)", "window")
    return JSONResponse(records[0].as_dict())


@analyst.post("/api/v1/windows/{window}/close", responses={200: {"model": Window, "description": "The window, closed"},
                                                           **documented(404, 422, 503)})
async def close(collector: CollectorDep, window: WindowIndex) -> JSONResponse:
    """Close a window now and recover it from the reports that arrived."""
    record = await collector.close_window(window)
    if record is None:
        raise ReportError(404, "not_found", f"no sensor reported for window {window}", "window")
    return JSONResponse(record.as_dict())


def _attachment(collector: Collector, suffix: str) -> dict[str, str]:
    return {"Content-Disposition": f'attachment; filename="{collector.deployment.deployment_id}.{suffix}"'}


@exports.get("/api/v1/export.csv", response_class=StreamingResponse, responses={200: {"content": {"text/csv": {}}}})
async def export_csv(collector: CollectorDep) -> StreamingResponse:
    """Every closed window's map in long format, streamed: window, its start and end (ISO 8601 UTC), source,
    its coordinates (x_m[, y_m]), value, window metadata."""
    return StreamingResponse(views.export_csv_chunks(collector.deployment, collector.store), media_type="text/csv",
                             headers=_attachment(collector, "csv"))


@exports.get("/api/v1/export.json", response_class=StreamingResponse,
             responses={200: {"content": {"application/json": {}}}})
async def export_json(collector: CollectorDep) -> StreamingResponse:
    """The same table as a JSON array of rows (coordinates an array, window times ISO 8601 UTC), streamed."""
    return StreamingResponse(views.export_json_chunks(collector.deployment, collector.store),
                             media_type="application/json", headers=_attachment(collector, "json"))


@exports.get("/api/v1/export.parquet", response_class=StreamingResponse,
             responses={200: {"content": {"application/vnd.apache.parquet": {}}}})
async def export_parquet(collector: CollectorDep) -> Response:
    """The same table as Parquet (needs pyarrow), streamed a row group at a time."""
    pieces = views.export_parquet_chunks(collector.deployment, collector.store)
    if pieces is None:
        raise ReportError(501, "not_available", "Parquet export needs pyarrow: pip install pyarrow")
    return StreamingResponse(pieces, media_type="application/vnd.apache.parquet",
                             headers=_attachment(collector, "parquet"))


class CollectorApp(FastAPI):
    """FastAPI application whose two sensor ingest endpoints are answered before the framework's layers.

    ``POST /api/v1/reports`` and ``/api/v1/reports/batch`` go straight to :class:`IngestEndpoints`, which
    also serves the routes documenting them (:mod:`dpcloak.service.http_ingest`); every other request
    goes through FastAPI as usual, and its answer carries :data:`SECURITY_HEADERS`.

    Examples
    --------
    :func:`create_app` builds one and attaches the collector's ingest endpoints:

    >>> from dpcloak.service.store import Store, sqlite_url
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


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    collector: Collector = app.state.collector
    await collector.start()
    try:
        yield
    finally:
        await collector.stop()


async def _problem(request: Request, exc: Exception) -> Response:
    """Every exception of a request, answered as its problem (:func:`~dpcloak.service.problems.as_report_error`)."""
    full = None
    if storage_full(exc):  # e.g. an analyst's close while the disk is full: 503, one bounded account
        request.app.state.collector.storage.refused(str(getattr(exc, "orig", exc))[:200])
        full = ReportError(503, "storage_full", "the collector's database cannot write (disk full); retry after "
                           f"{STORAGE_RETRY_AFTER} s", retry_after=STORAGE_RETRY_AFTER)
    return problem_response(as_report_error(exc, storage_full=full), request.scope.get("headers") or ())


def create_app(collector: Collector, *, analyst_token: str, settings: Settings | None = None) -> CollectorApp:
    """The FastAPI application serving ``collector``: the ingest endpoints, the :data:`public`, :data:`analyst` and
    :data:`exports` routers, the dashboard; ``settings`` (kept as ``app.state.settings``) when built from them.

    Examples
    --------
    >>> import tempfile
    >>> from dpcloak.service.examples import two_sensor_store
    >>> tmp = tempfile.TemporaryDirectory()
    >>> deployment, store = two_sensor_store(tmp.name)
    >>> app = create_app(Collector(deployment, store, master_key=bytes(32)), analyst_token="t0ken")
    >>> for path in sorted(p for p in app.openapi()["paths"] if p.startswith("/api/v1/reports")):
    ...     print(path)
    /api/v1/reports
    /api/v1/reports/batch
    >>> store.dispose()
    >>> tmp.cleanup()
    """
    app = CollectorApp(title="dpcloak collector", version=__version__, lifespan=_lifespan, docs_url=None,
                       redoc_url=None,  # no interactive pages (they load scripts from a CDN): /openapi.json only
                       description="Collects differentially private sensor reports, recovers maps per window.")
    app.state.collector, app.state.analyst_token, app.state.settings = collector, analyst_token, settings
    app.ingest = IngestEndpoints(collector)
    app.router.routes.extend(app.ingest.routes())
    for router in (public, analyst, exports):
        app.include_router(router)
    app.include_router(totals.router, dependencies=[Depends(require_analyst)])
    for kind in (RequestValidationError, StarletteHTTPException, ReportError, Overloaded, Exception):
        app.add_exception_handler(kind, _problem)
    app.add_api_route("/", _dashboard, include_in_schema=False)
    app.mount("/dashboard", StaticFiles(directory=ASSETS, html=True), name="dashboard")
    app.add_middleware(BodyLimit)
    return app


async def _dashboard() -> RedirectResponse:
    return RedirectResponse("/dashboard/")

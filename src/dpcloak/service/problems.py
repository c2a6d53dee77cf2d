"""Error answers of the collector's web layer: every one is a :class:`~dpcloak.service.ingest.ReportError`
rendered here, as an RFC 9457 problem (:func:`~dpcloak.service.ingest.problem_details`).

The body is the same for every client; its media type is ``application/problem+json`` when the request's
``Accept`` asks for it and ``application/json`` otherwise (sensor nodes read ``error`` from an
``application/json`` answer, and a deployed fleet keeps working while the collector is upgraded).
:func:`as_report_error` turns whatever an analyst route raised (validation, an HTTP error, overload, a full
disk, a bug) into one; :func:`documented` writes the OpenAPI ``responses`` of the statuses a route answers.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException
from starlette.responses import Response

from dpcloak.service.ingest import PROBLEM_JSON, ReportError

__all__ = ["ErrorBody", "documented", "problem_media_type", "encode", "problem_response", "as_report_error",
           "malformed", "error_field"]

log = logging.getLogger("dpcloak.service")


class ErrorBody(BaseModel):
    """Every error answer (RFC 9457): the problem's ``type`` (one per error code), the status's ``title``, the
    ``status``, the ``detail``; and the short form: ``error`` code, ``message``, the field at fault and, for 429
    and 503, the wait in seconds.

    Examples
    --------
    >>> err = ReportError(422, "malformed", "value: Input should be a valid number", "value")
    >>> ErrorBody.model_validate(err.problem()).field
    'value'
    """

    type: str = Field(description="urn:dpcloak:error:<error>")
    title: str = Field(description="The HTTP status's phrase.")
    status: int
    detail: str
    error: str = Field(description="Machine-readable error code.")
    message: str = Field(description="The same as detail.")
    field: str | None = None
    retry_after: int | None = None


_WHY = {401: "No valid credential (a report's MAC, or the analyst token)", 403: "The credential may not do this",
        404: "Another deployment, or no such window", 409: "Conflicts with what is stored (see error)",
        413: "Body larger than the collector accepts", 415: "Not sent as Content-Type: application/json",
        422: "Malformed or out of range (see field)",
        429: "This sensor's flood limit, or too many failed authentications from this address: retry after Retry-After",
        501: "This collector lacks an optional package the request needs",
        503: "Overloaded or the database cannot write: retry after Retry-After (nothing stored)"}
_RETRY_AFTER = {"Retry-After": {"description": "Seconds to wait before resending", "schema": {"type": "integer"}}}
_ERROR_SCHEMA = {"$ref": "#/components/schemas/ErrorBody"}


def documented(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for the error statuses a route answers: an :class:`ErrorBody` as ``application/json``
    and as ``application/problem+json``, with ``Retry-After`` for 429 and 503.

    Examples
    --------
    >>> sorted(documented(401, 503)), "headers" in documented(503)[503]
    ([401, 503], True)
    >>> sorted(documented(401)[401]["content"])
    ['application/problem+json']
    """
    return {s: {"model": ErrorBody, "description": _WHY[s], "content": {PROBLEM_JSON: {"schema": _ERROR_SCHEMA}},
                **({"headers": _RETRY_AFTER} if s in (429, 503) else {})} for s in statuses}


def problem_media_type(headers: Iterable[tuple[bytes, bytes]]) -> str:
    """``application/problem+json`` when the request's ``Accept`` names it (with a q-value above 0), else
    ``application/json``.

    Examples
    --------
    >>> problem_media_type([(b"accept", b"application/problem+json, application/json;q=0.5")])
    'application/problem+json'
    >>> problem_media_type([(b"accept", b"*/*")]), problem_media_type([])
    ('application/json', 'application/json')
    >>> problem_media_type([(b"accept", b"application/problem+json;q=0")])
    'application/json'
    """
    for name, value in headers:
        if name == b"accept":
            for item in value.decode("latin-1").lower().split(","):
                media, *params = (part.strip() for part in item.split(";"))
                if media == PROBLEM_JSON and not any(p.replace(" ", "") in ("q=0", "q=0.0", "q=0.00", "q=0.000")
                                                     for p in params):
                    return PROBLEM_JSON
    return "application/json"


def encode(body: Mapping[str, Any]) -> bytes:
    """JSON bytes as Starlette's ``JSONResponse`` renders them.

    Examples
    --------
    >>> encode({"a": 1, "b": "é"})
    b'{"a":1,"b":"\\xc3\\xa9"}'
    """
    return json.dumps(body, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")).encode()


def problem_response(err: ReportError, headers: Iterable[tuple[bytes, bytes]] = ()) -> Response:
    """The answer of ``err``: its :meth:`~dpcloak.service.ingest.ReportError.problem`, status and headers, in the
    media type the request's ``headers`` ask for (:func:`problem_media_type`).

    Examples
    --------
    >>> resp = problem_response(ReportError(503, "overloaded", "retry after 1 s", retry_after=1))
    >>> resp.status_code, resp.media_type, resp.headers["retry-after"], json.loads(resp.body)["title"]
    (503, 'application/json', '1', 'Service Unavailable')
    """
    return Response(encode(err.problem()), status_code=err.status, headers=err.headers(),
                    media_type=problem_media_type(headers))


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
    """The 422 of a request that does not validate: the first error, naming its field.

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


_HTTP_CODES = {401: "unauthenticated", 404: "not_found", 405: "method_not_allowed", 413: "too_large"}


def as_report_error(exc: Exception, *, storage_full: ReportError | None = None) -> ReportError:
    """What an exception raised while answering a request is answered with.

    A :class:`~dpcloak.service.ingest.ReportError` as it is; a validation error (FastAPI's, or pydantic's)
    as :func:`malformed`; an HTTP error with its status; :class:`~dpcloak.service.collector.Overloaded` as
    its 503; anything else — a bug — as a 500 naming no detail (logged), or ``storage_full`` when given
    (the caller saw the database refuse to write).

    Examples
    --------
    >>> as_report_error(HTTPException(405, "Method Not Allowed")).body()
    {'error': 'method_not_allowed', 'message': 'Method Not Allowed'}
    >>> as_report_error(ZeroDivisionError("x")).status  # logged on the collector, never shown
    500
    """
    from fastapi.exceptions import RequestValidationError
    from pydantic import ValidationError

    from dpcloak.service.collector import Overloaded

    if isinstance(exc, ReportError):
        return exc
    if isinstance(exc, RequestValidationError):
        return malformed(exc.errors())
    if isinstance(exc, ValidationError):
        return malformed(exc.errors(include_url=False, include_input=False))
    if isinstance(exc, HTTPException):
        challenge = (exc.headers or {}).get("WWW-Authenticate")
        return ReportError(exc.status_code, _HTTP_CODES.get(exc.status_code, "error"), str(exc.detail),
                           challenge=challenge)
    if isinstance(exc, Overloaded):
        return exc.error
    if storage_full is not None:
        return storage_full
    log.error("internal error: %s: %s", type(exc).__name__, exc)
    return ReportError(500, "internal", "internal error (logged on the collector)")


"""Schema fuzzing of the collector's OpenAPI document (schemathesis + hypothesis) against the real process.

Every operation of ``/openapi.json`` gets ``DPCLOAK_FUZZ_EXAMPLES`` generated requests (default 200;
the reliability run used 2,000, see docs/reliability.md), valid and invalid by the schema, with the
analyst token on analyst operations. Oracles: no status ≥ 500, every body JSON (or the CSV/Parquet
export), no traceback in any response nor in the collector's log, and a healthy collector and
database at the end. Bounded: a fixed number of examples, no shrinking, no example database.
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

schemathesis = pytest.importorskip("schemathesis", reason="fuzzing needs schemathesis (the dev extra)")

from hypothesis import HealthCheck, Phase, settings  # noqa: E402

from dpcloak.service.store import sqlite_url  # noqa: E402

from ._reliability import fast_deployment, integrity_problems  # noqa: E402
from .conftest import CollectorProcess  # noqa: E402

EXAMPLES = int(os.environ.get("DPCLOAK_FUZZ_EXAMPLES", "200"))
SENT: Counter[str] = Counter()
STATUSES: Counter[tuple[str, int]] = Counter()


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CollectorProcess]:
    directory: Path = tmp_path_factory.mktemp("fuzz")
    fast_deployment(directory, cols=3, rows=2)
    db_url = sqlite_url(directory / "collector.db")
    proc = CollectorProcess(directory, db_url, directory / "collector.log")
    yield proc
    proc.stop()
    if SENT:
        print("\nfuzzed requests per operation:", dict(SENT), "statuses:", dict(STATUSES))
    assert "Traceback" not in proc.log() and "internal error" not in proc.log()
    assert integrity_problems(db_url) == []


def _send(case, fuzzed: CollectorProcess) -> None:  # type: ignore[no-untyped-def]
    headers = {"Authorization": f"Bearer {fuzzed.token}"} if "sensors" not in (case.operation.tags or []) else {}
    response = case.call(base_url=fuzzed.url, headers=headers, timeout=60)
    label = f"{case.method} {case.operation.path}"
    SENT[label] += 1
    STATUSES[label, response.status_code] += 1
    assert response.status_code < 500, (label, response.status_code, response.content[:300])
    assert b"Traceback" not in response.content
    if response.status_code >= 400:
        content_type = response.headers.get("content-type") or [""]  # schemathesis: header -> list of values
        assert content_type[0].startswith("application/json")  # no Accept: application/problem+json asked
        problem = response.json()  # an RFC 9457 problem with the short form's members (dpcloak.service.problems)
        assert {"type", "title", "status", "detail", "error", "message"} <= set(problem) <= {
            "type", "title", "status", "detail", "error", "message", "field", "retry_after"}
        assert problem["status"] == response.status_code and problem["detail"] == problem["message"]


def test_every_operation_without_server_error_nor_traceback(fuzzed: CollectorProcess) -> None:
    from hypothesis import given
    from hypothesis.errors import Unsatisfiable

    schema = schemathesis.openapi.from_url(fuzzed.url + "/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 10
    for operation in operations:
        for mode in (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE):

            @given(case=operation.as_strategy(mode))
            @settings(max_examples=EXAMPLES // 2, deadline=None, database=None, phases=[Phase.generate],
                      suppress_health_check=list(HealthCheck))
            def fuzz(case) -> None:  # type: ignore[no-untyped-def]
                _send(case, fuzzed)

            with contextlib.suppress(Unsatisfiable):  # nothing invalid to generate (no parameters)
                fuzz()
    print(f"\n{sum(SENT.values())} requests, {len(SENT)} operations")


CONFORMANCE_EXAMPLES = int(os.environ.get("DPCLOAK_CONFORMANCE_EXAMPLES", "6"))
"""Examples per operation and generation mode of the conformance run (bounded: under a minute in CI)."""


def test_every_answer_conforms_to_the_openapi_document(fuzzed: CollectorProcess) -> None:
    """Issue 33 item 6: the schema lists every status and media type the collector answers. Schemathesis's own
    conformance checks (status code, content type, response headers and body schema) on every answer of a
    bounded run, positive and negative: 0 failures."""
    import time

    from hypothesis import given
    from hypothesis.errors import Unsatisfiable
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        response_headers_conformance,
        response_schema_conformance,
        status_code_conformance,
    )

    checks = [status_code_conformance, content_type_conformance, response_headers_conformance,
              response_schema_conformance]
    schema = schemathesis.openapi.from_url(fuzzed.url + "/openapi.json")
    failures: list[str] = []
    started = time.monotonic()
    for operation in [result.ok() for result in schema.get_all_operations()]:
        for mode in (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE):

            @given(case=operation.as_strategy(mode))
            @settings(max_examples=CONFORMANCE_EXAMPLES, deadline=None, database=None, phases=[Phase.generate],
                      suppress_health_check=list(HealthCheck))
            def conform(case) -> None:  # type: ignore[no-untyped-def]
                tags = case.operation.tags or []
                headers = {"Authorization": f"Bearer {fuzzed.token}"} if "sensors" not in tags else {}
                response = case.call(base_url=fuzzed.url, headers=headers, timeout=60)
                try:
                    case.validate_response(response, checks=checks)
                except (Exception, BaseExceptionGroup) as exc:  # collected, all reported at the end
                    failures.append(f"{case.method} {case.operation.path} -> {response.status_code}: "
                                    f"{str(exc).splitlines()[0][:200]}")

            with contextlib.suppress(Unsatisfiable):
                conform()
    print(f"\nconformance run: {time.monotonic() - started:.0f} s, {len(failures)} failure(s)")
    assert failures == [], "\n".join(sorted(set(failures)))

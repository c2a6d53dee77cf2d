"""Overload: more than the collector can take gives 503/429 with Retry-After, never a crash or a lost report.

A real ``dpcloak serve`` with a small back-pressure limit (``--max-pending 1000``) gets 24 gateway
batches of 990 reports at once (99 sensors x 240 windows: more per sensor than the flood limit's
burst, and more at once than the limit). Refused reports are resent after the ``Retry-After`` they were
given until all are acknowledged. Oracles: only 200/201 per report, 503 per batch or 429 per report,
each refusal with ``Retry-After``; the collector still answers; the database holds every report
exactly once; no traceback in the log.
"""

from __future__ import annotations

import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from dpcloak.service.store import sqlite_url

from ._reliability import Signer, fast_deployment, integrity_problems, stored_reports
from .conftest import CollectorProcess

WINDOWS, SENSORS, PER_BATCH_WINDOWS = 240, 99, 10


def _post(client: httpx.Client, batch: list[dict[str, Any]]) -> tuple[int, int, list[int]]:
    resp = client.post("/api/v1/reports/batch", json={"reports": batch})
    retry = int(resp.headers.get("Retry-After", "0"))
    if resp.status_code == 503:
        assert retry >= 1 and resp.json()["error"] == "overloaded"
        return 503, retry, [503] * len(batch)
    assert resp.status_code == 200, resp.text[:300]
    statuses = [r["http_status"] for r in resp.json()["results"]]
    assert set(statuses) <= {200, 201, 429}
    assert (429 in statuses) == (retry >= 1)
    return 200, retry, statuses


@pytest.mark.slow
def test_overload_is_refused_with_retry_after_and_nothing_is_lost(tmp_path: Path) -> None:
    dep = fast_deployment(tmp_path)  # 100 sensors; sensor 99 never reports, so no window fills up
    signer = Signer(tmp_path, dep)
    reports = [signer.report(j, w, cells=j) for w in range(WINDOWS) for j in range(SENSORS)]
    db_url = sqlite_url(tmp_path / "collector.db")
    proc = CollectorProcess(tmp_path, db_url, tmp_path / "collector.log", extra=("--max-pending", "1000"))
    seen: Counter[int] = Counter()
    rounds = 0
    try:
        todo = reports
        deadline = time.monotonic() + 240
        with httpx.Client(base_url=proc.url, timeout=120) as client, ThreadPoolExecutor(max_workers=24) as pool:
            while todo:
                assert time.monotonic() < deadline, f"{len(todo)} reports still refused after 240 s"
                size = SENSORS * PER_BATCH_WINDOWS
                batches = [todo[i:i + size] for i in range(0, len(todo), size)]
                results = list(pool.map(lambda b: _post(client, b), batches))
                rounds += 1
                for status, _, statuses in results:
                    seen[status] += 1
                    seen.update(f"report {s}" for s in statuses if status == 200)  # type: ignore[arg-type]
                todo = [r for batch, (_, _, statuses) in zip(batches, results, strict=True)
                        for r, s in zip(batch, statuses, strict=True) if s not in (200, 201)]
                if todo:
                    time.sleep(max(retry for _, retry, _ in results))
            assert client.get("/api/v1/health").status_code == 200
    finally:
        proc.stop()
    print(f"\noverload: {len(reports)} reports in {rounds} rounds; batch answers and per-report statuses {dict(seen)}")
    assert seen[503] + seen["report 429"] > 0  # type: ignore[index]
    stored = stored_reports(db_url)
    assert sorted(stored) == sorted((r["window"], r["sensor"], r["report_id"], r["value"]) for r in reports)
    assert integrity_problems(db_url) == []
    assert "Traceback" not in proc.log()

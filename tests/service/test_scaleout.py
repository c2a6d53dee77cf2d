"""Scale-out: two collector processes on one PostgreSQL database, on two ports, ingesting concurrently.

Every report is sent to *both* collectors at the same moment (two threads, as a load balancer retrying
on the other backend would), in a random order of sensors and windows. Oracle: the database's unique
constraints decide — each report is stored exactly once, exactly one of its two copies is answered
201 and the other 200 (duplicate), nothing is lost; the windows, closed afterwards through one
collector, are recovered once each from every sensor. ``amcheck`` verifies the indexes.
"""

from __future__ import annotations

import random
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from ._reliability import Signer, fast_deployment, integrity_problems, stored_reports, stored_windows
from .conftest import CollectorProcess

WINDOWS = 8


@pytest.mark.slow
def test_two_collectors_on_postgresql_store_each_report_once(tmp_path: Path, postgres_url: str) -> None:
    dep = fast_deployment(tmp_path, cols=5, rows=4)
    signer = Signer(tmp_path, dep)
    first = CollectorProcess(tmp_path, postgres_url, tmp_path / "collector-a.log")
    try:
        second = CollectorProcess(tmp_path, postgres_url, tmp_path / "collector-b.log")
    except Exception:
        first.stop()
        raise
    reports = [signer.report(j, w, cells=j) for w in range(WINDOWS) for j in range(dep.n_sensors)]
    random.Random(15).shuffle(reports)
    try:
        with httpx.Client(base_url=first.url, timeout=60) as a, httpx.Client(base_url=second.url, timeout=60) as b, \
                ThreadPoolExecutor(max_workers=8) as pool:
            futures = [(r["report_id"], pool.submit(client.post, "/api/v1/reports", json=r))
                       for r in reports for client in (a, b)]
            answers: dict[str, list[int]] = {}
            for rid, fut in futures:
                answers.setdefault(rid, []).append(fut.result().status_code)
        with first.analyst() as analyst:
            for w in range(WINDOWS):
                assert analyst.post(f"/api/v1/windows/{w}/close").status_code == 200
        with second.analyst() as analyst:  # the other collector sees the same windows
            assert len(analyst.get("/api/v1/windows").json()["windows"]) == WINDOWS
    finally:
        first.stop()
        second.stop()
    assert Counter(tuple(sorted(s)) for s in answers.values()) == {(200, 201): len(reports)}
    stored = stored_reports(postgres_url)
    assert sorted(stored) == sorted((r["window"], r["sensor"], r["report_id"], r["value"]) for r in reports)
    assert stored_windows(postgres_url) == [(w, list(range(dep.n_sensors))) for w in range(WINDOWS)]
    assert integrity_problems(postgres_url) == []
    assert "Traceback" not in first.log() + second.log()

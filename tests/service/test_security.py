"""Security of the collector as a real process: impersonation, binding, replay, skew, floods, injection.

One ``dpcloak serve`` process (SQLite) serves most tests; the SQL-injection test runs on SQLite and
on PostgreSQL. Oracles: the status table of :mod:`dpcloak.service.ingest` (and 429 of
:mod:`dpcloak.service.limits`), the database read directly (nothing stored that should not be), and
the collector's log (no traceback).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from dpcloak.service import _network
from dpcloak.service.auth import sign_report
from dpcloak.service.config import Deployment, load_master_key, sensor_key
from dpcloak.service.limits import BURST
from dpcloak.service.poisoning import acceptance_cells
from dpcloak.service.store import sqlite_url

from ._reliability import Signer, fast_deployment, integrity_problems, stored_reports
from .conftest import CollectorProcess

PAST = 5000
"""Window 0 started 5,000 s ago; with a grace period of 3,600 s, windows below ~1,400 are closed."""


class Served:
    def __init__(self, directory: Path, db_url: str) -> None:
        self.directory, self.db_url = directory, db_url
        self.proc = CollectorProcess(directory, db_url, directory / "collector.log")
        self.dep: Deployment = self.proc.deployment
        self.signer = Signer(directory, self.dep)
        self.client = httpx.Client(base_url=self.proc.url, timeout=60.0)

    @property
    def now(self) -> int:
        """The collector's current window."""
        return self.dep.window_at(time.time())

    def post(self, body: Any, path: str = "/api/v1/reports") -> httpx.Response:
        resp = self.client.post(path, json=body)
        assert resp.status_code < 500 and "Traceback" not in resp.text, resp.text
        assert resp.headers["content-type"].startswith("application/json")
        return resp

    def close(self) -> None:
        self.client.close()
        self.proc.stop()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    directory = tmp_path_factory.mktemp("security")
    fast_deployment(directory, cols=3, rows=2, past_windows=PAST)
    s = Served(directory, sqlite_url(directory / "collector.db"))
    yield s
    s.close()
    assert "Traceback" not in s.proc.log()
    assert integrity_problems(s.db_url) == []


def test_key_of_another_sensor_is_403_and_nothing_stored(served: Served) -> None:
    body = served.signer.report(1, served.now)
    body["sensor"], body["key_id"] = 2, 1  # sensor 1's key, sensor 2's id (MAC recomputed under key 1)
    body["mac"] = sign_report(served.signer.keys[1], deployment_id=body["deployment"], fingerprint=body["fingerprint"],
                              sensor=2, window=body["window"], report_id=body["report_id"], value=body["value"])
    resp = served.post(body)
    assert resp.status_code == 403 and resp.json()["error"] == "forbidden"
    body["key_id"] = 2  # claiming to be signed by sensor 2 does not help: sensor 1 lacks that key
    assert served.post(body).status_code == 401
    assert body["report_id"] not in {r for _, _, r, _ in stored_reports(served.db_url)}


def test_report_bound_to_another_deployment_or_configuration_is_rejected(served: Served, tmp_path: Path) -> None:
    other_dir = tmp_path / "other"
    other_dir.mkdir()
    other = fast_deployment(other_dir, cols=3, rows=2, past_windows=PAST)  # same network, another id and keys
    theirs = Signer(other_dir, other).report(0, served.now)
    resp = served.post(theirs)
    assert resp.status_code == 404 and resp.json()["error"] == "unknown_deployment"
    # our id, but the fingerprint of a weaker configuration, correctly signed with our sensor's key
    body = served.signer.report(0, served.now)
    weaker = _network.floor_plan_network(width=20.0, height=20.0, sensor_cols=3, sensor_rows=2, epsilon=8.0,
                                         delta=1e-6, budget=(1e4, 1e-5), spacing=4.0, diffusion=8.0, move=4.0,
                                         reading_high=100.0)
    weak_dep = Deployment(deployment_id=served.dep.deployment_id, network=weaker.to_dict(),
                          window_seconds=served.dep.window_seconds, start=served.dep.start,
                          period_windows=served.dep.period_windows, grace_seconds=served.dep.grace_seconds)
    body["fingerprint"] = weak_dep.fingerprint
    body["mac"] = sign_report(served.signer.keys[0], deployment_id=body["deployment"], fingerprint=weak_dep.fingerprint,
                              sensor=0, window=body["window"], report_id=body["report_id"], value=body["value"])
    resp = served.post(body)
    assert resp.status_code == 409 and resp.json()["error"] == "wrong_configuration"


def test_replayed_and_reordered_reports(served: Served) -> None:
    w = served.now - 3
    later, earlier = served.signer.report(3, w + 2), served.signer.report(3, w)
    assert served.post(later).status_code == 201
    assert served.post(earlier).status_code == 201  # out of order within open windows: accepted
    assert served.post(earlier).json()["status"] == "duplicate"  # a retry: acknowledged, stored once
    moved = {**earlier, "window": w + 1}  # the same signed report replayed into another window
    assert served.post(moved).status_code == 401
    # a report id keys its slot: the sensor's own signed reading for a free slot is new, not a replay
    reused = served.signer.report(3, w + 1, report_id=earlier["report_id"], cells=5)
    assert served.post(reused).status_code == 201
    # a different report for a taken slot is a security event that flags the sensor for the rest of this
    # module's collector: tests/service/test_api.py covers it on a collector of its own
    mine = [(ww, r) for ww, s, r, _ in stored_reports(served.db_url) if s == 3]
    assert sorted(mine) == sorted([(w, earlier["report_id"]), (w + 1, earlier["report_id"]),
                                   (w + 2, later["report_id"])])


def test_clock_skew_beyond_the_declared_precision(served: Served) -> None:
    ahead = served.post(served.signer.report(4, served.now + 5))  # the sensor's clock 3 windows ahead
    assert ahead.status_code == 422 and ahead.json()["error"] == "window_in_future"
    assert served.post(served.signer.report(4, served.now + 1)).status_code == 201  # one window: tolerated
    behind = served.post(served.signer.report(4, served.now - 4000))  # beyond the grace period
    assert behind.status_code == 409 and behind.json()["error"] == "window_closed"


def test_oversized_bodies_are_413_before_parsing(served: Served) -> None:
    big = b'{"reports": [' + b" " * (1 << 20) + b"]}"
    resp = served.client.post("/api/v1/reports/batch", content=big, headers={"content-type": "application/json"})
    assert resp.status_code == 413 and resp.json()["error"] == "too_large"

    def chunks() -> Iterator[bytes]:  # no Content-Length: the limit applies to the streamed bytes
        for _ in range(20):
            yield b" " * 65536

    resp = served.client.post("/api/v1/reports", content=chunks(), headers={"content-type": "application/json"})
    assert resp.status_code == 413


def test_flood_from_one_sensor_is_429_with_retry_after(served: Served) -> None:
    # unauthenticated junk in sensor 5's name does not use up its allowance
    junk = [{**served.signer.report(5, served.now), "mac": "0" * 64} for _ in range(BURST + 20)]
    out = served.post({"reports": junk[:1000]}, "/api/v1/reports/batch").json()
    assert {r["http_status"] for r in out["results"]} == {401}
    body = served.signer.report(5, served.now - 1)
    copies = BURST + 50
    resp = served.post({"reports": [body] * copies}, "/api/v1/reports/batch")
    statuses = [r["http_status"] for r in resp.json()["results"]]
    assert statuses[0] == 201 and set(statuses[1:BURST]) == {200}  # the burst: the report and its retries
    assert statuses.count(429) >= copies - BURST - 5  # then limited (a few tokens refill meanwhile)
    assert int(resp.headers["Retry-After"]) >= 1
    singles = []  # one request at a time, faster than the refill (10 per window of 1 s)
    while len(singles) < 100 and (not singles or singles[-1].status_code != 429):
        singles.append(served.post(body))
    single = singles[-1]
    assert single.status_code == 429 and int(single.headers["Retry-After"]) >= 1
    assert single.json()["error"] == "rate_limited"
    assert served.post(served.signer.report(0, served.now - 1)).status_code == 201  # other sensors unaffected
    assert sum(s == 5 for _, s, _, _ in stored_reports(served.db_url)) == 1


def test_analyst_endpoints_need_the_analyst_credential(served: Served) -> None:
    paths = ["/api/v1/deployment", "/api/v1/sensors", "/api/v1/windows", "/api/v1/windows/0", "/api/v1/export.csv",
             "/api/v1/export.json", "/api/v1/export.parquet"]
    master = load_master_key(served.directory)
    key = sensor_key(master, deployment_id=served.dep.deployment_id, sensor=0)
    report = served.signer.report(0, served.now)
    wrong = [None, key.hex(), report["mac"], served.dep.fingerprint, json.dumps(report), master.hex()]
    for path in paths:
        for token in wrong:
            headers = {} if token is None else {"Authorization": f"Bearer {token}"}
            resp = served.client.get(path, headers=headers)
            assert resp.status_code == 401, (path, token)
        assert served.client.get(path, headers={"Authorization": f"Bearer {served.proc.token}"}).status_code in (
            200, 404, 501)
    for token in wrong[1:]:
        assert served.client.post("/api/v1/windows/3/close",
                                  headers={"Authorization": f"Bearer {token}"}).status_code == 401
    # and the analyst token is no sensor key: a report signed with it does not verify
    body = served.signer.report(0, served.now)
    body["mac"] = sign_report(served.proc.token.encode(), deployment_id=body["deployment"],
                              fingerprint=body["fingerprint"], sensor=0, window=body["window"],
                              report_id=body["report_id"], value=body["value"])
    assert served.post(body).status_code == 401


def test_values_outside_what_the_noise_can_produce_are_rejected(served: Served) -> None:
    net = served.dep.sensor_network
    low, high = acceptance_cells(net)
    assert high is not None
    w = served.now - 10
    assert served.post(served.signer.report(1, w, cells=high)).status_code == 201  # the extreme genuine value
    assert served.post(served.signer.report(2, w, cells=low)).status_code == 201
    for sensor, cells in ((3, high + 1), (4, low - 1), (5, 10**15)):
        resp = served.post(served.signer.report(sensor, w, cells=cells))
        assert resp.status_code == 422 and resp.json()["field"] == "value"
    assert sorted(s for ww, s, _, _ in stored_reports(served.db_url) if ww == w) == [1, 2]


INJECTIONS = ["'; DROP TABLE reports; --", "\" OR 1=1 --", "x') ON CONFLICT DO NOTHING; --", "1; SELECT pg_sleep(5)",
              "\\x00'", "ab' UNION SELECT * FROM deployments --"]


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_sql_injection_in_every_string_field(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    dep = fast_deployment(tmp_path, cols=2, rows=1, past_windows=PAST)
    db_url = sqlite_url(tmp_path / "collector.db") if backend == "sqlite" else request.getfixturevalue("postgres_url")
    s = Served(tmp_path, db_url)
    try:
        assert s.post(s.signer.report(0, s.now)).status_code == 201
        before = stored_reports(db_url)
        for field in ("deployment", "fingerprint", "report_id", "mac"):
            for attack in INJECTIONS:
                body = s.signer.report(1, s.now)
                body[field] = attack
                resp = s.post(body)
                assert resp.status_code == 422 and resp.json()["field"] == field
                batch = s.post({"reports": [body]}, "/api/v1/reports/batch")
                assert batch.status_code == 422
        for attack in INJECTIONS:  # in the URL and in the analyst header
            for method, path in (("GET", f"/api/v1/windows/{attack}"), ("POST", f"/api/v1/windows/{attack}/close")):
                resp = s.client.request(method, path, headers={"Authorization": f"Bearer {s.proc.token}"})
                assert resp.status_code in (404, 422) and "Traceback" not in resp.text
            assert s.client.get("/api/v1/windows", headers={"Authorization": f"Bearer {attack}"}).status_code == 401
        assert stored_reports(db_url) == before
        assert s.client.get("/api/v1/health").json()["deployment"] == dep.deployment_id
        assert integrity_problems(db_url) == []
    finally:
        s.close()
    assert "Traceback" not in s.proc.log()

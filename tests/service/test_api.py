"""The collector's answers to wrong, replayed, malformed and out-of-window reports (in-process ASGI app).

Oracle: the documented status table of :mod:`dpcloak.service.ingest`; the database (via ``Store``)
for "nothing stored". Every response must be JSON without a traceback, never a 500.
"""

from __future__ import annotations

import datetime
import io
import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from dpcloak.service import poisoning
from dpcloak.service.app import create_app
from dpcloak.service.auth import sign_report, verify_report
from dpcloak.service.collector import Collector
from dpcloak.service.config import (
    Deployment,
    analyst_token,
    load_deployment,
    load_master_key,
    sensor_key,
    write_deployment,
)
from dpcloak.service.store import Store, sqlite_url

from .conftest import make_deployment


class Harness:
    def __init__(self, directory: Path) -> None:
        self.deployment: Deployment = load_deployment(directory)
        self.master = load_master_key(directory)
        self.store = Store(sqlite_url(directory / "api.db"))
        self.collector = Collector(self.deployment, self.store, master_key=self.master)
        self.token = analyst_token(self.master, deployment_id=self.deployment.deployment_id)
        self.client = TestClient(create_app(self.collector, analyst_token=self.token), raise_server_exceptions=False)
        self.net = self.deployment.sensor_network
        self.auth = {"Authorization": f"Bearer {self.token}"}

    def report(self, sensor: int = 4, window: int = 3, *, key_of: int | None = None, value: float | None = None,
               report_id: str | None = None, **override: Any) -> dict[str, Any]:
        dep = self.deployment
        v = float(self.net.privatize_reading(sensor, 1.0)) if value is None else value
        rid = report_id or secrets.token_hex(16)
        signer = sensor if key_of is None else key_of
        body = {"deployment": dep.deployment_id, "fingerprint": dep.fingerprint, "sensor": sensor, "key_id": signer,
                "window": window, "report_id": rid, "value": v}
        body.update(override)
        body["mac"] = sign_report(sensor_key(self.master, deployment_id=dep.deployment_id, sensor=signer),
                                  deployment_id=body["deployment"], fingerprint=body["fingerprint"],
                                  sensor=body["sensor"], window=body["window"], report_id=body["report_id"],
                                  value=body["value"])
        return body

    def post(self, body: Any) -> Any:
        resp = self.client.post("/api/v1/reports", json=body)
        assert resp.status_code != 500 and "Traceback" not in resp.text
        assert resp.headers["content-type"].startswith("application/json")
        return resp

    def stored(self) -> int:
        return len(self.store.all_reports(self.deployment.deployment_id))


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Harness]:
    make_deployment(tmp_path, sensor_rows=2, sensor_cols=3)
    h = Harness(tmp_path)
    with h.client:
        yield h
    h.store.dispose()


def test_valid_report_is_stored_once_and_retry_is_idempotent(api: Harness) -> None:
    body = api.report()
    first = api.post(body)
    assert first.status_code == 201 and first.json()["status"] == "stored"
    again = api.post(body)
    assert again.status_code == 200 and again.json()["status"] == "duplicate"
    assert api.stored() == 1


def test_wrong_key_is_401(api: Harness) -> None:
    body = api.report()
    body["mac"] = sign_report(secrets.token_bytes(32), deployment_id=body["deployment"],
                              fingerprint=body["fingerprint"], sensor=body["sensor"], window=body["window"],
                              report_id=body["report_id"], value=body["value"])
    resp = api.post(body)
    assert resp.status_code == 401
    assert resp.json()["error"] == "unauthenticated" and resp.json()["field"] == "mac"
    assert api.stored() == 0


def test_tampered_value_is_401(api: Harness) -> None:
    body = api.report()
    body["value"] = body["value"] + api.net.resolution
    assert api.post(body).status_code == 401
    assert api.stored() == 0


def test_key_of_another_sensor_is_403(api: Harness) -> None:
    resp = api.post(api.report(sensor=4, key_of=3))
    assert resp.status_code == 403
    assert resp.json()["error"] == "forbidden" and resp.json()["field"] == "sensor"
    assert api.stored() == 0


def test_a_second_different_report_for_a_slot_is_a_security_event(api: Harness) -> None:
    """Issue 28 defect 3: a second, different authenticated value for a slot is never kept silently: 409, both
    reports kept as evidence (the new one with its MAC, re-verified here), the sensor refused from then on, the
    event in the analyst API; an identical resend stays an idempotent duplicate. Oracle: the database and an
    independent HMAC of the evidence."""
    body = api.report(sensor=1, window=2)
    assert api.post(body).status_code == 201
    assert api.post(body).json()["status"] == "duplicate"  # an identical resend: idempotent, no event
    assert api.client.get("/api/v1/security-events", headers=api.auth).json() == {"events": [], "flagged": []}
    same_id_other_value = api.report(sensor=1, window=2, report_id=body["report_id"],
                                     value=body["value"] + api.net.resolution)
    resp = api.post(same_id_other_value)
    assert resp.status_code == 409 and resp.json()["error"] == "conflict" and resp.json()["field"] == "window"
    assert body["report_id"] in resp.json()["message"] and "security event" in resp.json()["message"]
    assert [(r.window, r.value) for r in api.store.all_reports(api.deployment.deployment_id)] == [(2, body["value"])]
    later = api.post(api.report(sensor=1, window=3))  # the flagged sensor's next report, another window
    assert later.status_code == 403 and later.json()["error"] == "sensor_flagged"
    assert api.post(body).status_code == 403  # even its own stored report is no longer acknowledged
    assert api.post(api.report(sensor=2, window=3)).status_code == 201  # other sensors are not affected
    events = api.client.get("/api/v1/security-events", headers=api.auth).json()
    assert events["flagged"] == [{"sensor": 1, "generation": 0}]
    [event] = events["events"]
    assert (event["sensor"], event["window"], event["kind"]) == (1, 2, "slot_conflict")
    assert event["stored"]["report_id"] == body["report_id"] and event["stored"]["value"] == body["value"]
    got = event["received"]
    assert got["value"] == same_id_other_value["value"] and got["mac"] == same_id_other_value["mac"]
    key = sensor_key(api.master, deployment_id=api.deployment.deployment_id, sensor=1)
    assert verify_report(key, got["mac"], deployment_id=api.deployment.deployment_id,
                         fingerprint=api.deployment.fingerprint, sensor=1, window=2, report_id=got["report_id"],
                         value=got["value"])  # the evidence is signed by the sensor's own key
    assert api.stored() == 2


def test_the_flag_survives_a_restart_and_a_fresh_noise_report_is_also_an_event(tmp_path: Path) -> None:
    make_deployment(tmp_path, sensor_rows=2, sensor_cols=3)
    h = Harness(tmp_path)
    with h.client:
        assert h.post(h.report(sensor=4, window=2)).status_code == 201
        assert h.post(h.report(sensor=4, window=2)).status_code == 409  # another report id: fresh noise
    h.store.dispose()
    again = Harness(tmp_path)  # a restarted collector on the same database
    with again.client:
        resp = again.post(again.report(sensor=4, window=3))
        assert resp.status_code == 403 and resp.json()["error"] == "sensor_flagged"
    again.store.dispose()


@pytest.mark.parametrize(("mutate", "field"), [
    (lambda b: b.pop("value"), "value"),
    (lambda b: b.update(value="12.5"), "value"),
    (lambda b: b.update(window=-1), "window"),
    (lambda b: b.update(sensor=True), "sensor"),
    (lambda b: b.update(mac="zz"), "mac"),
    (lambda b: b.update(report_id="a b"), "report_id"),
    (lambda b: b.update(extra=1), "extra"),
])
def test_malformed_body_is_422_naming_the_field(api: Harness, mutate: Any, field: str) -> None:
    body = api.report()
    mutate(body)
    resp = api.post(body)
    assert resp.status_code == 422
    assert resp.json()["error"] == "malformed" and resp.json()["field"] == field
    assert field in resp.json()["message"]


def test_non_json_body_is_422(api: Harness) -> None:
    resp = api.client.post("/api/v1/reports", content=b"{not json", headers={"content-type": "application/json"})
    assert resp.status_code == 422 and resp.json()["error"] == "malformed"
    assert "Traceback" not in resp.text


def test_other_deployment_or_configuration_is_rejected(api: Harness) -> None:
    resp = api.post(api.report(deployment="0123abcd"))
    assert resp.status_code == 404 and resp.json()["field"] == "deployment"
    resp = api.post(api.report(fingerprint="0" * 64))
    assert resp.status_code == 409 and resp.json()["error"] == "wrong_configuration"
    resp = api.post(api.report(sensor=999, key_of=999, value=0.0))
    assert resp.status_code == 422 and resp.json()["field"] == "sensor"
    assert api.stored() == 0


def test_out_of_window_and_out_of_range_reports(api: Harness) -> None:
    future = api.deployment.window_at(api.collector.clock()) + 5
    resp = api.post(api.report(window=future))
    assert resp.status_code == 422 and resp.json()["error"] == "window_in_future"
    g = api.net.resolution
    for far in (10.0**9 * g, -(10.0**9) * g):  # on the grid, but beyond the reading range [0, 100] + 40 sigma
        resp = api.post(api.report(value=far))
        assert resp.status_code == 422 and resp.json()["field"] == "value"
        assert "multiple of the grid" in resp.json()["message"]
    resp = api.post(api.report(value=0.37 * g))
    assert resp.status_code == 422 and resp.json()["field"] == "value"
    assert api.stored() == 0


def test_reading_range_limit_is_enforced_at_the_collector_to_the_cell(api: Harness) -> None:
    """Issue 33 item 1: the collector accepts the declared range widened by the noise's 2^-64 tail, not a grid
    cell more (oracle: the interval recomputed from the range, the grid and tail_cells)."""
    g = api.net.resolution
    low_range, high_range = api.net.reading_range
    assert high_range == 100.0  # the test deployment declares readings in [0, 100]
    t = poisoning.tail_cells(api.net.mechanism.sigma2)
    top, bottom = (round(high_range / g) + t) * g, (round(low_range / g) - t) * g
    assert api.post(api.report(sensor=0, value=top)).status_code == 201
    assert api.post(api.report(sensor=1, value=bottom)).status_code == 201
    for sensor, value in ((2, top + g), (3, bottom - g)):
        resp = api.post(api.report(sensor=sensor, value=value))
        assert resp.status_code == 422 and resp.json()["error"] == "out_of_range" and resp.json()["field"] == "value"
    assert api.stored() == 2


def test_closed_window_is_409(api: Harness) -> None:
    """A closed window takes no more reports. Its answer (close, read, list) holds exactly the fields the OpenAPI
    document lists for it, and its status and misfit agree with their definitions, recomputed here from the stored
    reading and the map: residual = ‖M_P f̂ − ỹ_P‖, misfit = residual² / ‖ỹ_P‖², fit iff residual ≤ radius."""
    import numpy as np

    value = float(api.net.privatize_reading(0, 60.0))
    assert api.post(api.report(sensor=0, window=1, value=value)).status_code == 201
    headers = {"Authorization": f"Bearer {api.token}"}
    closed = api.client.post("/api/v1/windows/1/close", headers=headers)
    assert closed.status_code == 200 and closed.json()["reporting"] == [0]
    resp = api.post(api.report(sensor=1, window=1))
    assert resp.status_code == 409 and resp.json()["error"] == "window_closed"
    read = api.client.get("/api/v1/windows/1", headers=headers).json()
    summary = [w for w in api.client.get("/api/v1/windows", headers=headers).json()["windows"] if w["window"] == 1]
    schemas = api.client.get("/openapi.json").json()["components"]["schemas"]
    assert closed.json() == read and set(read) == set(schemas["Window"]["properties"])
    assert set(summary[0]) == set(schemas["WindowSummary"]["properties"]) == set(read) - {"source_map"}
    gap = float(api.net.dense_model()[0] @ np.array(read["source_map"])) - value
    assert read["residual"] == pytest.approx(abs(gap), rel=1e-9, abs=1e-9)
    assert read["misfit"] == pytest.approx(gap**2 / value**2, rel=1e-9, abs=1e-12)
    assert read["status"] in ("fit", "least-residual") and value > read["radius"]  # not the empty map
    assert (read["status"] == "fit") == (read["residual"] <= read["radius"] * (1 + 1e-6))
    assert read["uncertainty_text"].startswith("±" if read["status"] == "fit" else "not stated: model misfit")


def test_batch_reports_one_outcome_each(api: Harness) -> None:
    good = [api.report(sensor=j, window=5) for j in range(3)]
    bad = api.report(sensor=4, window=5, key_of=3)
    resp = api.client.post("/api/v1/reports/batch", json={"reports": [*good, bad, good[0]]})
    assert resp.status_code == 200
    out = resp.json()
    assert [r["http_status"] for r in out["results"]] == [201, 201, 201, 403, 200]
    assert (out["stored"], out["duplicates"], out["rejected"]) == (3, 1, 1)
    assert api.stored() == 3
    resp = api.client.post("/api/v1/reports/batch", json={"reports": [*good[:1], {"sensor": 1}]})
    assert resp.status_code == 422 and resp.json()["field"].startswith("reports[1]")


def test_analyst_endpoints_need_the_token(api: Harness) -> None:
    for path in ("/api/v1/deployment", "/api/v1/windows", "/api/v1/sensors", "/api/v1/export.csv",
                 "/api/v1/export.json"):
        assert api.client.get(path).status_code == 401
        assert api.client.get(path, headers={"Authorization": "Bearer " + "0" * 64}).status_code == 401
        assert api.client.get(path, headers={"Authorization": f"Bearer {api.token}"}).status_code == 200


def _expected_times(deployment: Any, window: int) -> tuple[str, str]:
    """The window's start and end as ISO 8601 UTC text, from the deployment's clock (oracle: datetime arithmetic)."""
    epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
    start = epoch + datetime.timedelta(seconds=deployment.start + window * deployment.window_seconds)
    end = start + datetime.timedelta(seconds=deployment.window_seconds)
    return start.isoformat().replace("+00:00", "Z"), end.isoformat().replace("+00:00", "Z")


def test_export_holds_the_recovered_maps(api: Harness) -> None:
    """CSV, JSON and Parquet hold each source's value, its coordinates as numbers (CSV: x_m, y_m columns; JSON and
    Parquet: an array) and the window's start and end in UTC (oracle: the record, the network's source positions,
    the deployment's clock)."""
    import csv

    for j in range(api.deployment.n_sensors):  # a full window closes by itself; close it explicitly to be sure
        assert api.post(api.report(sensor=j, window=6)).status_code == 201
    headers = {"Authorization": f"Bearer {api.token}"}
    record = api.client.post("/api/v1/windows/6/close", headers=headers).json()
    positions = [[float(c) for c in p] for p in api.net.source_positions]
    assert len(positions) == len(record["source_map"]) and all(len(p) == 2 for p in positions)
    start, end = _expected_times(api.deployment, 6)
    assert start.endswith("Z") and start < end
    csv_text = api.client.get("/api/v1/export.csv", headers=headers).text
    rows = list(csv.DictReader(io.StringIO(csv_text)))
    assert csv_text.startswith("window,window_start,window_end,source,x_m,y_m,people,")
    assert "coordinates" not in rows[0]
    assert [float(r["people"]) for r in rows] == pytest.approx(record["source_map"], rel=1e-12, abs=1e-300)
    assert [[float(r["x_m"]), float(r["y_m"])] for r in rows] == positions
    assert {(r["window"], r["window_start"], r["window_end"]) for r in rows} == {("6", start, end)}
    resp = api.client.get("/api/v1/export.json", headers=headers)
    assert resp.status_code == 200 and resp.headers["content-type"] == "application/json"
    doc = resp.json()
    assert [r["people"] for r in doc] == pytest.approx(record["source_map"], rel=1e-12, abs=1e-300)
    assert [r["coordinates"] for r in doc] == positions  # arrays of numbers, not text
    assert {(r["window"], r["window_start"], r["window_end"]) for r in doc} == {(6, start, end)}
    assert [r["source"] for r in doc] == list(range(len(positions)))
    pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    table = pq.read_table(io.BytesIO(api.client.get("/api/v1/export.parquet", headers=headers).content))
    assert table.num_rows == len(record["source_map"])
    assert table.column("coordinates").to_pylist() == positions
    assert {t.isoformat().replace("+00:00", "Z") for t in table.column("window_start").to_pylist()} == {start}
    assert {t.isoformat().replace("+00:00", "Z") for t in table.column("window_end").to_pylist()} == {end}


def test_export_rows_have_no_timestamp_beyond_datetime(api: Harness) -> None:
    """A window whose start lies beyond year 9999 (a clock started at 1e15 s) is exported with empty times, not
    an error; and a window not recovered (NaN uncertainty) holds null in JSON, which has no NaN."""
    import dataclasses

    import dpcloak.service.views as views

    far = dataclasses.replace(api.deployment, start=1e15)
    did, n_src = api.deployment.deployment_id, api.net.n_sources
    api.store.save_window(did, dataclasses.replace(_synthetic_window(3, 1.0, n_src), uncertainty=float("nan")))
    text = views.export_csv(far, api.store)
    first = text.splitlines()[1].split(",")
    assert first[:3] == ["3", "", ""]
    doc = json.loads("".join(views.export_json_chunks(far, api.store)))
    assert {(r["window_start"], r["window_end"], r["uncertainty_m"]) for r in doc} == {(None, None, None)}


def test_openapi_schema_lists_the_endpoints(api: Harness) -> None:
    schema = api.client.get("/openapi.json").json()
    for path in ("/api/v1/reports", "/api/v1/reports/batch", "/api/v1/windows/{window}", "/api/v1/export.csv"):
        assert path in schema["paths"]
    assert set(schema["components"]["schemas"]["ReportIn"]["required"]) == {
        "deployment", "fingerprint", "sensor", "key_id", "window", "report_id", "value", "mac"}


def test_unknown_route_is_json_404(api: Harness) -> None:
    resp = api.client.get("/api/v1/nope")
    assert resp.status_code == 404 and resp.json()["error"] == "not_found"


def test_oversized_body_is_413_before_parsing(api: Harness) -> None:
    big = {"reports": [api.report(sensor=0, window=1)] * 5000}  # about 2 MB
    resp = api.client.post("/api/v1/reports/batch", json=big)
    assert resp.status_code == 413 and resp.json()["error"] == "too_large"
    assert api.stored() == 0


@pytest.mark.parametrize("evil", ["x'; DROP TABLE reports; --", "1 OR 1=1", "\\x00\\' UNION SELECT *"])
def test_sql_injection_attempts_are_refused_as_malformed(api: Harness, evil: str) -> None:
    for field in ("deployment", "report_id", "fingerprint", "mac"):
        body = api.report()
        body[field] = evil
        resp = api.post(body)
        assert resp.status_code == 422 and resp.json()["field"] == field
    assert api.stored() == 0
    assert api.post(api.report()).status_code == 201  # the table is still there


def test_saturated_collector_answers_503_with_retry_after(tmp_path: Path) -> None:
    make_deployment(tmp_path, sensor_rows=1, sensor_cols=2)
    h = Harness(tmp_path)
    h.collector.max_pending = 0
    with h.client:
        resp = h.post(h.report(sensor=0, window=1))
        assert resp.status_code == 503 and resp.headers["Retry-After"] == "1"
        assert resp.json()["error"] == "overloaded"
    assert h.stored() == 0
    h.store.dispose()


def test_ingest_is_documented_from_its_one_implementation(api: Harness) -> None:
    """Issue 33 item 8: the two ingest operations of /openapi.json are derived from the endpoints that serve them
    (their request body is the model the endpoint parses, their statuses are the endpoint's), and every status
    answered for good, rejected and malformed requests is one the operation documents."""
    from http import HTTPStatus

    from dpcloak.service.http_ingest import STATUSES

    app = api.client.app
    served = {r.path: r for r in app.routes if getattr(r, "path", None) in STATUSES}
    assert set(served) == set(STATUSES)
    assert all(route.app is app.ingest for route in served.values())  # no second (framework) implementation
    spec = api.client.get("/openapi.json").json()
    for path, model in (("/api/v1/reports", "ReportIn"), ("/api/v1/reports/batch", "BatchIn")):
        op = spec["paths"][path]["post"]
        assert op["requestBody"]["content"]["application/json"]["schema"] == {"$ref": f"#/components/schemas/{model}"}
        assert sorted(int(s) for s in op["responses"]) == sorted(STATUSES[path])
        for status in (s for s in STATUSES[path] if s >= 400):
            assert set(op["responses"][str(status)]["content"]) == {"application/json", "application/problem+json"}
            assert HTTPStatus(status).phrase  # a real status (the problem's title is its phrase)
    windows = iter(range(1, 40))
    cases: list[tuple[str, Any]] = [
        ("/api/v1/reports", lambda w: api.report(window=w)),
        ("/api/v1/reports", lambda w: api.report(window=w, key_of=3)),
        ("/api/v1/reports", lambda w: {**api.report(window=w), "mac": "0" * 64}),
        ("/api/v1/reports", lambda w: {**api.report(window=w), "sensor": -1}),
        ("/api/v1/reports", lambda w: {**api.report(window=w), "extra": 1}),
        ("/api/v1/reports", lambda w: b"[]"),
        ("/api/v1/reports", lambda w: b"{not json"),
        ("/api/v1/reports/batch", lambda w: {"reports": [api.report(sensor=0, window=w),
                                                         api.report(sensor=1, window=w, key_of=2)]}),
        ("/api/v1/reports/batch", lambda w: {"reports": []}),
    ]
    answered = set()
    for path, make in cases:
        body = make(next(windows))
        resp = api.client.post(path, content=body if isinstance(body, bytes) else None,
                               json=None if isinstance(body, bytes) else body)
        answered.add((path, resp.status_code))
        assert str(resp.status_code) in spec["paths"][path]["post"]["responses"], (path, resp.status_code)
    for path in STATUSES:
        resp = api.client.post(path, content=b"{}", headers={"Content-Type": "text/plain"})
        assert (resp.status_code, resp.json()["error"]) == (415, "unsupported_media_type")
    assert answered >= {("/api/v1/reports", 201), ("/api/v1/reports", 401), ("/api/v1/reports", 403),
                        ("/api/v1/reports", 422),
                        ("/api/v1/reports/batch", 200), ("/api/v1/reports/batch", 422)}
    assert api.stored() == 1 + 1  # the good single report and the good report of the batch


def test_every_error_is_a_problem_in_the_media_type_asked_for(api: Harness) -> None:
    """Issue 33 item 8: ingest, analyst, routing and body-size errors are RFC 9457 problems built in one place
    (type, title = the status's phrase from the standard library, status, detail) keeping the short form's
    members; application/problem+json only when Accept asks for it (with q > 0), else application/json."""
    from http import HTTPStatus

    bad_mac = {**api.report(window=1), "value": 1.0}
    auth = {"Authorization": f"Bearer {api.token}"}
    requests: list[tuple[str, str, dict[str, str], Any, int, str]] = [
        ("POST", "/api/v1/reports", {}, bad_mac, 401, "unauthenticated"),
        ("POST", "/api/v1/reports", {}, {"sensor": 0}, 422, "malformed"),
        ("GET", "/api/v1/windows/7", {}, None, 401, "unauthenticated"),
        ("GET", "/api/v1/windows/7", auth, None, 404, "not_found"),
        ("GET", "/api/v1/windows?since=x", auth, None, 422, "invalid"),
        ("GET", "/api/v1/windows?limit=0", auth, None, 422, "malformed"),
        ("DELETE", "/api/v1/health", {}, None, 405, "method_not_allowed"),
        ("GET", "/api/v1/health", {"Content-Length": str(2 << 20)}, None, 413, "too_large"),
    ]
    for accept, media in (("application/problem+json", "application/problem+json"), (None, "application/json"),
                          ("application/problem+json;q=0, application/json", "application/json")):
        for method, path, headers, body, status, code in requests:
            extra = {**headers, **({"Accept": accept} if accept else {})}
            resp = api.client.request(method, path, json=body, headers=extra)
            assert resp.status_code == status, (method, path, resp.status_code, resp.text)
            assert resp.headers["content-type"].split(";")[0] == media, (path, accept, resp.headers["content-type"])
            problem = resp.json()
            assert problem["type"] == f"urn:dpcloak:error:{code}" and problem["error"] == code
            assert (problem["title"], problem["status"]) == (HTTPStatus(status).phrase, status)
            assert problem["detail"] == problem["message"] and problem["detail"]
    unauthorized = api.client.get("/api/v1/windows/7")
    assert unauthorized.headers["www-authenticate"] == "Bearer"


def _synthetic_window(window: int, closed_at: float, n_sources: int) -> Any:
    """A stored window record with a map we know (its values name the window), for the read API's tests."""
    from dpcloak.service.store import WindowRecord

    return WindowRecord(window=window, closed_at=closed_at, source_map=[window + i / 10 for i in range(n_sources)],
                        uncertainty=1.5, uncertainty_90=2.5, reporting=[0, 1], missing=0, sigma=3.0,
                        epsilon_window=1.0, delta_window=1e-6, epsilon_period=2.0, delta_period=1e-5,
                        releases_in_period=2, converged=True, message="ok")


def _analyst_get(api: Harness, path: str) -> Any:
    resp = api.client.get(path, headers={"Authorization": f"Bearer {api.token}"})
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_window_listing_is_paginated_and_bounded(api: Harness) -> None:
    """Walking the pages backwards (``before``) and forwards (``after``) yields every closed window once, in
    order (oracle: the windows stored), a page never holds more than ``limit`` and ``limit`` is capped."""
    import random

    rng = random.Random(5)
    stored = sorted(rng.sample(range(10_000), 57))
    did, n_src = api.deployment.deployment_id, api.net.n_sources
    for k, w in enumerate(stored):
        assert api.store.save_window(did, _synthetic_window(w, 1000.0 + k, n_src))
    newest = _analyst_get(api, "/api/v1/windows?limit=10")
    assert [r["window"] for r in newest["windows"]] == stored[-10:] and newest["more"] and newest["total"] == 57
    assert "source_map" not in newest["windows"][0]
    assert newest["windows"][-1]["total"] == pytest.approx(sum(stored[-1] + i / 10 for i in range(n_src)))
    assert newest["windows"][-1]["peak"] == pytest.approx(stored[-1] + (n_src - 1) / 10)
    seen, page = [], newest
    while True:
        seen = [r["window"] for r in page["windows"]] + seen
        assert len(page["windows"]) <= 10
        if not page["more"]:
            break
        page = _analyst_get(api, f"/api/v1/windows?limit=10&before={page['windows'][0]['window']}")
    assert seen == stored
    forward, after = [], -1
    while True:
        page = _analyst_get(api, f"/api/v1/windows?limit=7&after={after}")
        forward += [r["window"] for r in page["windows"]]
        if not page["more"]:
            break
        after = forward[-1]
    assert forward == stored
    between = _analyst_get(api, f"/api/v1/windows?after={stored[3]}&before={stored[9]}")
    assert [r["window"] for r in between["windows"]] == stored[4:9] and not between["more"]
    headers = {"Authorization": f"Bearer {api.token}"}
    for bad in ("limit=0", "limit=1001", "after=-2", "before=x", "since=nan:3", "since=12", "since=1.0:-1"):
        resp = api.client.get(f"/api/v1/windows?{bad}", headers=headers)
        assert resp.status_code == 422, bad
        assert resp.json()["field"] == "query." + bad.split("=")[0], (bad, resp.json())
    assert len(_analyst_get(api, "/api/v1/windows")["windows"]) == 57  # the default page (1000) holds them all


def test_since_cursor_gives_only_the_windows_closed_since(api: Harness) -> None:
    """Windows closed out of index order come in the order they were closed, each once; a poll with nothing
    new is empty; ``total`` counts them all (the oracle is the list of windows saved, in saving order)."""
    did, n_src = api.deployment.deployment_id, api.net.n_sources
    order = [5, 3, 4, 9, 8, 10, 2]  # a full window closes before a late one with a missing sensor
    for k, w in enumerate(order[:3]):
        api.store.save_window(did, _synthetic_window(w, 100.0 + k, n_src))
    first = _analyst_get(api, "/api/v1/windows")
    assert [r["window"] for r in first["windows"]] == [3, 4, 5] and first["total"] == 3
    cursor = first["cursor"]
    empty = _analyst_get(api, f"/api/v1/windows?since={cursor}")
    assert empty["windows"] == [] and empty["cursor"] == cursor and empty["total"] is None and not empty["more"]
    assert _analyst_get(api, f"/api/v1/windows?since={cursor}&count=true")["total"] == 3
    for k, w in enumerate(order[3:], start=3):
        api.store.save_window(did, _synthetic_window(w, 100.0 + (k if w != 10 else 4), n_src))  # 10 ties with 8
    got: list[int] = []
    while True:
        page = _analyst_get(api, f"/api/v1/windows?limit=2&since={cursor}&count=true")
        got += [r["window"] for r in page["windows"]]
        cursor = page["cursor"]
        assert page["total"] == 7
        if not page["more"]:
            break
    assert got == [9, 8, 10, 2]  # closing order; the tie at 104.0 broken by the window index
    assert _analyst_get(api, f"/api/v1/windows?since={cursor}")["windows"] == []
    # from the start of the history: a cursor before every window gives all of them once, in closing order
    every = _analyst_get(api, "/api/v1/windows?since=0.0:0")
    assert [r["window"] for r in every["windows"]] == order


def test_since_poll_carries_the_newest_listed_window_with_its_map(api: Harness) -> None:
    """``latest=true`` adds the newest (highest index) of the windows listed, with its map, equal to what
    ``GET /api/v1/windows/{window}`` answers for it (the oracle); without it, or with nothing new, ``latest`` is
    null; on a page of several the newest of that page, not the one closed last."""
    did, n_src = api.deployment.deployment_id, api.net.n_sources
    api.store.save_window(did, _synthetic_window(1, 100.0, n_src))
    cursor = _analyst_get(api, "/api/v1/windows")["cursor"]
    for k, w in enumerate([7, 4, 6]):  # 7 is the newest window but not the one closed last
        api.store.save_window(did, _synthetic_window(w, 101.0 + k, n_src))
    page = _analyst_get(api, f"/api/v1/windows?since={cursor}&latest=true")
    assert [r["window"] for r in page["windows"]] == [7, 4, 6]
    assert page["latest"] == _analyst_get(api, "/api/v1/windows/7") and len(page["latest"]["source_map"]) == n_src
    assert all("source_map" not in r for r in page["windows"])
    assert _analyst_get(api, f"/api/v1/windows?since={cursor}")["latest"] is None
    assert _analyst_get(api, f"/api/v1/windows?since={page['cursor']}&latest=true")["latest"] is None
    second = _analyst_get(api, f"/api/v1/windows?since={cursor}&latest=true&limit=2")  # 7 and 4: 7
    assert second["more"] and second["latest"]["window"] == 7
    rest = _analyst_get(api, f"/api/v1/windows?since={second['cursor']}&latest=true&limit=2")  # 6 alone
    assert rest["latest"] == _analyst_get(api, "/api/v1/windows/6")


def test_export_streams_across_pages(api: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the store reading 3 windows per query and 2 windows per piece, the streamed CSV and Parquet hold
    every (window, source) once with its value (oracle: the synthetic maps), in more than one piece."""
    import dpcloak.service.store as store_module
    import dpcloak.service.views as views

    monkeypatch.setattr(store_module, "READ_PAGE", 3)
    monkeypatch.setattr(views, "EXPORT_CHUNK_WINDOWS", 2)
    did, n_src = api.deployment.deployment_id, api.net.n_sources
    windows = [0, 1, 2, 3, 4, 5, 6, 9, 11]
    for k, w in enumerate(windows):
        api.store.save_window(did, _synthetic_window(w, 10.0 + k, n_src))
    pieces = list(views.export_csv_chunks(api.deployment, api.store))
    assert len(pieces) == 1 + 5
    headers = {"Authorization": f"Bearer {api.token}"}
    with api.client.stream("GET", "/api/v1/export.csv", headers=headers) as resp:
        assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/csv")
        text = "".join(resp.iter_text())
    rows = [line.split(",") for line in text.strip().splitlines()[1:]]
    assert [(int(r[0]), int(r[3])) for r in rows] == [(w, i) for w in windows for i in range(n_src)]
    assert [r[1:3] for r in rows] == [list(_expected_times(api.deployment, w)) for w in windows for _ in range(n_src)]
    assert [float(r[6]) for r in rows] == pytest.approx([w + i / 10 for w in windows for i in range(n_src)])
    json_pieces = list(views.export_json_chunks(api.deployment, api.store))
    assert len(json_pieces) == 1 + 5 + 1  # "[", five pieces of rows, "]"
    with api.client.stream("GET", "/api/v1/export.json", headers=headers) as resp:
        doc = json.loads("".join(resp.iter_text()))
    assert [(r["window"], r["source"]) for r in doc] == [(w, i) for w in windows for i in range(n_src)]
    assert [r["people"] for r in doc] == pytest.approx([w + i / 10 for w in windows for i in range(n_src)])
    pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    resp = api.client.get("/api/v1/export.parquet", headers=headers)
    assert resp.headers["content-type"] == "application/vnd.apache.parquet"
    parquet = pq.ParquetFile(io.BytesIO(resp.content))
    assert parquet.num_row_groups == 5
    table = parquet.read()
    assert table.column("window").to_pylist() == [w for w in windows for _ in range(n_src)]
    assert table.column("people").to_pylist() == pytest.approx([w + i / 10 for w in windows for i in range(n_src)])


def test_pages_and_api_carry_security_headers_and_no_docs_pages(api: Harness) -> None:
    """The dashboard and the analyst API answer with a CSP of their own origin (no inline script), no framing,
    no sniffing, no referrer; there are no interactive /docs or /redoc pages, the schema stays."""
    from dpcloak.service.app import SECURITY_HEADERS

    headers = {"Authorization": f"Bearer {api.token}"}
    for path in ("/dashboard/", "/dashboard/app.js", "/api/v1/deployment", "/api/v1/windows", "/api/v1/health",
                 "/nowhere"):
        resp = api.client.get(path, headers=headers)
        assert resp.status_code in (200, 404), path
        csp = resp.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "frame-ancestors 'none'" in csp, path
        assert resp.headers["x-content-type-options"] == "nosniff"
        assert resp.headers["x-frame-options"] == "DENY" and resp.headers["referrer-policy"] == "no-referrer"
        assert {k.decode() for k, _ in SECURITY_HEADERS} <= set(resp.headers)
    page = api.client.get("/dashboard/").text
    assert "<script src=" in page and "<script>" not in page and " on" + "load=" not in page  # nothing inline
    for path in ("/docs", "/redoc", "/docs/oauth2-redirect"):
        assert api.client.get(path).status_code == 404, path
    assert api.client.get("/openapi.json").status_code == 200


def test_server_timing_is_the_collectors_own_time(api: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every analyst answer says how long the collector took (``Server-Timing: app;dur=<ms>``): a view made to
    take 80 ms more shows at least 80 ms, and no answer shows more than the client's own round trip (the oracle:
    the injected sleep and the client's clock)."""
    import time

    from dpcloak.service import views

    def server_ms(resp: Any) -> float:
        name, _, dur = resp.headers["server-timing"].partition(";dur=")
        assert name == "app"
        return float(dur)

    started = time.perf_counter()
    quick = api.client.get("/api/v1/sensors", headers=api.auth)
    assert quick.status_code == 200 and 0.0 <= server_ms(quick) <= (time.perf_counter() - started) * 1000
    original = views.sensors_view

    def slow(*args: Any) -> Any:
        time.sleep(0.08)
        return original(*args)

    monkeypatch.setattr(views, "sensors_view", slow)
    started = time.perf_counter()
    resp = api.client.get("/api/v1/sensors", headers=api.auth)
    client_ms = (time.perf_counter() - started) * 1000
    assert resp.status_code == 200 and 80.0 <= server_ms(resp) <= client_ms
    assert resp.json()["sensors"] == quick.json()["sensors"]


def test_polled_answers_are_read_and_encoded_off_the_event_loop(api: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sensors' table and the health, polled by every open dashboard, are read and encoded to JSON on the
    collector's reader threads: the event loop, which acknowledges the sensors' reports, only sends the bytes
    (a 1,000-sensor table took it 3-7 ms to validate and encode per poll when it did so itself). The oracle:
    the name of the thread each answer's JSON is rendered on."""
    import threading

    from fastapi.responses import JSONResponse

    rendered: list[tuple[str, str]] = []
    original = JSONResponse.render

    def render(self: JSONResponse, content: Any) -> bytes:
        kind = "sensors" if isinstance(content, dict) and "sensors" in content else (
            "health" if isinstance(content, dict) and "policy" in content else "other")
        rendered.append((kind, threading.current_thread().name))
        return original(self, content)

    monkeypatch.setattr(JSONResponse, "render", render)
    assert api.client.get("/api/v1/sensors", headers=api.auth).status_code == 200
    assert api.client.get("/api/v1/health").status_code == 200
    threads = dict(r for r in rendered if r[0] != "other")
    assert set(threads) == {"sensors", "health"}
    assert all(name.startswith("dpcloak-reader") for name in threads.values()), threads


@pytest.mark.parametrize("content_type", ["text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x", None])
def test_report_not_sent_as_json_is_refused(api: Harness, content_type: str | None) -> None:
    """A valid report posted as text/plain (what a page of another origin can send without a preflight) or a
    form, or with no content type, is refused (415) and not stored; the same bytes as JSON are stored."""
    import json as json_module

    body = api.report()
    data = json_module.dumps(body).encode()
    headers = {} if content_type is None else {"Content-Type": content_type}
    for path, payload in (("/api/v1/reports", data), ("/api/v1/reports/batch",
                                                      json_module.dumps({"reports": [body]}).encode())):
        resp = api.client.post(path, content=payload, headers={**headers, "Origin": "https://evil.example"})
        assert resp.status_code == 415 and resp.json()["error"] == "unsupported_media_type", (path, resp.text)
    assert api.stored() == 0
    resp = api.client.post("/api/v1/reports", content=data, headers={"Content-Type": "application/json; charset=utf-8"})
    assert resp.status_code == 201 and api.stored() == 1


def test_release_policy_at_the_api(tmp_path: Path) -> None:
    """Every 4th window releases (2 in any 8): a report for another window is 422 ``outside_policy``, one beyond the
    clock plus the stated skew 422 ``window_in_future`` (nothing stored); ``/api/v1/health`` is ``ok`` both in a
    window the schedule skips (normal operation), with the next release window and its time, and in a release
    window; ``/api/v1/sensors``
    says how many release windows are left in the sliding window and when it renews. Oracle: the schedule
    arithmetic of the issue (w mod ceil(W/k) = 0) and the clock."""
    net = make_deployment(tmp_path, sensor_rows=2, sensor_cols=3).sensor_network
    directory = tmp_path / "policy"
    write_deployment(directory, Deployment.create(network=net, window_seconds=60.0, period_windows=8, start=0.0,
                                                  policy_releases=2, grace_seconds=3600.0))
    h = Harness(directory)
    now = [5 * 60.0 + 30]  # window 5: the sensors skip (release windows 0, 4, 8, ...)
    h.collector.clock = lambda: now[0]
    with h.client:
        health = h.client.get("/api/v1/health").json()
        assert health["status"] == "ok" and not health["policy"]["release_window"]
        assert health["policy"]["next_release_window"] == 8 and "skip it by schedule" in health["policy"]["message"]
        assert health["policy"]["next_release_at"] == 480.0 and "any 8 consecutive windows" in health["policy"]["words"]
        resp = h.post(h.report(window=5))
        assert resp.status_code == 422 and resp.json()["error"] == "outside_policy"
        resp = h.post(h.report(window=8))  # a release window, but it starts 150 s after now: skew is 60 s
        assert resp.status_code == 422 and resp.json()["error"] == "window_in_future"
        assert h.stored() == 0
        now[0] = 4 * 60.0 + 30
        assert h.client.get("/api/v1/health").json()["status"] == "ok"
        assert h.post(h.report(window=4)).status_code == 201
        view = h.client.get("/api/v1/sensors", headers={"Authorization": f"Bearer {h.token}"}).json()
        assert (view["release_windows_charged"], view["releases_left"], view["renews_at_window"]) == (1, 1, 12)
        assert view["renews_at"] == 720.0
    h.store.dispose()


def test_health_degraded_only_while_sensors_skip_where_the_policy_lets_them(tmp_path: Path) -> None:
    """Every 4th window releases (grace 10 s). Sensors 0 and 1 release in window 0; in window 4 only sensor 0 does:
    once window 4 is due (ended + grace) health is ``degraded`` naming sensor 1, not before (windows 1–3, skipped
    by schedule, are ``ok``); when sensor 1 releases again (window 8) it is ``ok``. With a lifetime cap of 3 release
    windows (0, 4, 8) it is ``degraded`` from window 9 on, saying so. Oracle: the schedule w mod 4 = 0 and who
    reported where (the test's own bookkeeping)."""
    net = make_deployment(tmp_path, sensor_rows=2, sensor_cols=3).sensor_network
    directory = tmp_path / "skips"
    write_deployment(directory, Deployment.create(network=net, window_seconds=60.0, period_windows=8, start=0.0,
                                                  policy_releases=2, grace_seconds=10.0, lifetime_releases=3))
    h = Harness(directory)
    now = [30.0]
    h.collector.clock = lambda: now[0]

    def health(at: float) -> dict[str, Any]:
        now[0] = at
        return h.client.get("/api/v1/health").json()

    with h.client:
        assert h.post(h.report(sensor=0, window=0)).status_code == 201
        assert h.post(h.report(sensor=1, window=0)).status_code == 201
        for at in (75.0, 130.0, 200.0):  # windows 1–3: skipped by schedule, nobody missing
            assert health(at)["status"] == "ok", at
        now[0] = 4 * 60.0 + 30
        assert h.post(h.report(sensor=0, window=4)).status_code == 201
        assert health(4 * 60.0 + 40)["status"] == "ok"  # window 4 still open
        assert health(5 * 60.0 + 5)["status"] == "ok"  # ended, but within the grace period
        late = health(5 * 60.0 + 15)
        assert late["status"] == "degraded" and late["policy"]["skipping"] == [1]
        assert late["policy"]["last_due_release_window"] == 4 and "sensor(s) 1" in late["policy"]["message"]
        assert health(7 * 60.0 + 30)["status"] == "degraded"  # still: window 4 is the last due release window
        now[0] = 8 * 60.0 + 30
        for j in (0, 1):
            assert h.post(h.report(sensor=j, window=8)).status_code == 201
        assert health(8 * 60.0 + 40)["status"] == "ok"  # sensor 1 reported since window 4
        capped = health(9 * 60.0 + 15)
        assert capped["status"] == "degraded" and capped["policy"]["next_release_window"] is None
        assert "lifetime cap of 3 release windows is reached" in capped["policy"]["message"]
    h.store.dispose()


def test_sensor_total_sums_its_released_readings_with_an_error_bar(tmp_path: Path) -> None:
    """``/api/v1/sensors/{j}/total``: the sum of sensor j's stored values over the windows inside [since, until)
    (the test's own sum of what it posted), the count, σ√n as the noise's standard deviation (σ the network's), and
    the noiseless total (n readings of 1) within 5 σ√n plus the rounding bound; other sensors and windows outside
    the range are left out; an unknown sensor is 404."""
    net = make_deployment(tmp_path, sensor_rows=2, sensor_cols=3).sensor_network
    directory = tmp_path / "totals"
    write_deployment(directory, Deployment.create(network=net, window_seconds=60.0, period_windows=60, start=0.0,
                                                  grace_seconds=3600.0))
    h = Harness(directory)
    now = [30 * 60.0]
    h.collector.clock = lambda: now[0]
    posted: dict[int, float] = {}
    with h.client:
        for w in range(20):
            body = h.report(sensor=2, window=w)
            assert h.post(body).status_code == 201
            posted[w] = float(body["value"])
            assert h.post(h.report(sensor=3, window=w)).status_code == 201
        auth = {"Authorization": f"Bearer {h.token}"}
        view = h.client.get("/api/v1/sensors/2/total?since=300&until=900", headers=auth).json()  # windows 5..14
        assert (view["first_window"], view["last_window"], view["reports"]) == (5, 14, 10)
        assert view["total"] == pytest.approx(sum(posted[w] for w in range(5, 15)), rel=1e-12)
        assert view["std"] == pytest.approx(float(net.sigma) * 10**0.5, rel=1e-12)
        assert abs(view["total"] - 10.0) <= 5 * view["std"] + view["rounding_bound"]
        lo, hi = view["interval_95"]
        assert lo == pytest.approx(view["total"] - 1.96 * view["std"]) and hi == pytest.approx(view["total"] +
                                                                                              1.96 * view["std"])
        since_start = h.client.get("/api/v1/sensors/2/total?since=0", headers=auth).json()  # until now: windows 0..29
        assert since_start["reports"] == 20 and since_start["total"] == pytest.approx(sum(posted.values()), rel=1e-12)
        assert h.client.get("/api/v1/sensors/99/total?since=0", headers=auth).status_code == 404
        assert h.client.get("/api/v1/sensors/2/total?since=0").status_code == 401
    h.store.dispose()


def test_a_counts_network_is_served_with_its_laplace_acceptance_interval(tmp_path: Path) -> None:
    """Issue 29: a counts deployment (exact discrete Laplace, scale 1 count) is served. The collector accepts the
    integer values in [0 − T, 50 + T], T the smallest integer with P(|Y| > T) ≤ 2⁻⁶⁴ (oracle: the closed form
    2 q^(T+1) / (1 + q) re-derived here in exact rationals against 2⁻⁶⁴, q = e^(−1) bounded by fractions), refuses
    one count beyond and a value off the integer grid (422), and the window's recovered record is the private
    counts projected onto ≥ 0 with status "private counts"."""
    import time
    from fractions import Fraction

    from dpcloak.sensors import SensorNetwork

    net = SensorNetwork.from_coordinates(sensors=[[0.0, 0.0], [100.0, 0.0], [0.0, 100.0]], measurement="counts",
                                         epsilon=1.0, delta=0.0, budget=(100.0, 1e-5), reading_range=(0.0, 50.0))
    write_deployment(tmp_path, Deployment.create(network=net, window_seconds=60.0, period_windows=10,
                                                 start=time.time() - 600.0, grace_seconds=3600.0))
    h = Harness(tmp_path)
    # P(|Y| > T) = 2 q^(T+1) / (1 + q) with q = e^-1 ∈ (0.36787944117, 0.36787944118): T is the smallest integer
    # whose upper bound is ≤ 2^-64, and T − 1's lower bound is above it (so the rounding cannot decide it)
    q_lo, q_hi = Fraction(36787944117, 10**11), Fraction(36787944118, 10**11)
    t = next(t for t in range(200) if 2 * q_hi ** (t + 1) / (1 + q_lo) <= Fraction(1, 2**64))
    assert 2 * q_lo**t / (1 + q_hi) > Fraction(1, 2**64)
    h.collector.warm_recovery = False  # no recovery process: the window is recovered in this one below
    with h.client:
        assert poisoning.acceptance_cells(h.net) == (-t, 50 + t)
        window = h.deployment.window_at(time.time()) - 1
        for sensor, value in ((0, 12.0), (1, float(-t)), (2, 50.0 + t)):
            assert h.post(h.report(sensor=sensor, window=window, value=value)).status_code == 201
        for sensor, value in ((0, 51.0 + t), (1, -1.0 - t), (2, 7.5)):
            resp = h.post(h.report(sensor=sensor, window=window + 1, value=value))
            assert resp.status_code == 422 and resp.json()["field"] == "value", (value, resp.text)
    from dpcloak.service.windows import recover_window_record

    out = recover_window_record(h.deployment, h.store, window)  # what closing the window runs, in this process
    h.store.dispose()
    assert out is not None
    record = out[0].as_dict()
    assert record["source_map"] == [12.0, 0.0, 50.0 + t] and record["status"] == "private counts"
    assert record["residual"] == float(t) and record["radius"] is None  # only the negative count moved
    assert record["uncertainty_text"].startswith("±")

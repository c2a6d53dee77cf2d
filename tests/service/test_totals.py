"""Running totals of a continual deployment through the API (``dpcloak.service.totals``).

Oracles: the true counts summed by hand (the reports hold the node's integer encoder outputs without noise,
so a correct decode returns them up to the stated rounding bound), and the error bars from the dense
factorisation B = A·C⁻¹ built in exact rationals from the BLT coefficients, against which the σ√n of
independent noise (the weakened error bar) is far off.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from dpcloak.privacy.continual import BLT_BITS, BLT_OMEGA_NUMERATORS, BLT_THETA_NUMERATORS, _Encoder, _fresh_state
from dpcloak.service.app import create_app
from dpcloak.service.collector import Collector
from dpcloak.service.examples import counting_deployment
from dpcloak.service.store import Store, sqlite_url

WINDOWS = 60
GAP = 41  # sensor 2 (area "door") has no report for this window


def _dense_b(horizon: int) -> list[list[Fraction]]:
    """B = A·C⁻¹ (lower-triangular Toeplitz) from the exact BLT coefficients c_0 = 1, c_m = Σ ω_i θ_i^(m−1)."""
    theta = [Fraction(a, 2**BLT_BITS) for a in BLT_THETA_NUMERATORS]
    omega = [Fraction(b, 2**BLT_BITS) for b in BLT_OMEGA_NUMERATORS]
    c = [Fraction(1)] + [sum((w * t ** (m - 1) for w, t in zip(omega, theta, strict=True)), Fraction(0))
                         for m in range(1, horizon)]
    inv = [Fraction(1)]
    for m in range(1, horizon):
        inv.append(-sum((c[i] * inv[m - i] for i in range(1, m + 1)), Fraction(0)))
    beta = list(np.cumsum(np.array(inv, dtype=object)))
    return [[beta[t - j] if j <= t else Fraction(0) for j in range(horizon)] for t in range(horizon)]


class Site:
    def __init__(self, directory: Path) -> None:
        self.dep = counting_deployment()
        self.store = Store(sqlite_url(directory / "c.db"))
        self.collector = Collector(self.dep, self.store, master_key=bytes(32), clock=lambda: 10_000.0)
        self.client = TestClient(create_app(self.collector, analyst_token="t0ken"), raise_server_exceptions=False)
        self.auth = {"Authorization": "Bearer t0ken"}
        rng = np.random.default_rng(30)
        self.counts = rng.integers(0, 6, size=(3, WINDOWS))
        counter = self.dep.counter
        assert counter is not None
        self.grid = round(1 / counter.grid)
        rows = []
        for j in range(3):
            enc = _Encoder("factorization", _fresh_state("factorization", counter.horizon), 0)
            for w in range(WINDOWS):
                out = int(enc.step(int(self.counts[j, w]) * self.grid))  # noiseless: what the decode must invert
                if not (j == 2 and w == GAP):
                    rows.append({"deployment_id": self.dep.deployment_id, "sensor_id": j, "window": w,
                                 "report_id": f"r{j}-{w:04d}", "value": out * counter.grid, "mac": "00",
                                 "received_at": 60.0 * w})
        self.rows = rows

    def get(self, path: str, **params: Any) -> Any:
        return self.client.get(path, params=params, headers=self.auth)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    s = Site(tmp_path_factory.mktemp("totals"))
    with s.client:
        s.store.insert_reports(s.rows)
        yield s


def test_sensor_and_area_totals_decode_the_true_counts_with_the_factorisations_error_bar(site: Site) -> None:
    """"People past counter j since t": windows 10-49 of sensor 0, the area "hall" (sensors 0 and 1) and daily-like
    periods of 10 windows. Totals: the true counts summed, within the stated rounding bound. Error bars: g·‖B_49 −
    B_9‖ weighted by σ_t (dense exact B), √2 times that for the area, and not σ₁√40 (independent noise's)."""
    dep, counter = site.dep, site.dep.counter
    assert counter is not None
    one = site.get("/api/v1/counters/sensors/0/totals", since=600.0, until=3000.0)
    assert one.status_code == 200, one.text
    body = one.json()
    assert (body["first_window"], body["last_window"], body["positions"]) == (10, 49, 40)
    truth = int(site.counts[0, 10:50].sum())
    assert body["rounding_bound"] == 2 * counter.bias_bound
    assert abs(body["total"] - truth) <= body["rounding_bound"] + 1e-6
    b = _dense_b(50)
    s2 = counter.noise_variances()
    exact_var = sum(((b[49][j] - b[9][j]) ** 2 * s2[j] for j in range(50)), Fraction(0))
    exact_std = math.sqrt(exact_var) * counter.grid
    assert body["std"] == pytest.approx(exact_std, rel=1e-9)
    assert abs(body["std"] - counter.sigma_one * math.sqrt(40)) > 0.1 * exact_std  # the weakened error bar
    assert body["interval_95"] == pytest.approx([body["total"] - 1.959963984540054 * body["std"],
                                                 body["total"] + 1.959963984540054 * body["std"]])
    # the running total since t: its last point is the range total, each point within the rounding bound
    running = body["running"]
    assert running[-1]["window"] == 49 and running[-1]["total"] == pytest.approx(body["total"])
    for point in running:
        assert abs(point["total"] - site.counts[0, 10:point["window"] + 1].sum()) <= point["rounding_bound"] + 1e-6
    hall = site.get("/api/v1/counters/areas/hall/totals", since=600.0, until=3000.0, period=600.0).json()
    assert abs(hall["total"] - int(site.counts[:2, 10:50].sum())) <= hall["rounding_bound"] + 1e-6
    assert hall["std"] == pytest.approx(math.sqrt(2) * exact_std, rel=1e-9)
    assert [(p["first_window"], p["last_window"]) for p in hall["periods"]] == [(10, 19), (20, 29), (30, 39),
                                                                                  (40, 49)]
    for p in hall["periods"]:
        lo, hi = p["first_window"], p["last_window"]
        assert abs(p["total"] - int(site.counts[:2, lo:hi + 1].sum())) <= p["rounding_bound"] + 1e-6
        assert p["std"] == pytest.approx(math.sqrt(2) * counter.range_std(lo, hi + 1), rel=1e-12)
    assert dep.areas == {"hall": [0, 1], "door": [2]}
    # periods from a time that is not a window boundary: they partition the range's windows, totals add up
    odd = site.get("/api/v1/counters/sensors/1/totals", since=590.0, until=3030.0, period=610.0).json()
    spans = [(p["first_window"], p["last_window"]) for p in odd["periods"]]
    covered = [w for lo, hi in spans for w in range(lo, hi + 1)]
    assert covered == list(range(odd["first_window"], odd["last_window"] + 1)) == list(range(10, 50))
    assert sum(p["total"] for p in odd["periods"]) == pytest.approx(odd["total"], abs=1e-6)


def test_a_gap_ends_what_can_be_decoded_and_errors_are_problems(site: Site) -> None:
    """Sensor 2 misses window 41: its totals (and its area's) are decoded through window 40 only, and say so.
    Unknown sensors and areas are 404, a bad range or period 422, all RFC 9457 problems; no token, 401. The
    OpenAPI schema documents every status of the three routes."""
    door = site.get("/api/v1/counters/areas/door/totals", since=0.0, until=3600.0).json()
    assert door["decoded_through_window"] == GAP - 1 and door["positions"] == GAP
    assert abs(door["total"] - int(site.counts[2, :GAP].sum())) <= door["rounding_bound"] + 1e-6
    answers = {
        "/api/v1/counters/sensors/3/totals": ({"since": 0.0}, 404),
        "/api/v1/counters/areas/kitchen/totals": ({"since": 0.0}, 404),
        "/api/v1/counters/sensors/0/totals": ({"since": 600.0, "until": 60.0}, 422),
        "/api/v1/counters/areas/hall/totals": ({"since": 0.0, "until": 3000.0, "period": 1.0}, 422),
    }
    for path, (params, status) in answers.items():
        resp = site.client.get(path, params=params, headers={**site.auth, "Accept": "application/problem+json"})
        assert resp.status_code == status, (path, resp.text)
        assert resp.headers["content-type"].startswith("application/problem+json") and resp.json()["status"] == status
    assert site.client.get("/api/v1/counters/sensors/0/totals", params={"since": 0.0}).status_code == 401
    many = site.get("/api/v1/counters/sensors/0/totals", since=0.0, until=3600.0 * 24 * 30, period=60.0)
    assert many.status_code == 422 and "at most 400 periods" in many.json()["message"]
    paths = site.client.get("/openapi.json").json()["paths"]
    for path in ("/api/v1/counters/sensors/{sensor}/totals", "/api/v1/counters/areas/{area}/totals"):
        assert {"200", "401", "404", "422"} <= set(paths[path]["get"]["responses"])
    info = site.get("/api/v1/counters").json()
    assert info["continual"] == {"horizon": 720, "epsilon": 1.0, "delta": 1e-6} and info["areas"]["door"] == [2]


def _wait_for_text(page: Any, selector: str, text: str) -> None:
    """Poll until ``selector``'s text holds ``text`` (the page's CSP forbids wait_for_function's eval)."""
    for _ in range(200):
        if text in (page.text_content(selector) or ""):
            return
        page.wait_for_timeout(100)
    raise AssertionError(f"{selector} never showed {text!r}: {page.text_content(selector)!r}")


def test_the_totals_panel_in_chromium_shows_the_apis_totals_and_error_bars(tmp_path: Path) -> None:
    """A served continual deployment (3 counters, an hour of exact noisy counter releases in its database): the
    dashboard's running-totals panel appears, asks on demand (not in the poll), and shows for the area "hall"
    the API's total ± 1.96 σ (oracle: the same query through the API), hourly rows and the running total's band;
    nothing scrolls sideways, on a desktop and a phone viewport (one collector, one browser); window 59, closed by the
    analyst, states the noise of the decoded count of the window (range_std), not the per-reading σ. Screenshots:
    ``totals-1400.png`` and ``totals-390.png`` in the test's directory."""
    import time
    import uuid

    from dpcloak.service.config import analyst_token, load_master_key, write_deployment

    from .conftest import running_collector
    from .test_dashboard import ARGS, CHROMIUM

    playwright = pytest.importorskip("playwright.sync_api", reason="playwright (service extra) is not installed")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium not found at {CHROMIUM}")
    now = time.time()
    dep = counting_deployment(deployment_id=uuid.uuid4().hex, start=float(int(now - 65 * 60)),
                             grace_seconds=7200.0)  # no window closes: the panel does not need maps
    write_deployment(tmp_path, dep)
    db = sqlite_url(tmp_path / "c.db")
    store = Store(db)
    store.migrate()
    store.register(dep)
    counter = dep.counter
    assert counter is not None
    rng = np.random.default_rng(7)
    rows = []
    for j in range(3):
        stream = counter.stream()
        for w in range(60):
            rows.append({"deployment_id": dep.deployment_id, "sensor_id": j, "window": w, "report_id": f"r{j}-{w:04d}",
                         "value": stream.push(int(rng.integers(0, 8))) * counter.grid, "mac": "00",
                         "received_at": dep.window_end(w)})
    store.insert_reports(rows)
    store.dispose()
    token = analyst_token(load_master_key(tmp_path), deployment_id=dep.deployment_id)
    with running_collector(tmp_path, db, tmp_path / "collector.log") as collector, playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, timeout=60_000)
        with collector.analyst() as client:  # the window's map is from the decoded counts (tests/service/test_windows)
            closed = client.post("/api/v1/windows/59/close")
        assert closed.status_code == 200, closed.text
        assert closed.json()["sigma"] == pytest.approx(counter.range_std(59, 60))
        try:
            for viewport in ({"width": 1400, "height": 900}, {"width": 390, "height": 844}):
                page = browser.new_context(viewport=viewport).new_page()
                errors: list[str] = []
                page.on("pageerror", lambda e, sink=errors: sink.append(str(e)))
                page.goto(collector.url + "/dashboard/#token=" + token, timeout=60_000)
                page.wait_for_selector("#counters-panel:not([hidden])", timeout=20_000)
                _wait_for_text(page, "#counters-total", "since")  # the panel's first answer (the last day)
                page.evaluate("document.getElementById('counters-total').textContent = ''")
                page.select_option("#counters-of", "area:hall")
                page.select_option("#counters-period", "3600")
                page.fill("#counters-since", page.evaluate(
                    f"(() => {{ const d = new Date({dep.start * 1000}); return new Date(d.getTime() - "
                    "d.getTimezoneOffset() * 60000).toISOString().slice(0, 16); })()"))
                since = page.evaluate("new Date(document.getElementById('counters-since').value).getTime() / 1000")
                page.click("#counters-show")
                _wait_for_text(page, "#counters-total", "area hall")
                shown = page.locator("#counters-total")
                with collector.analyst() as client:
                    api = client.get("/api/v1/counters/areas/hall/totals",
                                     params={"since": since, "period": 3600}).json()
                assert float(shown.get_attribute("data-total") or "nan") == pytest.approx(api["total"])
                assert float(shown.get_attribute("data-std") or "nan") == pytest.approx(api["std"])
                text = shown.text_content() or ""
                half = float(f"{1.959963984540054 * api['std']:.4g}")
                assert f"± {half:g}" in text and "area hall" in text
                assert page.locator("#counters-periods tbody tr").count() == len(api["periods"]) >= 1
                assert page.is_visible("#counters-chart")
                with collector.analyst() as client:  # the sensors table states the counters' ε, sums no outputs
                    table = client.get("/api/v1/sensors").json()
                assert table["sensors"][0]["total"] is None
                assert table["sensors"][0]["epsilon_spent"] == pytest.approx(
                    dep.counter_guarantee(table["release_windows_charged"])[0])
                assert "see running totals" in (page.text_content("#sensors") or "")
                _wait_for_text(page, "#window-info", "decoded from its continual counter")
                assert f"noise σ {float(f'{counter.range_std(59, 60):.3g}'):g}" in (page.text_content("#window-info")
                                                                                    or "")
                assert re.search(r"see running totals below \(\d+\) releases$", page.text_content("#totals") or "")
                assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
                page.locator("#counters-panel").scroll_into_view_if_needed()
                page.screenshot(path=str(tmp_path / f"totals-{viewport['width']}.png"), full_page=True)
                assert errors == []
        finally:
            browser.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_node_down_for_15_windows_catches_up_and_its_totals_decode_past_the_gap(
        tmp_path: Path, backend: str, request: pytest.FixtureRequest) -> None:
    """Issue 30: a real counting node (sensor 2) reports windows 0-4 to a real collector, is down for windows 5-19
    and resumes at window 20, when windows 5-17 are closed (their grace is over). Before its catch-up the collector
    decodes its totals through window 4 only and says so; after it (one batch of the 15 missed outputs, recorded
    at window 20 before anything is sent: windows 5-17 stored as catch-ups) through window 23. Oracle: the running
    totals g·B·V in exact Fractions (dense B from the factor's coefficients, not the decoder) of the values the
    node recorded in its ledger, and the true counts (zeros while down) within 12 σ of each running total.
    SQLite and PostgreSQL 15."""
    import httpx

    from dpcloak.service.config import load_credential, write_deployment
    from dpcloak.service.node import SensorNode

    dep = counting_deployment()
    write_deployment(tmp_path, dep, master_key=bytes(32))
    counter = dep.counter
    assert counter is not None
    store = Store(sqlite_url(tmp_path / "c.db") if backend == "sqlite" else request.getfixturevalue("postgres_url"))
    now = [0.0]
    collector = Collector(dep, store, master_key=bytes(32), clock=lambda: now[0])
    client = TestClient(create_app(collector, analyst_token="t0ken"), raise_server_exceptions=False)

    def forward(request: httpx.Request) -> httpx.Response:
        answer = client.post(request.url.path, content=request.content, headers={"content-type": "application/json"})
        return httpx.Response(answer.status_code, content=answer.content, headers=answer.headers)

    node = SensorNode(deployment=dep, credential=load_credential(tmp_path / "sensors" / "sensor-2.json"),
                      ledger=tmp_path / "ledger.db", url="http://collector", clock=lambda: now[0],
                      transport=httpx.MockTransport(forward), backoff=0.001, sleep=lambda s: None)
    counts = [3, 0, 5, 2, 4] + [0] * 15 + [1, 6, 2, 3]
    down = range(5, 20)

    def totals() -> Any:
        answer = client.get("/api/v1/counters/sensors/2/totals", params={"since": 0.0, "until": dep.window_end(23)},
                            headers={"Authorization": "Bearer t0ken"})
        assert answer.status_code == 200, answer.text
        return answer.json()

    with client:
        for w in range(24):
            if w in down:
                continue
            now[0] = dep.window_start(w) + 30.0
            delivery = node.deliver(node.release(float(counts[w]), window=w))
            assert delivery.outcome == "stored", delivery.body
            if w == 20:
                assert dep.latest_window(now[0]) >= 20 and totals()["decoded_through_window"] == 4
                caught = node.catch_up()
                assert [d.window for d in caught] == list(down) and {d.outcome for d in caught} == {"stored"}
                assert sum(bool(d.body.get("catch_up")) for d in caught) >= 13  # windows 5-17 were closed
        body = totals()
        entries = node.ledger.all()
    node.close()
    store.dispose()
    assert body["decoded_through_window"] == 23 and body["positions"] == 24
    values = [Fraction(e.value) / Fraction(counter.grid) for e in entries]
    assert [e.window for e in entries] == list(range(24)) and all(v.denominator == 1 for v in values)
    b = _dense_b(24)
    grid = Fraction(counter.grid)
    oracle = [grid * sum((b[t][j] * values[j] for j in range(t + 1)), Fraction(0)) for t in range(24)]
    running = body["running"]
    assert [p["window"] for p in running] == list(range(24))
    for t, point in enumerate(running):
        assert point["total"] == pytest.approx(float(oracle[t]), rel=1e-9, abs=1e-6)
        assert abs(point["total"] - sum(counts[:t + 1])) < 12 * counter.range_std(0, t + 1) + point["rounding_bound"]
    assert body["total"] == pytest.approx(float(oracle[23]), rel=1e-9, abs=1e-6)

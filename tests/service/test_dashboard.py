"""The dashboard in a real headless Chromium (Debian's, driven by Playwright) against a real collector process.

Checks, at a phone's (390 x 844) and a desktop's (1400 x 900) viewport: no console errors or page
errors, nothing wider than the viewport (``document.body.scrollWidth``), the map, legend, slider,
"follow latest" and the info line visible inside it, the map drawn (non-background pixels), the slider
moving between windows under one fixed colour scale, each window's total and uncertainty shown (against
the API's maps summed here), and each window's status: a window of checkerboard readings (which no heat
map produces) shows "least-residual", its misfit, its residual against the one the noise allows and no
uncertainty; a fit window shows its uncertainty in metres. Without a token, and with a wrong one, the page
says what to do and takes a pasted token. The screenshots are kept as test artefacts in the test's temporary
directory only (``docs/figures/make_dashboard.py`` runs this test and copies the desktop one to the docs).
"""

from __future__ import annotations

import itertools
import math
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from dpcloak.service.auth import sign_report
from dpcloak.service.config import load_credential, load_deployment
from dpcloak.service.node import SensorNode
from dpcloak.service.poisoning import acceptance_interval
from dpcloak.service.store import sqlite_url

from .conftest import CollectorProcess, make_deployment, running_collector

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
WINDOWS = 4
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1400, "height": 900}
STOLEN = (7, 0)
"""(sensor, window) of the report a stolen key sends (at the collector's upper limit)."""
VISIBLE = ("#map", "#legend", "#scale", "#scale-max", "#window-slider", "#follow", "#window-info", "#window-total")


def _send_windows(directory: Path, url: str) -> None:
    dep = load_deployment(directory)
    net = dep.sensor_network
    n_src = net.n_sources
    cols = 6
    for w in range(WINDOWS):
        f = np.zeros(n_src)
        f[(17 + 13 * w) % n_src] = 40.0 * (w + 1)  # two crowds, in people; the first grows window by window
        f[(70 + 5 * w) % n_src] = 30.0
        readings = net.model.matvec(f)
        if w == WINDOWS - 1:  # a checkerboard no heat map produces: the last window's map is least-residual
            readings = np.array([100.0 * ((j % cols + j // cols) % 2 == 0) for j in range(dep.n_sensors)])
        for j in range(dep.n_sensors):
            if j == 3 and w == WINDOWS - 1:
                continue  # one missing sensor in the last window: shown as flagged
            cred = load_credential(directory / "sensors" / f"sensor-{j}.json")
            if (j, w) == STOLEN:  # a stolen key sends the largest value the collector accepts: flagged as an outlier
                value = acceptance_interval(net)[1]
                body = {"deployment": dep.deployment_id, "fingerprint": dep.fingerprint, "sensor": j, "key_id": j,
                        "generation": 0, "window": w, "report_id": "5" * 32, "value": value,
                        "mac": sign_report(cred.key, deployment_id=dep.deployment_id, fingerprint=dep.fingerprint,
                                           sensor=j, window=w, report_id="5" * 32, value=value)}
                answer = httpx.post(f"{url}/api/v1/reports", json=body, timeout=30)
                assert answer.status_code == 201, answer.text
                continue
            node = SensorNode(deployment=dep, credential=cred, ledger=directory / f"ledger-{j}.db", url=url)
            try:
                assert node.submit(float(readings[j]), window=w).outcome == "stored"
            finally:
                node.close()


def _round_up_125(x: float) -> float:
    """The smallest 1, 2 or 5 x 10^k at least x > 0 (by enumeration, not the page's formula)."""
    candidates = [m * 10.0**k for k in range(-6, 12) for m in (1, 2, 5)]
    return min(c for c in candidates if c >= x * (1 - 1e-12))


def _shown(x: float) -> str:
    """``x`` to three significant digits, as the page writes numbers (no trailing zeros)."""
    return f"{float(f'{x:.3g}'):g}"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, CollectorProcess, list[dict[str, Any]]]]:
    directory = tmp_path_factory.mktemp("dashboard")
    make_deployment(directory, sensor_rows=4, sensor_cols=6)
    with running_collector(directory, sqlite_url(directory / "c.db"), directory / "collector.log") as collector:
        _send_windows(directory, collector.url)
        with collector.analyst() as client:
            for w in range(WINDOWS):  # full windows close by themselves; this waits for them (and closes the last)
                assert client.post(f"/api/v1/windows/{w}/close").status_code == 200
            records = [client.get(f"/api/v1/windows/{w}").json() for w in range(WINDOWS)]
        yield directory, collector, records
        assert "Traceback" not in collector.log()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    playwright = pytest.importorskip("playwright.sync_api", reason="playwright (service extra) is not installed")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium not found at {CHROMIUM}; .ci/run installs Debian's chromium")
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, timeout=60_000)
        try:
            yield b
        finally:
            b.close()


def _open(browser: Any, viewport: dict[str, int], url: str, messages: list[str]) -> Any:
    page = browser.new_context(viewport=viewport, device_scale_factor=2 if viewport is PHONE else 1).new_page()
    page.on("console", lambda m: messages.append(f"{m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: messages.append(f"pageerror: {e}"))
    page.goto(url, timeout=60_000)
    return page


def _fits(page: Any, viewport: dict[str, int]) -> None:
    """Nothing scrolls sideways, and every control is visible and inside the viewport's width."""
    assert page.evaluate("document.body.scrollWidth") <= viewport["width"]
    assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
    for selector in VISIBLE:
        assert page.is_visible(selector), selector
        box = page.locator(selector).bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= viewport["width"] + 0.5, (selector, box)
        assert box["width"] > 0 and box["height"] > 0, (selector, box)


def _coloured_pixels(page: Any) -> int:
    return int(page.evaluate("""() => {
        const c = document.getElementById('map'); const d = c.getContext('2d')
            .getImageData(0, 0, c.width, c.height).data;
        let n = 0; for (let i = 0; i < d.length; i += 4) {
            if (d[i + 3] > 0 && (d[i] < 240 || d[i + 1] < 240 || d[i + 2] < 240)) n++; }
        return n; }"""))


@pytest.mark.slow
@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["phone", "desktop"])
def test_dashboard_in_headless_chromium(served: tuple[Path, CollectorProcess, list[dict[str, Any]]], browser: Any,
                                        viewport: dict[str, int]) -> None:
    directory, collector, records = served
    messages: list[str] = []
    last = WINDOWS - 1
    page = _open(browser, viewport, f"{collector.url}/dashboard/#token={collector.token}", messages)
    try:
        page.wait_for_selector(f"#map[data-window='{last}']", state="attached", timeout=30_000)
        assert "token" not in page.evaluate("window.location.href")  # the fragment left the address and history
        assert f"window {last}" in page.inner_text("#window-info")
        assert "missing" in page.inner_text("#window-info")  # the flagged window says so
        assert "differentially private" in page.inner_text("#guarantee")
        assert page.locator("#sensors tbody tr").count() == 24
        _fits(page, viewport)
        dpr = 2 if viewport is PHONE else 1  # the map's backing store is its CSS box times devicePixelRatio
        css = page.locator("#map").bounding_box()
        assert css is not None
        size = page.evaluate("[document.getElementById('map').width, document.getElementById('map').height]")
        assert abs(size[0] - dpr * css["width"]) <= 2 * dpr + 1 and abs(size[1] - dpr * css["height"]) <= 2 * dpr + 1
        assert _coloured_pixels(page) > 1000 * dpr  # cells and sensors drawn
        assert page.get_attribute("#window-slider", "max") == str(WINDOWS - 1)
        bar = float(page.get_attribute("#map", "data-scale-metres") or "nan")  # the metre scale bar
        xs = [float(p[0]) for p in load_deployment(directory).sensor_network.source_positions]
        width = max(xs) - min(xs)
        assert width / 12 <= bar <= width / 2 and f"{bar:g}"[0] in "125", (bar, width)
        # the colour scale: the round number above the largest cell of all windows, the same for every window
        top = _round_up_125(max(max(r["source_map"]) for r in records))
        assert float(page.get_attribute("#map", "data-scale-max") or "nan") == pytest.approx(top)
        assert float(page.inner_text("#scale-max")) == pytest.approx(top)
        assert f"{_shown(math.fsum(records[last]['source_map']))} people" in page.inner_text("#window-total")
        # the least-residual window: its status, misfit and residual against the allowed one, and no uncertainty
        assert records[last]["status"] == "least-residual" and records[last]["uncertainty"] is None
        assert records[last]["residual"] > records[last]["radius"] > 0  # the oracle: the definition of the status
        info, total = page.inner_text("#window-info"), page.inner_text("#window-total")
        assert "least-residual" in total and f"not stated: model misfit {100 * records[last]['misfit']:.2g} %" in total
        assert "does not explain" in info and f"misfit {_shown(100 * records[last]['misfit'])} %" in info
        assert (f"residual {_shown(records[last]['residual'])} people against {_shown(records[last]['radius'])} "
                "people the noise allows") in info
        assert " m (median)" not in total
        if viewport is DESKTOP:
            lines = page.evaluate("""() => [...document.querySelectorAll('#sensors tbody td:nth-child(2)')]
                .map(e => { const r = document.createRange(); r.selectNodeContents(e);
                            return r.getClientRects().length; })""")
            assert lines and set(lines) == {1}, lines  # "last seen" fits on one line
        name = "dashboard.png" if viewport is DESKTOP else "dashboard-phone.png"
        page.screenshot(path=str(directory / name), full_page=True)
        page.locator("#window-slider").fill("0")  # moves the slider and fires its input event
        page.wait_for_selector("#map[data-window='0']", state="attached", timeout=30_000)
        assert "window 0" in page.inner_text("#window-info")
        # issue 33 item 1: the stolen key's sensor is flagged on the dashboard, in words and on the map
        assert f"sensor {STOLEN[0]} flagged" in page.inner_text("#window-info")
        assert page.get_attribute("#map", "data-outliers") == str(STOLEN[0])
        assert [o["sensor"] for o in records[0]["outliers"]] == [STOLEN[0]]
        assert all(r["outliers"] == [] for r in records[1:])  # honest windows: nobody flagged
        assert not page.is_checked("#follow")
        assert float(page.get_attribute("#map", "data-scale-max") or "nan") == pytest.approx(top)  # not rescaled
        assert f"{_shown(math.fsum(records[0]['source_map']))} people" in page.inner_text("#window-total")
        assert records[0]["status"] == "fit" and "fits the readings" in page.inner_text("#window-info")
        assert f"{_shown(records[0]['uncertainty'])} m (median)" in page.inner_text("#window-total")
        page.screenshot(path=str(directory / name.replace(".png", "-fit.png")), full_page=True)
        _fits(page, viewport)
    finally:
        page.context.close()
    assert messages == []
    shot = (directory / name).read_bytes()
    assert shot[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(shot[16:20], "big") == viewport["width"] * dpr


@pytest.mark.slow
@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["phone", "desktop"])
def test_token_pages_say_what_to_do(served: tuple[Path, CollectorProcess, list[dict[str, Any]]], browser: Any,
                                    viewport: dict[str, int]) -> None:
    directory, collector, _ = served
    messages: list[str] = []
    page = _open(browser, viewport, f"{collector.url}/dashboard/", messages)  # no token at all
    try:
        page.wait_for_selector("#token-panel:not([hidden])", timeout=30_000)
        text = page.inner_text("#token-panel")
        assert "needs the analyst token" in text and "analyst.token" in text and "paste" in text
        assert "loading" not in page.inner_text("body") and "401" not in page.inner_text("body")
        assert not page.is_visible("#map")
        assert page.evaluate("document.body.scrollWidth") <= viewport["width"]
        page.fill("#token-input", "not-the-token")  # a wrong one: told so, asked again
        page.click("#token-submit")
        page.wait_for_selector("#token-title:has-text('not valid')", timeout=30_000)
        assert "this token is not valid for this deployment" in page.inner_text("#token-panel").lower()
        assert "token is required" not in page.inner_text("body")
        assert page.evaluate("sessionStorage.length") == 0  # a refused token is not kept
        page.screenshot(path=str(directory / f"token-{viewport['width']}.png"), full_page=True)
        page.fill("#token-input", f"  {collector.token}\n")  # pasted with stray white space
        page.click("#token-submit")
        page.wait_for_selector(f"#map[data-window='{WINDOWS - 1}']", state="attached", timeout=30_000)
        assert page.is_hidden("#token-panel")
        assert collector.token not in page.evaluate("window.location.href")
        _fits(page, viewport)
        page.reload()  # the token lives in this tab's session storage: a reload needs no new paste
        page.wait_for_selector(f"#map[data-window='{WINDOWS - 1}']", state="attached", timeout=30_000)
    finally:
        page.context.close()
    wrong = _open(browser, viewport, f"{collector.url}/dashboard/#token=wrong-token", messages)
    try:  # a wrong token in the fragment: the same message, never "token is required"
        wrong.wait_for_selector("#token-title:has-text('not valid')", timeout=30_000)
        assert "wrong-token" not in wrong.evaluate("window.location.href")
    finally:
        wrong.context.close()
    assert [m for m in messages if "401" not in m] == []  # the refused requests are the only console errors


@pytest.mark.slow
def test_dashboard_polls_only_what_is_new(served: tuple[Path, CollectorProcess, list[dict[str, Any]]],
                                         browser: Any) -> None:
    """After its first page, the page asks only for the windows closed since its cursor, one request at a time
    (with the collector's answers held 2.5 s, polls start 2 s after the previous one ended, never every 2 s),
    and a window closed while it is open appears (runs last: it adds window 3 to the module's collector)."""
    directory, collector, _ = served
    messages: list[str] = []
    requests: list[tuple[str, float, float]] = []
    page = _open(browser, DESKTOP, f"{collector.url}/dashboard/#token={collector.token}", messages)
    try:
        page.on("requestfinished", lambda r: requests.append((r.url, r.timing["startTime"],
                                                              r.timing["startTime"] + r.timing["responseEnd"])))
        page.wait_for_selector(f"#map[data-window='{WINDOWS - 1}']", state="attached", timeout=30_000)
        dep = load_deployment(directory)
        readings = dep.sensor_network.model.matvec(np.full(dep.sensor_network.n_sources, 0.5))
        for j in range(dep.n_sensors):  # a full window closes by itself
            node = SensorNode(deployment=dep, credential=load_credential(directory / "sensors" / f"sensor-{j}.json"),
                              ledger=directory / f"ledger-{j}.db", url=collector.url)
            try:
                assert node.submit(float(readings[j]), window=WINDOWS).outcome == "stored"
            finally:
                node.close()
        page.wait_for_selector(f"#map[data-window='{WINDOWS}']", state="attached", timeout=30_000)
        assert page.get_attribute("#window-slider", "max") == str(WINDOWS)
        page.wait_for_timeout(4500)  # two more polls with nothing new
        # a slow collector (the sensors' answer held 2.5 s): the next poll waits for this one to end, then 2 s
        held_from = len(requests)
        page.route("**/api/v1/sensors", lambda route: (time.sleep(2.5), route.continue_()))
        page.wait_for_timeout(14_000)
    finally:
        page.context.close()
    listing = sorted((t0, u) for u, t0, _ in requests if "/api/v1/windows?" in u)
    assert len(listing) >= 3
    first_page = [u for _, u in listing if "since=" not in u]
    assert len(first_page) <= 1 and (not first_page or first_page[0] == listing[0][1]), listing  # then only new
    starts = sorted(t0 for u, t0, _ in requests[held_from:] if "/api/v1/windows?" in u)
    assert len(starts) >= 2 and all(b - a >= 4000 for a, b in itertools.pairwise(starts)), starts
    assert messages == []


DESKTOP_SHOT = {"width": 1280, "height": 800}
SNAPSHOT = """() => {
    const b = document.getElementById('policy-banner'); const m = document.getElementById('map');
    const cells = [...document.querySelectorAll('#sensors tbody tr')].map(
        (tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent));
    return {window: m.dataset.window ? Number(m.dataset.window) : null, banner: b.textContent,
            status: b.dataset.status || null, renews: b.dataset.renewsAtWindow || null,
            policy: document.getElementById('policy').textContent, rows: cells,
            totals: document.getElementById('totals').textContent}; }"""


DEMO_SCALE = 600.0
DEMO_WINDOW_SECONDS = 300.0
DEMO_SPAN, DEMO_RELEASES = 12, 6
"""The demo test's policy: five-minute windows (half a real second each at 600x), any 12 consecutive (an hour) hold
at most 6 release windows, released in every window (stride 1): the sliding window fills in 30 minutes, then the
sensors skip for budget for 30 minutes (3 real seconds: one or two of the page's polls) until it renews."""
RECORDER = """() => { window.__seen = []; let last = '';
    window.setInterval(() => { const s = (SNAPSHOT)(); const key = JSON.stringify(s);
        if (key !== last) { last = key; window.__seen.push({...s, t: Date.now() / 1000}); } }, 50); }""".replace(
    "SNAPSHOT", SNAPSHOT)
"""Records, in the page, every change of what :data:`SNAPSHOT` reads (every 50 ms), with its Unix time."""


@pytest.mark.slow
def test_serve_demo_two_simulated_hours_in_chromium(tmp_path: Path, browser: Any) -> None:
    """``dpcloak serve --demo --time-scale 600 --windows 24`` runs two simulated hours of five-minute windows (about
    12 real seconds) while headless Chromium shows its dashboard (1280 x 800 and 390 x 844; screenshots kept in
    ``tmp_path``).

    The floor is 2 x 2 sensors written as the demo's deployment with a burst policy (:data:`DEMO_SPAN`,
    :data:`DEMO_RELEASES`, stride 1): the sliding window fills and the sensors really skip for budget, and it
    renews. Checked against the deployment's schedule and the stored reports and ledgers (the oracle: the
    schedule and every sliding window's count recomputed here): every sensor released in every window its budget
    allowed and in none it did not, so its sliding window fills to exactly 6, never more; ``/api/v1/health``
    (polled every 0.15 s by a thread) is ``degraded`` in every poll during a budget skip, naming exactly the
    sensors that released in the sliding window and the window they release again in (the next cycle's first),
    and ``ok`` again after the renewal; the page (every change of its banner and map recorded in the page) shows
    the policy in words, the degraded banner naming the sensors, ``ok`` after the renewal, the renewal moving, and
    its map advancing (ever newer windows, never still longer than a skip and two of its polls while the sensors
    run); the running totals' error bars ±1.96 σ√n. The demo's sensors deliver each window's reports in one
    batch request."""
    import os
    import re
    import sqlite3
    import subprocess
    import sys
    import tempfile
    import threading

    from dpcloak.service import _network, views
    from dpcloak.service.config import Deployment, write_deployment
    from dpcloak.service.ledger import SensorLedger

    from .conftest import free_port

    shm = Path("/dev/shm")
    base = Path(tempfile.mkdtemp(dir=shm)) if shm.is_dir() else tmp_path
    messages: list[str] = []
    polls: list[tuple[float, dict[str, Any]]] = []
    shots: dict[str, Path] = {}
    pages: dict[str, Any] = {}
    windows = round(7200 / DEMO_WINDOW_SECONDS)
    started = time.monotonic()
    stop = threading.Event()

    def poll_health(url: str) -> None:
        with httpx.Client(base_url=url, timeout=10) as client:
            while not stop.wait(0.15):
                try:
                    polls.append((time.time(), client.get("/api/v1/health").json()))
                except (httpx.TransportError, ValueError):
                    continue  # stopping

    poller = None
    try:
        net = _network.floor_plan_network(width=16.0, height=10.0, sensor_cols=2, sensor_rows=2, epsilon=1.0,
                                          delta=1e-6, budget=(30.0, 1e-5), reading_high=200.0)
        dep = Deployment.create(network=net, window_seconds=DEMO_WINDOW_SECONDS, period_windows=DEMO_SPAN,
                                policy_releases=DEMO_RELEASES, stride=1, start=math.floor(time.time()),
                                grace_seconds=2 * DEMO_WINDOW_SECONDS)
        assert dep.fills_up and dep.releases_per_period == DEMO_RELEASES
        write_deployment(base / "dpcloak-demo", dep)
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        cmd = [sys.executable, "-m", "dpcloak", "serve", "--demo", "--port", str(port), "--time-scale",
               str(DEMO_SCALE), "--windows", str(windows)]
        log = (base / "serve.log").open("w")  # not a pipe: nobody reads it while the demo runs
        proc = subprocess.Popen(cmd, cwd=base, stdout=subprocess.DEVNULL, stderr=log, text=True, env=dict(os.environ))
        deadline = time.monotonic() + 120
        while proc.poll() is None and not pages:  # the collector is up: open the dashboard at both sizes
            assert time.monotonic() < deadline
            time.sleep(0.1)
            try:
                httpx.get(url + "/api/v1/health", timeout=10).raise_for_status()
            except (httpx.TransportError, httpx.HTTPStatusError):
                continue
            poller = threading.Thread(target=poll_health, args=(url,), daemon=True)
            poller.start()
            token = (base / "dpcloak-demo" / "analyst.token").read_text().strip()
            pages = {name: _open(browser, size, f"{url}/dashboard/#token={token}", messages)
                     for name, size in (("desktop", DESKTOP_SHOT), ("phone", PHONE))}
            pages["desktop"].evaluate(RECORDER)
        renewed = degraded_seen = False
        while proc.poll() is None:
            assert time.monotonic() < deadline, f"the demo did not finish {windows} windows in 120 s"
            time.sleep(0.2)
            status = pages["desktop"].evaluate("document.getElementById('policy-banner').dataset.status || ''")
            degraded_seen = degraded_seen or status == "degraded"
            renewed = renewed or (degraded_seen and status == "ok")
            state = "degraded" if status == "degraded" else "ok" if renewed else None
            if state and f"{state}-desktop" not in shots:  # the first moment of a budget skip, and of the renewal
                for name, page in pages.items():
                    shots[f"{state}-{name}"] = tmp_path / f"demo-{state}-{name}.png"
                    page.screenshot(path=str(shots[f"{state}-{name}"]), full_page=True)
        ran_until = time.time()
        recorded = pages["desktop"].evaluate("window.__seen")
        stop.set()
        proc.wait(timeout=60)
        log.close()
        err = (base / "serve.log").read_text()
        assert proc.returncode == 0 and "Traceback" not in err, err[-3000:]
        with sqlite3.connect(base / "dpcloak-demo" / "collector.db") as db:
            values = db.execute("SELECT window, sensor_id, value FROM reports ORDER BY window").fetchall()
            reported = {(int(w), int(s)) for w, s, _ in values}
            closed = sorted(int(w) for (w,) in db.execute("SELECT window FROM windows"))
        ledgered = {}
        for j in range(dep.n_sensors):
            cred = load_credential(base / "dpcloak-demo" / "sensors" / f"sensor-{j}.json")
            ledger = SensorLedger(base / "dpcloak-demo" / "ledgers" / f"sensor-{j}.db", credential=cred)
            try:
                ledgered[j] = [e.window for e in ledger.all()]
            finally:
                ledger.close()
    finally:
        stop.set()
        if poller is not None:
            poller.join(timeout=15)
        for page in pages.values():
            page.context.close()
        shutil.rmtree(base, ignore_errors=True) if base != tmp_path else None
    elapsed = time.monotonic() - started
    assert [m for m in messages if "ERR_CONNECTION_REFUSED" not in m] == []  # refused only once it stopped
    # the oracle: the schedule recomputed here (a burst of 6 at the start of every 12 windows) and every sliding
    # window's count from the ledgers; each sensor released in every release window from its first to its last
    first, last = min(w for w, _ in reported), max(w for w, _ in reported)
    assert last - first >= windows - DEMO_SPAN
    expected = [w for w in range(first, last + 1) if w % DEMO_SPAN < DEMO_RELEASES]
    for j, mine in ledgered.items():
        assert mine == expected, (j, mine)
        assert sorted(w for w, s in reported if s == j) == expected
        busiest = max(sum(lo <= w < lo + DEMO_SPAN for w in mine) for lo in range(first - DEMO_SPAN, last + 1))
        assert busiest == DEMO_RELEASES  # the sliding window filled, never overfilled
    assert closed == sorted({w for w, _ in reported})
    # health: degraded in every poll of a budget skip, naming the sensors that released in the sliding window and
    # the next release window (the next cycle's first); ok again after the renewal
    in_skip = [h for _, h in polls if h["window"] % DEMO_SPAN >= DEMO_RELEASES and first <= h["window"] <= last]
    assert len({h["window"] for h in in_skip}) >= DEMO_SPAN - DEMO_RELEASES - 1  # a whole skip, polled throughout
    for h in in_skip:
        w = h["window"]
        filled = sorted({j for v, j in reported if w - DEMO_SPAN < v <= w})
        named = h["policy"]["skipping_for_budget"]
        assert h["status"] == "degraded" and h["policy"]["budget_skip"], h
        assert h["policy"]["next_release_window"] == (w // DEMO_SPAN + 1) * DEMO_SPAN, h
        # the last burst window's reports may still be on their way in the first skip windows (2 windows' grace)
        assert set(named) <= set(filled) and (named == filled or w % DEMO_SPAN < DEMO_RELEASES + 2), (h, filled)
        assert f"skip for budget until window {h['policy']['next_release_window']}" in h["policy"]["message"]
    after = [h for _, h in polls if h["window"] % DEMO_SPAN < DEMO_RELEASES and h["window"] > in_skip[0]["window"]]
    assert after and any(h["status"] == "ok" for h in after), after
    # the page: the policy in words, degraded naming the sensors during a skip, ok after it, the renewal moving
    shown = [r for r in recorded if r["window"] is not None]
    assert shown and all(r["policy"] == views.policy_words(dep) for r in recorded if r["policy"])
    assert "skipped for budget" in shown[0]["policy"] and f"any {DEMO_SPAN} consecutive" in shown[0]["policy"]
    degraded = [r for r in recorded if r["status"] == "degraded"]
    assert any(re.search(r"sensor\(s\) 0, 1, 2, 3 skip for budget until window \d+", r["banner"]) for r in degraded)
    assert renewed and any(r["status"] == "ok" for r in recorded if r["t"] > degraded[0]["t"])
    renewals = [int(r["renews"]) for r in recorded if r["renews"]]
    assert len(set(renewals)) >= 2 and renewals == sorted(renewals)
    assert all(f"renews from window {r['renews']}" in r["banner"] for r in recorded if r["renews"])
    # the map advances: ever newer windows, from the first map the page shows (once the recovery worker is up: up to
    # ten real seconds on a loaded machine) never the same one for longer than a skip (6 windows, 3 real s) and two
    # of the page's polls (2 s each) while the sensors run
    maps = [(r["t"], r["window"]) for r in shown]
    assert [w for _, w in maps] == sorted(w for _, w in maps)
    skip_real = (DEMO_SPAN - DEMO_RELEASES) * DEMO_WINDOW_SECONDS / DEMO_SCALE
    changes = [t for t, _ in maps] + [ran_until]
    assert max(b - a for a, b in itertools.pairwise(changes)) <= skip_real + 5.0, maps
    # running totals "t ± e (n)": t the sum of n consecutive stored reports of the sensor (its sliding window at
    # the page's last poll), e = 1.96 σ √n, both to the three digits shown; budget left "k / 6"
    sigma = float(dep.sensor_network.sigma)
    rows = shown[-1]["rows"]
    assert len(rows) == dep.n_sensors
    for j, row in enumerate(rows):
        total, err95, n = re.fullmatch(r"(-?[\d.e+-]+) ± ([\d.e+-]+) \((\d+)\)", row[2]).groups()  # type: ignore[union-attr]
        assert err95 == _shown(1.96 * sigma * math.sqrt(int(n))) and 0 < int(n) <= dep.releases_per_period
        mine_values = [v for _, s, v in values if s == j]
        sums = {_shown(math.fsum(mine_values[k - int(n):k])) for k in range(int(n), len(mine_values) + 1)}
        assert total in sums, (j, row)
        assert re.fullmatch(rf"\d+ / {dep.releases_per_period}", row[4])
    assert set(shots) == {"ok-desktop", "ok-phone", "degraded-desktop", "degraded-phone"}
    for name, path in shots.items():
        png = path.read_bytes()
        width = DESKTOP_SHOT["width"] if name.endswith("desktop") else 2 * PHONE["width"]
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(png[16:20], "big") == width
    print(f"\ndemo in Chromium: {elapsed:.1f} s, windows {first}..{last} ({len(closed)} closed), {len(reported)} "
          f"reports, {len(polls)} health polls ({len(in_skip)} in budget skips), {len(recorded)} page changes "
          f"({len(degraded)} degraded), renewals {sorted(set(renewals))[:3]}")

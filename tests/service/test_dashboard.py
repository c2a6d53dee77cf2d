"""The dashboard in a real headless Chromium (Debian's, driven by Playwright) against a real collector process.

Checks: no console errors or page errors, the map is drawn (non-background pixels on the canvas),
the time slider moves between windows. The screenshot is kept as a test artefact in the test's
temporary directory only (``docs/figures/make_dashboard.py`` runs this test and copies it to the docs).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from dpcloak.service.config import load_credential, load_deployment
from dpcloak.service.node import SensorNode
from dpcloak.service.store import sqlite_url

from .conftest import make_deployment, running_collector

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
WINDOWS = 3


def _send_windows(directory: Path, url: str) -> None:
    dep = load_deployment(directory)
    net = dep.sensor_network
    n_src = net.n_sources
    for w in range(WINDOWS):
        f = np.zeros(n_src)
        f[(17 + 13 * w) % n_src] = 40.0  # two crowds, in people
        f[(70 + 5 * w) % n_src] = 30.0
        readings = net.model.matvec(f)
        for j in range(dep.n_sensors):
            if j == 3 and w == WINDOWS - 1:
                continue  # one missing sensor in the last window: shown as flagged
            node = SensorNode(deployment=dep, credential=load_credential(directory / "sensors" / f"sensor-{j}.json"),
                              ledger=directory / f"ledger-{j}.db", url=url)
            try:
                assert node.submit(float(readings[j]), window=w).outcome == "stored"
            finally:
                node.close()


@pytest.mark.slow
def test_dashboard_in_headless_chromium(tmp_path: Path) -> None:
    playwright = pytest.importorskip("playwright.sync_api", reason="playwright (service extra) is not installed")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium not found at {CHROMIUM}; .ci/run installs Debian's chromium")
    make_deployment(tmp_path, sensor_rows=4, sensor_cols=6)
    with running_collector(tmp_path, sqlite_url(tmp_path / "c.db"), tmp_path / "collector.log") as collector:
        _send_windows(tmp_path, collector.url)
        with collector.analyst() as client:
            last = WINDOWS - 1
            for w in range(WINDOWS):  # full windows close by themselves; this waits for them (and closes the last)
                assert client.post(f"/api/v1/windows/{w}/close").status_code == 200
            assert len(client.get("/api/v1/windows").json()["windows"]) == WINDOWS
        messages: list[str] = []
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, timeout=60_000)
            try:
                page = browser.new_page(viewport={"width": 1320, "height": 780})
                page.on("console", lambda m: messages.append(f"{m.type}: {m.text}") if m.type == "error" else None)
                page.on("pageerror", lambda e: messages.append(f"pageerror: {e}"))
                page.goto(f"{collector.url}/dashboard/#token={collector.token}", timeout=60_000)
                page.wait_for_function(f"document.getElementById('map').dataset.window === '{last}'",
                                       timeout=30_000)
                assert f"window {last}" in page.inner_text("#window-info")
                assert "missing" in page.inner_text("#window-info")  # the flagged window says so
                assert "differentially private" in page.inner_text("#guarantee")
                assert page.locator("#sensors tbody tr").count() == 24
                coloured = page.evaluate("""() => {
                    const c = document.getElementById('map'); const d = c.getContext('2d')
                        .getImageData(0, 0, c.width, c.height).data;
                    let n = 0; for (let i = 0; i < d.length; i += 4) {
                        if (d[i + 3] > 0 && (d[i] < 240 || d[i + 1] < 240 || d[i + 2] < 240)) n++; }
                    return n; }""")
                assert coloured > 1000  # cells and sensors drawn
                assert page.get_attribute("#window-slider", "max") == str(WINDOWS - 1)
                bar = float(page.get_attribute("#map", "data-scale-metres") or "nan")  # the metre scale bar
                xs = [float(p[0]) for p in load_deployment(tmp_path).sensor_network.source_positions]
                width = max(xs) - min(xs)
                assert width / 12 <= bar <= width / 2 and f"{bar:g}"[0] in "125", (bar, width)
                lines = page.evaluate("""() => [...document.querySelectorAll('#sensors tbody td:nth-child(2)')]
                    .map(e => { const r = document.createRange(); r.selectNodeContents(e);
                                return r.getClientRects().length; })""")
                assert lines and set(lines) == {1}, lines  # "last seen" fits on one line
                page.screenshot(path=str(tmp_path / "dashboard.png"), full_page=True)
                long_one = page.evaluate("""() => { const e = document.querySelector('#sensors tbody td:nth-child(2)');
                    e.textContent = '86399 s ago (window 1000000)'; const r = document.createRange();
                    r.selectNodeContents(e); return r.getClientRects().length; }""")
                assert long_one == 1  # even a day-old sensor in a late window (after the screenshot)
                page.locator("#window-slider").fill("0")  # moves the slider and fires its input event
                page.wait_for_function("document.getElementById('map').dataset.window === '0'", timeout=30_000)
                assert "window 0" in page.inner_text("#window-info")
                assert not page.is_checked("#follow")
            finally:
                browser.close()
        assert "Traceback" not in collector.log()
    assert messages == []
    shot = (tmp_path / "dashboard.png").read_bytes()
    assert shot[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(shot[16:20], "big") == 1320  # the artefact, full width

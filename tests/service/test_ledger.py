"""A sensor's ledger is bound to its credential and configuration, and tampering is refused.

Oracles: an independent replay of the file with sqlite3 + hmac (``tests/privacy/_ledger_oracle``),
the ledger key recomputed here from the documented derivation, and ledger files copied, edited,
deleted and restored by hand.
"""

from __future__ import annotations

import hmac
import json
import shutil
import sqlite3
import sys
import time
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from dpcloak.cli import app
from dpcloak.errors import LedgerIntegrityError
from dpcloak.service.config import load_credential, load_deployment
from dpcloak.service.node import SensorNode
from dpcloak.service.store import sqlite_url

from ._reliability import stored_reports
from .conftest import CollectorProcess, make_deployment

sys.path.insert(0, str(Path(__file__).parents[1] / "privacy"))
from _ledger_oracle import replay


def _ok(request: httpx.Request) -> httpx.Response:
    return httpx.Response(201, json={"status": "stored"})


def _node(directory: Path, sensor: int = 0, ledger: str = "ledger-0.db") -> SensorNode:
    return SensorNode(deployment=load_deployment(directory),
                      credential=load_credential(directory / "sensors" / f"sensor-{sensor}.json"),
                      ledger=directory / ledger, url="http://127.0.0.1:9", transport=httpx.MockTransport(_ok))


def _key(directory: Path, sensor: int = 0) -> bytes:
    cred = json.loads((directory / "sensors" / f"sensor-{sensor}.json").read_text())
    return hmac.new(bytes.fromhex(cred["key"]), b"dpcloak/service/ledger-key/v1", "sha256").digest()


@pytest.fixture
def site(tmp_path: Path) -> Path:
    make_deployment(tmp_path, sensor_rows=1, sensor_cols=3, period_windows=50)
    return tmp_path


def _released(site: Path, windows: range) -> None:
    node = _node(site)
    for w in windows:
        node.submit(2.0, window=w)
    node.close()


def test_the_ledger_replays_and_is_bound_to_credential_and_configuration(site: Path) -> None:
    _released(site, range(3))
    records = replay(site / "ledger-0.db", _key(site))
    dep = load_deployment(site)
    assert records[0][1]["binding"] == {"purpose": "sensor-node", "deployment_id": dep.deployment_id,
                                        "fingerprint": dep.fingerprint, "sensor": 0, "generation": 0}
    assert [(kind, body["window"]) for kind, body in records[1:]] == [("release", 0), ("release", 1), ("release", 2)]
    anchor = json.loads((site / "sensors" / "sensor-0.json").read_text())["ledger"]
    assert anchor["seq"] == 3 and anchor["ledger_id"] == records[0][1]["ledger_id"]
    assert oct((site / "ledger-0.db").stat().st_mode & 0o777) == "0o600"


def test_a_deleted_ledger_stops_the_node(site: Path) -> None:
    _released(site, range(2))
    (site / "ledger-0.db").unlink()
    with pytest.raises(LedgerIntegrityError, match=r"ledger-0\.db.*missing.*deploy reprovision"):
        _node(site)
    assert not (site / "ledger-0.db").exists()  # nothing created in its place


def test_a_restored_older_ledger_stops_the_node(site: Path) -> None:
    _released(site, range(2))
    shutil.copy(site / "ledger-0.db", site / "backup.db")
    _released(site, range(2, 4))
    shutil.copy(site / "backup.db", site / "ledger-0.db")
    assert len(replay(site / "ledger-0.db", _key(site))) == 3  # a valid chain of its own: only the anchor tells
    with pytest.raises(LedgerIntegrityError, match="older copy restored"):
        _node(site)


def test_an_edited_ledger_stops_the_node(site: Path) -> None:
    _released(site, range(3))
    db = sqlite3.connect(site / "ledger-0.db")
    db.execute("DELETE FROM chain WHERE seq = 2")  # forget the release of window 1: it could be released again
    db.commit()
    db.close()
    with pytest.raises(LedgerIntegrityError, match="record 2 is missing"):
        _node(site)


def test_another_sensors_ledger_is_refused(site: Path) -> None:
    _released(site, range(2))
    node = _node(site, sensor=1, ledger="ledger-1.db")
    node.submit(1.0, window=5)
    node.close()
    (site / "ledger-0.db").unlink()
    shutil.copy(site / "ledger-1.db", site / "ledger-0.db")
    with pytest.raises(LedgerIntegrityError, match="does not verify"):
        _node(site)
    # even with sensor 0's anchor removed from its credential (a fresh copy of the credential file)
    cred = json.loads((site / "sensors" / "sensor-0.json").read_text())
    del cred["ledger"]
    (site / "sensors" / "sensor-0.json").write_text(json.dumps(cred))
    with pytest.raises(LedgerIntegrityError, match="does not verify"):
        _node(site)


def test_a_fresh_credential_starts_a_ledger_and_the_same_ledger_reopens(site: Path) -> None:
    _released(site, range(2))
    node = _node(site)
    assert [e.window for e in node.ledger.all()] == [0, 1]
    node.close()


def test_a_second_device_with_a_copied_credential_is_caught_by_the_collector(tmp_path: Path) -> None:
    """Issue 28 defect 3: a credential copied (before its first use) to a second device, which therefore starts a
    ledger of its own and releases the same window with independent noise. The node cannot know; the collector
    keeps the first value, flags the sensor, keeps both as evidence and refuses the sensor from then on. Oracle:
    the collector's database and its security-event API; on today's code the second value was a silent 409."""
    make_deployment(tmp_path, sensor_rows=1, sensor_cols=3)
    device_b = tmp_path / "device-b"
    device_b.mkdir()
    shutil.copy(tmp_path / "sensors" / "sensor-0.json", device_b / "sensor-0.json")  # the copy, taken unused
    collector = CollectorProcess(tmp_path, sqlite_url(tmp_path / "collector.db"), tmp_path / "collector.log")
    dep = load_deployment(tmp_path)
    w = dep.window_at(time.time())
    try:
        first = SensorNode(deployment=dep, credential=load_credential(tmp_path / "sensors" / "sensor-0.json"),
                           ledger=tmp_path / "ledger-a.db", url=collector.url)
        second = SensorNode(deployment=dep, credential=load_credential(device_b / "sensor-0.json"),
                            ledger=device_b / "ledger-b.db", url=collector.url)
        assert first.submit(3.0, window=w).outcome == "stored"
        conflict = second.submit(3.0, window=w)  # fresh noise for the same reading
        assert conflict.outcome == "rejected" and conflict.http_status == 409
        assert conflict.body["error"] == "conflict"
        refused = first.submit(4.0, window=w + 1)  # the genuine device is refused too: the credential is burnt
        assert refused.http_status == 403 and refused.body["error"] == "sensor_flagged"
        first.close()
        second.close()
        with collector.analyst() as client:
            events = client.get("/api/v1/security-events").json()
        assert events["flagged"] == [{"sensor": 0, "generation": 0}]
        [event] = events["events"]
        assert event["window"] == w and event["stored"]["report_id"] != event["received"]["report_id"]
        assert [(s, ww) for ww, s, _, _ in stored_reports(sqlite_url(tmp_path / "collector.db"))] == [(0, w)]
        # re-provisioning: a new credential generation with a new ledger is accepted, the old one is retired
        result = CliRunner().invoke(app, ["deploy", "reprovision", str(tmp_path), "--sensor", "0"])
        assert result.exit_code == 0 and "generation 1" in result.output
        renewed = SensorNode(deployment=dep, credential=load_credential(tmp_path / "sensors" / "sensor-0.json"),
                             ledger=tmp_path / "ledger-a2.db", url=collector.url)
        assert renewed.credential.generation == 1
        later = dep.window_at(time.time()) + 1  # > w, and within the clock skew the node allows (one window)
        assert renewed.submit(5.0, window=later).outcome == "stored"
        renewed.close()
        old = SensorNode(deployment=dep, credential=load_credential(device_b / "sensor-0.json"),
                         ledger=device_b / "ledger-b.db", url=collector.url)
        retired = old.submit(6.0, window=later)
        assert retired.http_status == 403 and retired.body["error"] == "retired_credential"
        old.close()
    finally:
        collector.stop()
    assert "Traceback" not in collector.log()

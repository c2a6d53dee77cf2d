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
from pathlib import Path

import httpx
import pytest

from dpcloak.errors import LedgerIntegrityError
from dpcloak.service.config import load_credential, load_deployment
from dpcloak.service.node import SensorNode

from .conftest import make_deployment

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

"""The sensor node: write-ahead ledger, budget enforcement, retries with one idempotency key.

Oracles: the ledger file re-opened by a fresh node (persistence), a scripted transport
(``httpx.MockTransport``) that records every request the node makes, the deployment's
``releases_per_period``.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import httpx
import pytest

from dpcloak.errors import BudgetExceededError, InvalidParameterError
from dpcloak.service.auth import verify_report
from dpcloak.service.config import load_credential, load_deployment, load_master_key, sensor_key
from dpcloak.service.node import DeliveryError, SensorNode, read_values, tail_csv

from .conftest import make_deployment


class Script:
    """A collector stand-in answering with the given statuses in turn, recording each request body."""

    def __init__(self, statuses: list[int]) -> None:
        self.statuses = list(statuses)
        self.bodies: list[dict[str, object]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.bodies.append(json.loads(request.content))
        status = self.statuses.pop(0) if self.statuses else 201
        if status == 0:
            raise httpx.ConnectError("connection refused")
        return httpx.Response(status, json={"status": "stored" if status == 201 else "x"})


def _node(directory: Path, script: Script, sensor: int = 0) -> SensorNode:
    return SensorNode(deployment=load_deployment(directory),
                      credential=load_credential(directory / "sensors" / f"sensor-{sensor}.json"),
                      ledger=directory / f"ledger-{sensor}.db", url="http://127.0.0.1:9", backoff=0.001,
                      attempts=4, transport=httpx.MockTransport(script))


@pytest.fixture
def small(tmp_path: Path) -> Path:
    make_deployment(tmp_path, sensor_rows=1, sensor_cols=3)
    return tmp_path


def test_report_is_signed_on_grid_and_recorded_before_sending(small: Path) -> None:
    script = Script([])
    node = _node(small, script)
    entry = node.release(2.5, window=3)
    assert script.bodies == []  # nothing sent yet, but the release is on disk
    node.close()
    reopened = _node(small, script)
    assert reopened.ledger.pending() == [entry]
    dep = load_deployment(small)
    g = dep.sensor_network.resolution
    assert abs(entry.value / g - round(entry.value / g)) < 1e-6
    key = sensor_key(load_master_key(small), deployment_id=dep.deployment_id, sensor=0)
    assert verify_report(key, entry.mac, deployment_id=dep.deployment_id, fingerprint=dep.fingerprint, sensor=0,
                         window=3, report_id=entry.report_id, value=entry.value)
    [delivery] = reopened.flush()
    assert delivery.outcome == "stored" and reopened.ledger.pending() == []
    assert script.bodies[0]["value"] == entry.value and script.bodies[0]["report_id"] == entry.report_id
    reopened.close()


def test_retries_resend_the_same_report(small: Path) -> None:
    script = Script([0, 503, 201])
    node = _node(small, script)
    delivery = node.submit(1.0, window=0)
    assert delivery.outcome == "stored" and delivery.http_status == 201
    assert len(script.bodies) == 3
    assert all(b == script.bodies[0] for b in script.bodies)  # same report id, same noisy value, same MAC
    node.close()


def test_undeliverable_report_stays_pending_and_counts_as_spent(small: Path) -> None:
    script = Script([0, 0, 0, 0])
    node = _node(small, script)
    with pytest.raises(DeliveryError, match="stays in the ledger"):
        node.submit(1.0, window=0)
    assert len(node.ledger.pending()) == 1
    assert node.ledger.spent_in_period(0) == 1  # it might have left: counted
    node.close()


def test_rejection_is_not_retried(small: Path) -> None:
    script = Script([409])
    node = _node(small, script)
    assert node.submit(1.0, window=0).outcome == "rejected"
    assert len(script.bodies) == 1
    node.close()


def test_budget_is_enforced_on_the_sensor(tmp_path: Path) -> None:
    dep = make_deployment(tmp_path, sensor_rows=1, sensor_cols=3, budget=(3.0, 1e-5), period_windows=50)
    k = dep.releases_per_period
    assert 1 <= k < 50
    assert dep.guarantee(k)[0] <= 3.0 < dep.guarantee(k + 1)[0]  # the largest count that fits
    script = Script([])
    node = _node(tmp_path, script)
    for w in range(k):
        node.submit(1.0, window=w)
    with pytest.raises(BudgetExceededError, match="nothing released"):
        node.release(1.0, window=k)
    assert len(script.bodies) == k and len(node.ledger.all()) == k
    node.submit(1.0, window=50)  # the next period has a fresh budget
    node.close()


def test_one_release_per_window(small: Path) -> None:
    node = _node(small, Script([]))
    node.release(1.0, window=2)
    with pytest.raises(InvalidParameterError, match="already released"):
        node.release(1.5, window=2)
    node.close()


def test_credential_of_another_deployment_is_refused(small: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    other = tmp_path_factory.mktemp("other")
    make_deployment(other, sensor_rows=1, sensor_cols=3)
    with pytest.raises(InvalidParameterError, match="credential of sensor 0 is for deployment"):
        SensorNode(deployment=load_deployment(small), credential=load_credential(other / "sensors" / "sensor-0.json"),
                   ledger=small / "l.db", url="http://127.0.0.1:9")


def test_inputs_stdin_csv_and_callback(small: Path) -> None:
    assert list(read_values(io.StringIO("reading\n1.5\n\n2\n"))) == [1.5, 2.0]
    with pytest.raises(InvalidParameterError, match="line 3"):
        list(read_values(io.StringIO("1\n2\nx\n")))
    csv_path = small / "r.csv"
    csv_path.write_text("time,value\n0,3.5\n1,4.5\n")
    assert list(tail_csv(csv_path)) == [3.5, 4.5]
    script = Script([])
    node = _node(small, script)
    calls = iter([7.0, 8.0])
    sent = node.run(lambda: next(calls), windows=1)
    assert sent == 1 and len(script.bodies) == 1
    node.close()

"""The per-sensor token bucket, against its arithmetic on a scripted clock (burst, refill, per-sensor state)."""

from __future__ import annotations

import pytest

from dpcloak.errors import InvalidParameterError
from dpcloak.service.limits import FAILED_AUTH_BURST, FAILED_AUTH_RATE, ClientFailureLimit, SensorRateLimit


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_burst_then_refill_at_the_rate() -> None:
    clock = Clock()
    limit = SensorRateLimit(3, rate=2.0, burst=5, clock=clock)
    assert [limit.take(1) for _ in range(5)] == [0.0] * 5  # the burst
    assert limit.take(1) == pytest.approx(0.5)  # one token takes 1 / rate seconds
    assert limit.take(0) == 0.0  # other sensors keep their own bucket
    clock.t += 0.5
    assert limit.take(1) == 0.0
    assert limit.take(1) == pytest.approx(0.5)
    clock.t += 100.0  # refills up to the burst, not beyond
    assert [limit.take(1) for _ in range(6)].count(0.0) == 5


def test_retry_after_is_whole_seconds_at_least_one() -> None:
    assert [SensorRateLimit.retry_after(w) for w in (0.01, 1.0, 1.2, 7.0)] == [1, 1, 2, 7]


@pytest.mark.parametrize(("rate", "burst"), [(0.0, 5), (float("inf"), 5), (1.0, 0)])
def test_bad_parameters_are_refused(rate: float, burst: int) -> None:
    with pytest.raises(InvalidParameterError):
        SensorRateLimit(2, rate=rate, burst=burst)


def test_failed_authentications_are_limited_per_address_against_the_bucket_arithmetic() -> None:
    clock = Clock()
    limit = ClientFailureLimit(rate=4.0, burst=10, max_clients=2, clock=clock)
    assert limit.charge("a", 6) is False and limit.wait("a") == 0.0  # 10 - 6 = 4 tokens left
    assert limit.charge("a", 30) is True  # 4 - 30, floored at -burst = -10: now it waits
    assert limit.wait("a") == pytest.approx((1 + 10) / 4.0)  # 11 tokens to refill at 4 a second
    assert limit.charge("a", 5) is False  # already waiting: no second log line
    clock.t += 11 / 4.0
    assert limit.wait("a") == 0.0
    limit.charge("b", 1)
    limit.charge("c", 1)  # a third address: the least recently charged ("a") is forgotten
    assert set(limit._buckets) == {"b", "c"}


def test_a_flood_of_bad_macs_is_refused_before_parsing_and_honest_addresses_are_served(tmp_path) -> None:
    """Issue 33 item 4: a 1,000-report batch of bad MACs uses up its address's allowance; that address's next
    request is 429 without its body being read, while another address's signed report is stored (201)."""
    import asyncio
    import json

    from dpcloak.service.collector import Collector
    from dpcloak.service.examples import two_sensor_node
    from dpcloak.service.http_ingest import BATCH_PATH, REPORT_PATH, IngestEndpoints
    from dpcloak.service.store import Store, sqlite_url

    deployment, node = two_sensor_node(str(tmp_path), master_key=bytes(32))
    good = node.report_body(node.release(12.0))
    store = Store(sqlite_url(tmp_path / "collector.db"))
    collector = Collector(deployment, store, master_key=bytes(32), clock=lambda: 30.0)
    endpoints = IngestEndpoints(collector)
    clock = Clock()
    endpoints.failures = ClientFailureLimit(rate=FAILED_AUTH_RATE, burst=FAILED_AUTH_BURST, clock=clock)

    async def post(client: str, path: str, payload: object, *, readable: bool = True) -> tuple[int, dict, dict]:
        body = json.dumps(payload).encode()
        scope = {"type": "http", "method": "POST", "path": path, "client": (client, 40000),
                 "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]}
        sent: list[dict] = []

        async def receive() -> dict:
            assert readable, "the body of a refused address was read"
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: dict) -> None:
            sent.append(message)

        await endpoints(scope, receive, send)
        return sent[0]["status"], json.loads(sent[1]["body"]), dict(sent[0]["headers"])

    async def session() -> list[tuple[int, dict, dict]]:
        await collector.start()
        try:
            forged = [{**good, "mac": "0" * 64}] * FAILED_AUTH_BURST
            return [await post("192.0.2.66", BATCH_PATH, {"reports": forged}),
                    await post("192.0.2.66", REPORT_PATH, good, readable=False),
                    await post("192.0.2.10", REPORT_PATH, good)]
        finally:
            await collector.stop()

    (batch, outcomes, _), (refused, body, headers), (honest, _, _) = asyncio.run(session())
    assert batch == 200 and {r["http_status"] for r in outcomes["results"]} == {401}
    assert (refused, body["error"], body["retry_after"], headers[b"retry-after"]) == (429, "rate_limited", 1, b"1")
    assert honest == 201
    assert store.report_counts(deployment.deployment_id) == {0: 1}
    node.close()
    store.dispose()

"""The demo's clock (``dpcloak serve --demo``): a restart resumes it after the windows the sensors' ledgers hold."""

from __future__ import annotations

import threading
from pathlib import Path

from dpcloak.service.config import load_credential, load_deployment, write_deployment
from dpcloak.service.demo import DemoClock, simulate
from dpcloak.service.examples import two_sensor_deployment
from dpcloak.service.node import SensorNode


def test_a_restarted_demo_resumes_its_clock_after_the_ledgers(tmp_path: Path) -> None:
    """A fast demo's sensors released up to 50 windows ahead of the wall clock; a restarted demo's clock (at any
    speed) is moved to the window after the last one their ledgers hold, so the next release is admitted; a clock
    whose ledgers are behind it is not moved back; without the resume the clock is behind the ledger."""
    directory = tmp_path
    write_deployment(directory, two_sensor_deployment(), master_key=bytes(32))
    dep = load_deployment(directory)
    behind = DemoClock(1.0)
    ahead = dep.window_at(behind()) + 50
    (directory / "ledgers").mkdir()
    node = SensorNode(deployment=dep, credential=load_credential(directory / "sensors" / "sensor-1.json"),
                      ledger=directory / "ledgers" / "sensor-1.db", url="http://127.0.0.1:9",
                      clock=lambda: dep.window_start(ahead) + 1.0)
    node.release(5.0, window=ahead)
    node.ledger.acknowledge(ahead)  # delivered before the demo stopped
    node.close()
    assert dep.window_at(behind()) < ahead  # the wall clock is behind the ledger
    clock = DemoClock(4.0)
    assert simulate(directory, url="http://127.0.0.1:9", stop=threading.Event(), windows=0, clock=clock) == 0
    assert dep.window_at(clock()) == ahead + 1 and dep.is_release_window(ahead + 1)
    later = DemoClock(1.0)
    later.resume_at(dep.window_start(ahead + 10))
    simulate(directory, url="http://127.0.0.1:9", stop=threading.Event(), windows=0, clock=later)
    assert dep.window_at(later()) >= ahead + 10  # not moved back

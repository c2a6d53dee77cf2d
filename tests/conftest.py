"""Fixtures shared across the test packages."""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from collections.abc import Callable

import pytest


def _answers(port: int) -> bool:
    """Whether an HTTP server on 127.0.0.1:``port`` answers (any status counts, an error page too)."""
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2)
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False
    return True


@pytest.fixture(scope="session")
def loopback_answers() -> Callable[[int], bool]:
    """The probe "does the server on 127.0.0.1:port answer?" used while waiting for a started server."""
    return _answers


#: The longest tests (node id prefixes; a module's tests that share a module fixture stay together) with their
#: seconds on a loaded 2-core machine. Under ``pytest -n N`` (``--dist worksteal``, pyproject) they start first,
#: spread over the workers longest first: a worker that runs out of tests steals the other's *last* ones, never a
#: long test at the front, so no worker ends with one of them while the others are idle.
LONGEST = (("tests/test_readme.py::test_every_readme_command_line_example_runs_as_written", 376),
           ("tests/service/test_crash.py::test_sigkill_loses_no_acknowledged_report[postgresql]", 230),
           ("tests/service/test_crash.py::test_sigkill_loses_no_acknowledged_report[sqlite]", 210),
           ("tests/service/test_fuzz.py::", 140),
           ("tests/service/test_dashboard.py::", 170),
           ("tests/service/test_sensor_kill.py::", 55),
           ("tests/test_bench_soak.py::", 30))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Put the :data:`LONGEST` tests at the front of each worker's share of the collection (worksteal gives
    worker k the k-th of N contiguous shares, each of what is left divided by the workers left)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
    if workers < 2 or config.getoption("dist", "no") != "worksteal":
        return
    group = {}
    for item in items:
        group[item.nodeid] = next((k for k, (prefix, _) in enumerate(LONGEST) if item.nodeid.startswith(prefix)), None)
    heads: list[list[pytest.Item]] = [[] for _ in range(workers)]
    load = [0.0] * workers
    for k, (_, seconds) in enumerate(LONGEST):  # longest first, each to the least loaded worker
        members = [item for item in items if group[item.nodeid] == k]
        if members:
            w = load.index(min(load))
            heads[w] += members
            load[w] += seconds
    rest = [item for item in items if group[item.nodeid] is None]
    ordered: list[pytest.Item] = []
    left = len(items)
    for w in range(workers):
        share = left // (workers - w)
        take = max(0, share - len(heads[w]))
        ordered += heads[w] + rest[:take]
        rest = rest[take:]
        left -= len(heads[w]) + take
    items[:] = ordered + rest

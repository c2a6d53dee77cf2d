"""Fixtures shared across the test packages."""

from __future__ import annotations

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

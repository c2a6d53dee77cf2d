"""Shared fixtures for the recovery tests: small seeded instances."""

from __future__ import annotations

import pytest

from dpcloak.models import heat_kernel_1d


@pytest.fixture(scope="module")
def paper_model():
    """Gilbert & McMillan's default model: n = 100, m = 50, t = 0.1 (T = 0.05)."""
    return heat_kernel_1d(100, 50, 0.1)


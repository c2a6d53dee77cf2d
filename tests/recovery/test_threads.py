"""The solvers run their small dense kernels on one BLAS thread and restore the user's setting."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from dpcloak.models import heat_kernel_1d
from dpcloak.recovery import bpdn

bpdn_module = importlib.import_module("dpcloak.recovery.bpdn")  # the package re-exports the function


def _blas_threads() -> set[int]:
    return {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}


def test_one_blas_thread_inside_and_user_setting_restored(monkeypatch):
    if not _blas_threads():
        pytest.skip("no BLAS visible to threadpoolctl")
    seen: list[set[int]] = []
    inner = bpdn_module._solve_ipm

    def spy(*args, **kwargs):
        seen.append(_blas_threads())
        return inner(*args, **kwargs)

    monkeypatch.setattr(bpdn_module, "_solve_ipm", spy)
    model = heat_kernel_1d(100, 50, 0.1)
    f0 = np.zeros(100)
    f0[49] = 1.0
    with threadpool_limits(limits=2, user_api="blas"):
        before = _blas_threads()
        rec = bpdn(model, model.matvec(f0), radius=1e-3)
        after = _blas_threads()
    assert rec.converged
    assert seen == [{1}]
    assert 2 in before  # the user's two threads (a single-threaded BLAS, if loaded, stays at 1)
    assert after == before

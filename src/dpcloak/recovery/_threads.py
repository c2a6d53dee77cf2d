"""BLAS threads inside the recovery solvers: one, chosen by the library.

The interior-point method spends its time in small dense kernels (``k × k`` Cholesky factors,
``k × n`` products with ``k`` ≈ 10–200). Multi-threaded BLAS only adds synchronisation there: on a
two-core machine under load, OpenBLAS's default two threads made one 1-D solve at ``n = 2000``
take 2–8 s of wall-clock time (0.6–2 s of CPU) against 0.13 s (0.03 s CPU) with one thread,
measured by ``benchmarks/bench_recovery.py``. The solvers therefore run their numerical work
under ``threadpoolctl``'s limit of one BLAS thread, whatever the user's environment says, and
restore the user's setting on return.
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager
from typing import Any

__all__ = ["single_blas_thread"]

_controller: Any = None
_lock = threading.Lock()


def single_blas_thread() -> AbstractContextManager[Any]:
    """A context manager limiting every loaded BLAS to one thread (the controller is built once)."""
    global _controller
    with _lock:
        if _controller is None:
            from threadpoolctl import ThreadpoolController

            _controller = ThreadpoolController()
        return _controller.limit(limits=1, user_api="blas")

"""BLAS threads inside the recovery solvers: one, chosen by the library.

The interior-point method spends its time in small dense kernels (``k × k`` Cholesky factors,
``k × n`` products with ``k`` ≈ 10–200). Multi-threaded BLAS only adds synchronisation there: on a
two-core machine under load, OpenBLAS's default two threads made one 1-D solve at ``n = 2000``
take 2–8 s of wall-clock time (0.6–2 s of CPU) against 0.13 s (0.03 s CPU) with one thread,
measured by ``benchmarks/bench_recovery.py``. The solvers therefore run their numerical work
under ``threadpoolctl``'s limit of one BLAS thread, whatever the user's environment says, and
restore the user's setting on return. When the environment already pins every BLAS to one thread
(``OPENBLAS``/``MKL``/``BLIS_NUM_THREADS``, each falling back to ``OMP_NUM_THREADS``) there is
nothing to limit, and the loaded libraries are not scanned (about 10 ms on the first call).
"""

from __future__ import annotations

import contextlib
import os
import threading
from contextlib import AbstractContextManager
from typing import Any

__all__ = ["single_blas_thread"]

_controller: Any = None
_lock = threading.Lock()


def _pinned() -> bool:
    """Whether the environment already gives every BLAS one thread."""
    omp = os.environ.get("OMP_NUM_THREADS")
    return all(os.environ.get(var, omp) == "1" for var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                                                           "BLIS_NUM_THREADS"))


def single_blas_thread() -> AbstractContextManager[Any]:
    """A context manager limiting every loaded BLAS to one thread (the controller is built once)."""
    global _controller
    if _pinned():
        return contextlib.nullcontext()
    with _lock:
        if _controller is None:
            from threadpoolctl import ThreadpoolController

            _controller = ThreadpoolController()
        return _controller.limit(limits=1, user_api="blas")

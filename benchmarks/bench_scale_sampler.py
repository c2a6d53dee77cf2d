"""Benchmark: the exact discrete Gaussian sampler, draws per second over a size ladder (issue 34).

For σ = 4 and for a continual counter's σ (about 2²² grid steps), at n = 2¹⁴ … 2²² draws from the OS-keyed
ChaCha20 stream (``rng=None``, the release path), least CPU time of ``--repeat`` runs, each size and sampler in its own
fresh process (peak RSS per process), ours and the peer interleaved:

* **ours** — :func:`dpcloak.privacy.discrete.discrete_gaussian_noise` (bucketed 64-bit word thresholds per σ²,
  :mod:`dpcloak.privacy.bulk` step 7, run as one compiled pass over the words, step 8; the table is built once per
  σ² and cached, and the compiled kernel loaded from numba's cache: both are in the printed "1st call" and not
  counted, as a deployment draws many releases at one σ²);
* **peer** — the same function as it was before (``bulk.py`` at git ``--before``, loaded from the repository:
  per-proposal double enclosures on 53-bit prefixes, per-element bookkeeping);
* the floor — the vectorised exact discrete Laplace at the proposal scale t (one Gaussian draw needs about
  4/3 proposals), in the ours process.

Prints draws/s, the ratio to the old sampler and to the discrete Laplace, and the log-log slope; writes
``benchmarks/results/sampler_dgauss_<sigma>.json``. Goal (issue 34): ≥ 10⁷ draws/s.

Run: ``PYTHONPATH=src python benchmarks/bench_scale_sampler.py [--repeat 3] [--before 4b83644]``.
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import time
import types
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _results

ROOT = Path(__file__).resolve().parent.parent
SIGMA2 = {"s4": Fraction(16), "counter": Fraction(2**62 + 12345, 2**18)}  # counter: σ ≈ 2^22 on the 2^-20 grid
SIZES = [2**14, 2**16, 2**18, 2**20, 2**22]


def _old_bulk(rev: str) -> types.ModuleType:
    """``dpcloak.privacy.bulk`` as it was at git revision ``rev`` (a separate module object)."""
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:src/dpcloak/privacy/bulk.py"],
                            capture_output=True, text=True, check=True).stdout
    module = types.ModuleType("_bulk_before")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(source, f"bulk.py@{rev}", "exec"), module.__dict__)
    return module


def _best(fn: Callable[[], object], repeat: int) -> float:
    """Least CPU time of ``repeat`` calls (this process's own time: on a shared machine wall time also counts the
    wait for a core)."""
    best = math.inf
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def _ours(kind: str, n: int) -> dict:
    from dpcloak.privacy import bulk
    from dpcloak.privacy.discrete import discrete_gaussian_noise, discrete_laplace_noise

    sigma2, repeat = SIGMA2[kind], int(os.environ.get("BENCH_REPEAT", "3"))
    t = bulk.gaussian_proposal_scale(sigma2)
    t0 = time.process_time()
    discrete_gaussian_noise(sigma2, n)  # builds and caches the table (when n is large enough to use one)
    first = time.process_time() - t0
    time_s = _best(lambda: discrete_gaussian_noise(sigma2, n), repeat)
    floor = _best(lambda: discrete_laplace_noise(Fraction(t), n), repeat)
    return {"time": time_s, "first": first, "laplace": floor, "t": t, "rss": _results.peak_rss_mb()}


def _peer(kind: str, n: int) -> dict:
    old = _old_bulk(os.environ.get("BENCH_BEFORE", "4b83644"))
    sigma2, repeat = SIGMA2[kind], int(os.environ.get("BENCH_REPEAT", "3"))
    zeros = np.zeros(n, dtype=np.intp)
    return {"time": _best(lambda: old.discrete_gaussian([sigma2], zeros, old.WordSource(None)), repeat),
            "rss": _results.peak_rss_mb()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--before", default="4b83644", help="git revision of the old sampler")
    _results.add_worker_option(parser)
    args = parser.parse_args()
    if _results.run_worker(args, _ours, _peer):
        return
    os.environ["BENCH_REPEAT"], os.environ["BENCH_BEFORE"] = str(args.repeat), args.before
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    for kind, sigma2 in SIGMA2.items():
        print(f"\n== exact discrete Gaussian, sigma {math.sqrt(float(sigma2)):.6g} "
              f"(draws per CPU second, best of {args.repeat})")
        print(f"{'n':>6} {'ours':>9} {'1st call':>9} {'old':>9} {'ours/old':>8} {'Laplace':>9} {'ours/Lap':>8} "
              f"{'RSS MB':>7} {'old RSS':>7}")
        rows = []
        for n in SIZES:
            ours = _results.spawn_worker(__file__, "ours", kind, n, None)
            peer = _results.spawn_worker(__file__, "peer", kind, n, None)
            assert ours is not None and peer is not None
            r = _results.row(f"2^{n.bit_length() - 1}", n, ours["time"], peer["time"], math.inf, ours["rss"])
            rows.append(r)
            print(f"{r['size']:>6} {n / ours['time']:>9.3g} {n / ours['first']:>9.3g} {n / peer['time']:>9.3g} "
                  f"{peer['time'] / ours['time']:>8.2f} {n / ours['laplace']:>9.3g} "
                  f"{ours['laplace'] / ours['time']:>8.2f} {ours['rss']:>7.0f} {peer['rss']:>7.0f}", flush=True)
        _results.write(f"sampler_dgauss_{kind}", f"exact discrete Gaussian, sigma {math.sqrt(float(sigma2)):.4g}",
                       "previous vectorised sampler", "draws", rows)


if __name__ == "__main__":
    main()

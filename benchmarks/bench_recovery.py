"""Benchmark: dpcloak's BPDN solver against CVXPY + Clarabel, in the same run (issue 20).

Problems (Gilbert & McMillan Algorithm 1, default χ² radius, σ = 0.1, three unit sources):

* the 1-D heat kernel ``heat_kernel_1d(n, n/2, t)`` for ``t ∈ {0.05, 0.5}`` over the size ladder
  ``n ∈ {1000, 2000, 4000, 8000, 16000}``;
* the 2-D floor: 256 × 256 sources seen by a 128 × 128 sensor grid (Kronecker heat kernel,
  ``t = 0.1``, σ = 0.05), and the 64 × 64 / 32 × 32 case of wave 1;
* the first call in a fresh process against the second (what a CLI user pays every time);
* a σ sweep with and without ``warm_start``.

Every dpcloak timing is taken twice, in separate processes: with the BLAS thread count a user
has by default (the solver limits itself to one thread inside, :mod:`dpcloak.recovery._threads`)
and with ``OMP/OPENBLAS/MKL_NUM_THREADS=1`` pinned in the environment. "cold" clears the
compression cache first; "warm" reuses it (a sweep over noise draws). Each is the best of
``--repeat`` runs, in wall-clock and CPU (``time.process_time``) seconds. CVXPY + Clarabel runs in
the default environment with a 180 s limit per solve (a size that takes longer is reported as
such and the larger sizes are skipped). Printed: times, the ratio CVXPY / dpcloak-cold, the
relative objective gap, and the log-log slope of the cold time over ``n ≥ 2000``.

The machine this runs on is shared (2 cores, several engineers): wall-clock times include waiting
for a core; the CPU times are the steadier measure.

Run: ``PYTHONPATH=src /work/venv/bin/python benchmarks/bench_recovery.py [--quick] [--repeat R] [--floor-ladder]``
(``--quick``: no CVXPY, ladder up to 8000). ``--robust-window [W]`` times instead one 1,000-sensor collector
window with the outlier test (:func:`dpcloak.service.poisoning.robust_recover`) against its old fixed 3 σ trigger
and the plain recovery, interleaved (about 20 s).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _results

LADDER = (1000, 2000, 4000, 8000, 16000)
TIMES = (0.05, 0.5)
REFERENCE_LIMIT = 180.0
PINNED = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _readings(model, k: int, sigma: float, seed: int):
    import numpy as np

    rng = np.random.default_rng(seed)
    n = model.shape[1]
    f0 = np.zeros(n)
    f0[rng.choice(n, k, replace=False)] = 1.0
    return model.matvec(f0) + sigma * rng.standard_normal(model.shape[0])


def _best(fn, repeat: int) -> tuple[float, float, object]:
    wall, cpu, out = math.inf, math.inf, None
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        wall, cpu = min(wall, time.perf_counter() - w0), min(cpu, time.process_time() - c0)
    return wall, cpu, out


def _model(spec: dict):
    from dpcloak.domains import Grid
    from dpcloak.models import heat_kernel_1d, heat_kernel_2d

    if spec["kind"] == "1d":
        return heat_kernel_1d(spec["n"], spec["n"] // 2, spec["t"])
    src, sen = spec["sources"], spec["sensors"]
    return heat_kernel_2d(Grid((src, src)), Grid((sen, sen)), spec["t"])


def worker(spec: dict, repeat: int) -> dict:
    """Time dpcloak on one problem in this process (its environment decides the BLAS threads)."""
    from dpcloak.recovery import bpdn, clear_compression_cache

    model = _model(spec)
    y = _readings(model, 3, spec["sigma"], 0)

    def cold():
        clear_compression_cache()
        return bpdn(model, y, sigma=spec["sigma"])

    cold_wall, cold_cpu, rec = _best(cold, repeat)
    warm_wall, warm_cpu, _ = _best(lambda: bpdn(model, y, sigma=spec["sigma"]), repeat)
    return {"cold": cold_wall, "cold_cpu": cold_cpu, "warm": warm_wall, "warm_cpu": warm_cpu,
            "objective": rec.objective, "converged": rec.converged, "steps": rec.n_iter,
            "rss": _results.peak_rss_mb()}


def reference(spec: dict) -> dict:
    """CVXPY + Clarabel on the same problem (this process, default environment)."""
    import numpy as np

    from dpcloak.recovery import bpdn

    model = _model(spec)
    y = _readings(model, 3, spec["sigma"], 0)
    w0 = time.perf_counter()
    ref = bpdn(model, y, sigma=spec["sigma"], solver="cvxpy")
    return {"time": time.perf_counter() - w0, "objective": ref.objective, "status": ref.message,
            "finite": bool(np.all(np.isfinite(ref.x)))}


def first_call() -> dict:
    """Fresh process: import, first and second cold call at (2000, 1000), t = 0.05."""
    w0 = time.perf_counter()
    from dpcloak.models import heat_kernel_1d
    from dpcloak.recovery import bpdn, clear_compression_cache

    imported = time.perf_counter() - w0
    model = heat_kernel_1d(2000, 1000, 0.05)
    y = _readings(model, 3, 0.1, 0)
    calls = []
    for _ in range(2):
        clear_compression_cache()
        w, c = time.perf_counter(), time.process_time()
        bpdn(model, y, sigma=0.1)
        calls.append((time.perf_counter() - w, time.process_time() - c))
    return {"import": imported, "first": calls[0], "second": calls[1]}


def _spawn(args: list[str], env: dict[str, str] | None, timeout: float | None) -> dict | None:
    full_env = {**os.environ, **(env or {})}
    if env is None:
        for var in PINNED:
            full_env.pop(var, None)
    try:
        done = subprocess.run([sys.executable, __file__, *args], env=full_env, capture_output=True, text=True,
                              timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return None
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def peer_step(spec: dict, ours: dict, limit: float, *, ratio_width: int) -> tuple[str, float | None, bool]:
    """Run CVXPY + Clarabel on ``spec`` in its own process (killed after ``limit`` s) against our cold result
    ``ours``: the table cell (time, ratio to our cold wall time, relative objective gap), the peer's time (``None``
    beyond the limit) and whether the ladder's larger sizes still run the peer."""
    ref = _spawn(["--reference", json.dumps(spec)], None, limit)
    if ref is None or ref["time"] > limit:
        return f" {f'> {limit:g}':>10} (skipped beyond)", None, False
    gap = (ours["objective"] - ref["objective"]) / max(1.0, abs(ref["objective"]))
    return f" {ref['time']:>10.1f} {ref['time'] / ours['cold']:>{ratio_width}.0f} {gap:>9.1e}", ref["time"], True


def ladder(t: float, sizes: tuple[int, ...], repeat: int, references: bool, limit: float = REFERENCE_LIMIT) -> None:
    print(f"\n== 1-D heat kernel, m = n/2, t = {t:g}, σ = 0.1  (ms; wall / CPU, best of {repeat})")
    print(f"{'n':>6} | {'cold default':>15} {'cold pinned':>15} | {'warm default':>13} {'warm pinned':>13} | "
          f"{'steps':>5} {'RSS MB':>7} | {'Clarabel s':>10} {'ratio':>7} {'gap':>9}")
    cold_default = []
    rows = []
    ref_alive = references
    for n in sizes:
        spec = {"kind": "1d", "n": n, "t": t, "sigma": 0.1}
        payload = ["--worker", json.dumps(spec), "--repeat", str(repeat)]
        d = _spawn(payload, None, None)
        p = _spawn(payload, PINNED, None)
        assert d is not None and p is not None
        cold_default.append(d["cold"])
        line = (f"{n:>6} | {d['cold'] * 1e3:>7.0f} /{d['cold_cpu'] * 1e3:>6.0f} {p['cold'] * 1e3:>7.0f} /"
                f"{p['cold_cpu'] * 1e3:>6.0f} | {d['warm'] * 1e3:>5.0f} /{d['warm_cpu'] * 1e3:>5.0f} "
                f"{p['warm'] * 1e3:>5.0f} /{p['warm_cpu'] * 1e3:>5.0f} | {d['steps']:>5} {d['rss']:>7.0f}")
        if not d["converged"]:
            line += " (not converged)"
        ref_time = None
        if ref_alive:
            text, ref_time, ref_alive = peer_step(spec, d, limit, ratio_width=7)
            line += f" |{text}"
        if references:  # a row per size; without references (--quick) the results file is left alone
            rows.append(_results.row(str(n), n, d["cold"], ref_time, limit, d["rss"]))
        print(line, flush=True)
    print(f"   log-log slope of the cold time (default threads) over n ≥ 2000: "
          f"{_results.slope_text(_results.slope(list(sizes), cold_default, min_n=2000))}")
    if rows:
        _results.write(f"bpdn_heat1d_t{t:g}", f"BPDN, 1-D heat kernel t = {t:g}, m = n/2, cold, default threads",
                       "CVXPY + Clarabel", "sources", rows)


def floor_ladder(sides: tuple[int, ...], repeat: int, limit: float) -> None:
    """Issue 34: cold BPDN on the 2-D floor (side² sources, (side/4)² sensors, t = 0.1, σ = 0.05), default threads,
    against CVXPY + Clarabel (dense matrix) up to the first size it does not finish within ``limit``."""
    print(f"\n== 2-D floor ladder, (side/4)² sensors, t = 0.1, σ = 0.05 (s; cold wall / CPU, best of {repeat})")
    print(f"{'sources':>9} | {'cold':>7} {'CPU':>7} {'steps':>5} | {'Clarabel s':>10} {'ratio':>8} {'gap':>9} | "
          f"{'RSS MB':>7}")
    rows, ref_alive = [], True
    for side in sides:
        spec = {"kind": "2d", "sources": side, "sensors": side // 4, "t": 0.1, "sigma": 0.05}
        d = _spawn(["--worker", json.dumps(spec), "--repeat", str(repeat)], None, None)
        assert d is not None
        line = f"{f'{side}²':>9} | {d['cold']:>7.2f} {d['cold_cpu']:>7.2f} {d['steps']:>5} |"
        ref_time = None
        text = f" {'not run':>10}"
        if ref_alive:
            text, ref_time, ref_alive = peer_step(spec, d, limit, ratio_width=8)
        line += f"{text} |"
        rows.append(_results.row(f"{side}²", side * side, d["cold"], ref_time, limit, d["rss"]))
        print(f"{line} {d['rss']:>7.0f}", flush=True)
    _results.write("bpdn_floor2d", "BPDN, 2-D floor, (side/4)² sensors, t = 0.1, cold, default threads",
                   "CVXPY + Clarabel (dense)", "sources", rows)


def floor2d(sources: int, sensors: int, t: float, sigma: float, repeat: int) -> None:
    spec = {"kind": "2d", "sources": sources, "sensors": sensors, "t": t, "sigma": sigma}
    payload = ["--worker", json.dumps(spec), "--repeat", str(repeat)]
    d = _spawn(payload, None, None)
    p = _spawn(payload, PINNED, None)
    assert d is not None and p is not None
    print(f"\n== 2-D floor {sources}² sources, {sensors}² sensors, t = {t:g}, σ = {sigma:g}: cold "
          f"{d['cold']:.2f} s (CPU {d['cold_cpu']:.2f}) default threads, {p['cold']:.2f} s (CPU {p['cold_cpu']:.2f}) "
          f"pinned; warm {d['warm']:.2f} / {p['warm']:.2f} s; {d['steps']} steps, converged {d['converged']}")


def sweep(points: int = 11) -> None:
    """A σ sweep on one noise draw (an experiment's inner loop): cold starts vs ``warm_start``."""
    import numpy as np

    from dpcloak.models import heat_kernel_1d
    from dpcloak.recovery import bpdn

    model = heat_kernel_1d(1000, 500, 1.0)
    y0 = _readings(model, 3, 0.0, 0)
    noise = np.random.default_rng(99).standard_normal(model.shape[0])
    bpdn(model, y0 + 0.1 * noise, sigma=0.1)  # compression cached, as in any sweep
    totals = {"cold": [0.0, 0], "warm": [0.0, 0]}
    prev, worst = None, 0.0
    for sigma in np.linspace(0.08, 0.12, points):
        y = y0 + sigma * noise
        w = time.process_time()
        cold = bpdn(model, y, sigma=sigma)
        totals["cold"][0] += time.process_time() - w
        w = time.process_time()
        warm = bpdn(model, y, sigma=sigma, warm_start=prev)
        totals["warm"][0] += time.process_time() - w
        totals["cold"][1] += cold.n_iter
        totals["warm"][1] += warm.n_iter
        worst = max(worst, abs(warm.objective - cold.objective) / max(1.0, cold.objective))
        prev = warm
    print(f"\n== σ sweep ({points} points, ±20 %), 1-D (1000, 500), T = 0.5: "
          f"cold {totals['cold'][0] * 1e3:.0f} ms CPU / {totals['cold'][1]} steps, "
          f"warm-started {totals['warm'][0] * 1e3:.0f} ms CPU / {totals['warm'][1]} steps, "
          f"largest objective difference {worst:.1e}")


def robust_window(windows: int) -> None:
    """Issue 34: one 1,000-sensor collector window (the collector benchmarks' floor, 1,000 x 130, exact discrete
    Gaussian noise, 8-draw bootstrap, warm-started, one BLAS thread) recovered with the outlier test's gate at the
    largest of m noise draws (``poisoning.gate_cells``), against the same test with the fixed 3 σ trigger it had
    and against the plain recovery without the test, interleaved window by window."""
    import statistics
    from unittest import mock

    import numpy as np
    from threadpoolctl import threadpool_limits

    import _collector_load as shared
    from dpcloak.privacy.discrete import discrete_gaussian_noise
    from dpcloak.service import poisoning

    net = shared.floor_network()
    g, sigma = float(net.resolution), float(net.sigma)
    cells = np.round(shared.crowd_readings(net) / g)
    noise = discrete_gaussian_noise(net.mechanism.sigma2, windows * net.n_sensors, rng=34).reshape(windows, -1)
    everyone = np.ones(net.n_sensors, dtype=bool)
    fixed_3_sigma = mock.patch.object(poisoning, "gate_cells", lambda mech, m: math.floor(3 * sigma / g))
    kinds = ("gate at max of m draws", "fixed 3 σ gate", "plain recovery")
    cpu: dict[str, list[float]] = {k: [] for k in kinds}
    wall: dict[str, list[float]] = {k: [] for k in kinds}
    tested = {k: 0 for k in kinds}
    previous: dict[str, object] = {k: None for k in kinds}
    load0 = os.getloadavg()
    with threadpool_limits(limits=1, user_api="blas"):
        for w, y in enumerate(noise):
            values = g * (cells + y)
            for kind in kinds[::1 if w % 2 == 0 else -1]:
                w0, c0 = time.perf_counter(), time.thread_time()
                if kind == "plain recovery":
                    previous[kind] = net.recover(values, warm_start=previous[kind], uncertainty_draws=8)
                else:
                    with fixed_3_sigma if kind == "fixed 3 σ gate" else contextlib.nullcontext():
                        robust = poisoning.robust_recover(net, values, everyone, warm_start=previous[kind])
                    previous[kind], tested[kind] = robust.recovery, tested[kind] + (robust.tested > 0)
                if w:  # the first window is cold for all three
                    wall[kind].append(time.perf_counter() - w0)
                    cpu[kind].append(time.thread_time() - c0)
    print(f"\n== one {net.n_sensors}-sensor x {net.n_sources}-source collector window, 8-draw bootstrap, warm-started, "
          f"one BLAS thread ({windows} windows, median after the first; load average {load0[0]:.2f} at the start, "
          f"{os.getloadavg()[0]:.2f} at the end)")
    ours = statistics.median(cpu[kinds[0]])
    for kind in kinds:
        c, wl = statistics.median(cpu[kind]), statistics.median(wall[kind])
        runs = "" if kind == "plain recovery" else f", leave-one-out test run in {tested[kind]} of {windows} windows"
        print(f"   {kind:>22}: {c * 1e3:7.1f} ms CPU, {wl * 1e3:7.1f} ms wall{runs}; CPU ratio to the new gate "
              f"{c / ours:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="no CVXPY; ladder up to n = 8000")
    parser.add_argument("--repeat", type=int, default=None, help="best-of repeats per timing (3; 1 with --quick)")
    parser.add_argument("--limit", type=float, default=REFERENCE_LIMIT,
                        help="CVXPY + Clarabel time limit per solve (default 180 s, the issue's; 60 keeps a run short)")
    parser.add_argument("--floor-ladder", action="store_true",
                        help="only the 2-D floor ladder (64² … 512² sources) against CVXPY + Clarabel")
    parser.add_argument("--robust-window", type=int, nargs="?", const=40, default=None, metavar="WINDOWS",
                        help="only the collector's 1,000-sensor window with the outlier test's gate (40 windows)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--reference", help=argparse.SUPPRESS)
    parser.add_argument("--first-call", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.repeat is None:
        args.repeat = 1 if args.quick else 3
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker), args.repeat)))
        return
    if args.reference:
        print(json.dumps(reference(json.loads(args.reference))))
        return
    if args.first_call:
        print(json.dumps(first_call()))
        return
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} (shared with other engineers)")
    if args.robust_window:
        robust_window(args.robust_window)
        return
    if args.floor_ladder:
        floor_ladder((64, 128, 256, 512), args.repeat, args.limit)
        return
    sizes = LADDER[:-1] if args.quick else LADDER
    for t in TIMES:
        ladder(t, sizes, args.repeat, references=not args.quick, limit=args.limit)
    floor2d(256, 128, 0.1, 0.05, args.repeat)
    floor2d(64, 32, 0.1, 0.05, args.repeat)
    print("\n== first call in a fresh process, (2000, 1000), t = 0.05 (s; wall / CPU)")
    for label, env in (("default threads", None), ("pinned", PINNED)):
        fc = _spawn(["--first-call"], env, None)
        assert fc is not None
        ratio = fc["first"][0] / fc["second"][0]
        print(f"   {label:>15}: import {fc['import']:.2f}, first {fc['first'][0]:.3f} / {fc['first'][1]:.3f}, "
              f"second {fc['second'][0]:.3f} / {fc['second'][1]:.3f}, first/second {ratio:.2f}")
    sweep()
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()

"""Benchmark: noise calibration and sampling against what a user would otherwise pick.

1. Analytic Gaussian calibration: ``GaussianMechanism(calibration="analytic")`` vs
   ``dp_accounting.pld.accountant.get_smallest_gaussian_noise`` (the same quantity computed by
   dp_accounting): time per calibration and relative difference of σ.
2. σ of the three calibrations at Gilbert & McMillan's default (ε = 1, δ = 0.1) and at (0.5, 1e-5): how much
   noise the paper's formula adds compared to the analytic optimum.
3. Sampling 10⁴ readings: numpy Gaussian (floating point, not deployment-safe) vs the exact
   discrete Gaussian with ``rng=None`` (deployment: OS-keyed ChaCha20) at grid Δ2/1024, in draws per second.
4. Sampling 10⁶ Laplace readings: numpy Laplace (floating point) vs the exact discrete Laplace of
   ``DiscreteLaplaceMechanism`` at grid Δ1/1024 (vectorised exact sampler of ``dpcloak.privacy.bulk``,
   OS-keyed ChaCha20 and seeded), in draws per second. End-to-end heatmap noise:
   ``bench_secure_noise.py``.

Run: ``PYTHONPATH=src python benchmarks/bench_mechanisms.py``.
"""

from __future__ import annotations

import time

import numpy as np
from dp_accounting.pld import accountant, common

from dpcloak.privacy import DiscreteGaussianMechanism, DiscreteLaplaceMechanism, GaussianMechanism, LaplaceMechanism


def timed(fn, repeat: int = 1):
    start = time.perf_counter()
    for _ in range(repeat):
        value = fn()
    return value, (time.perf_counter() - start) / repeat


def main() -> None:
    print("1. analytic Gaussian calibration (sensitivity 1)")
    print(f"{'(eps, delta)':18s} {'dpcloak [ms]':>13s} {'dp_accounting [ms]':>19s} {'ratio':>8s} "
          f"{'rel. diff sigma':>16s}")
    for eps, delta in [(1.0, 0.1), (0.5, 1e-5), (5.0, 1e-8), (0.05, 1e-10)]:
        ours, t_ours = timed(lambda e=eps, d=delta: GaussianMechanism(epsilon=e, delta=d, sensitivity=1.0).sigma, 20)
        params = common.DifferentialPrivacyParameters(eps, delta)
        theirs, t_theirs = timed(lambda p=params: accountant.get_smallest_gaussian_noise(p, 1, 1.0), 3)
        print(f"{f'({eps:g}, {delta:g})':18s} {1e3 * t_ours:13.3f} {1e3 * t_theirs:19.3f} "
              f"{t_theirs / t_ours:7.0f}x {(ours - theirs) / theirs:16.1e}")

    print("\n2. sigma / Delta2 per calibration")
    for eps, delta in [(1.0, 0.1), (0.5, 1e-5)]:
        row = []
        for cal in ("analytic", "classic", "paper"):
            try:
                mech = GaussianMechanism(epsilon=eps, delta=delta, sensitivity=1.0, calibration=cal)
                row.append(f"{cal}={mech.sigma:.4g}")
            except ValueError:
                row.append(f"{cal}=refused")
        print(f"  eps={eps:g}, delta={delta:g}: " + ", ".join(row))

    print("\n3. sampling 10^4 readings")
    x = np.zeros((10_000, 1))  # 10^4 one-coordinate releases
    gauss = GaussianMechanism(epsilon=1.0, delta=0.1, sensitivity=1.0)
    disc = DiscreteGaussianMechanism(epsilon=1.0, delta=0.1, sensitivity=1.0)
    _, t_np = timed(lambda: gauss.privatize(x, rng=0), 10)
    _, t_disc = timed(lambda: disc.privatize(x))
    print(f"  numpy float Gaussian: {x.size / t_np:12.0f} draws/s")
    print(f"  exact discrete Gaussian (OS-keyed ChaCha20, grid Δ/1024): {x.size / t_disc:12.0f} draws/s "
          f"({t_disc / t_np:.0f}x slower; sigma {disc.sigma:.4g} vs {gauss.sigma:.4g})")

    print("\n4. sampling 10^6 Laplace readings (one-coordinate releases)")
    x = np.zeros((1_000_000, 1))
    lap = LaplaceMechanism(epsilon=1.0, sensitivity=1.0)
    dlap = DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=1.0)
    _, t_lap = timed(lambda: lap.privatize(x, rng=0), 5)
    _, t_os = timed(lambda: dlap.privatize(x), 5)
    _, t_seed = timed(lambda: dlap.privatize(x, rng=0), 5)
    print(f"  numpy float Laplace: {x.size / t_lap:12.0f} draws/s")
    print(f"  exact discrete Laplace, OS-keyed ChaCha20: {x.size / t_os:12.0f} draws/s ({t_os / t_lap:.1f}x)")
    print(f"  exact discrete Laplace, seeded:            {x.size / t_seed:12.0f} draws/s ({t_seed / t_lap:.1f}x)")


if __name__ == "__main__":
    main()

"""Benchmark: "what have I spent after k releases?" — dpcloak's closed form vs dp-accounting's accountants.

For k Gaussian releases (noise multiplier σ/Δ) and a target δ, the cumulative ε from

* ``dpcloak.privacy.privacy_spent(..., accountant="closed")`` (one Gaussian with √k·Δ, exact profile,
  the default of ``ReadingAccountant``),
* ``dp_accounting.pld.PLDAccountant`` at its default discretisation (1e-4), a fresh accountant per
  query as a budget check would do,
* ``dp_accounting.rdp.RdpAccountant`` (default orders),

with the time per query, the ratio PLD time / closed-form time, and the relative difference of ε
(PLD is pessimistic by construction, RDP is an upper bound). Also the discrete Gaussian (zCDP) closed
form against the RDP accountant.

Run: ``PYTHONPATH=src python benchmarks/bench_accounting.py``. Numbers depend on machine load;
report the ratios of one run.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import dp_accounting
from dp_accounting.pld import PLDAccountant
from dp_accounting.rdp import RdpAccountant

from dpcloak.privacy import DiscreteGaussianMechanism, GaussianMechanism, privacy_spent


def per_call(fn: Callable[[], float], repeat: int) -> tuple[float, float]:
    """Value and median wall time per call over ``repeat`` calls."""
    times = []
    value = fn()
    for _ in range(repeat):
        start = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - start)
    return value, statistics.median(times)


def pld_epsilon(nm: float, k: int, delta: float) -> float:
    acc = PLDAccountant()
    acc.compose(dp_accounting.GaussianDpEvent(nm), k)
    return float(acc.get_epsilon(delta))


def rdp_epsilon(event: dp_accounting.DpEvent, k: int, delta: float) -> float:
    acc = RdpAccountant()
    acc.compose(event, k)
    return float(acc.get_epsilon(delta))


def main() -> None:
    print("1. k Gaussian releases: cumulative epsilon at delta (median time per query)")
    print(f"{'eps1':>5s} {'k':>5s} {'delta':>7s} {'closed [us]':>12s} {'PLD [ms]':>9s} {'PLD/closed':>11s} "
          f"{'RDP [ms]':>9s} {'eps closed':>11s} {'PLD rel.diff':>13s} {'RDP rel.diff':>13s}")
    closed_times = []
    for eps1 in (0.2, 1.0, 4.0):
        mech = GaussianMechanism(epsilon=eps1, delta=1e-5, sensitivity=1.0)
        nm = mech.sigma / mech.sensitivity
        for k in (1, 10, 100, 1000):
            for delta in (1e-5, 1e-10):
                closed, t_closed = per_call(lambda m=mech, k=k, d=delta: privacy_spent(m, readings=k, delta=d).epsilon,
                                            200)
                pld, t_pld = per_call(lambda n=nm, k=k, d=delta: pld_epsilon(n, k, d), 3)
                rdp, t_rdp = per_call(lambda n=nm, k=k, d=delta: rdp_epsilon(dp_accounting.GaussianDpEvent(n), k, d),
                                      5)
                closed_times.append(t_closed)
                print(f"{eps1:5g} {k:5d} {delta:7.0e} {1e6 * t_closed:12.1f} {1e3 * t_pld:9.1f} "
                      f"{t_pld / t_closed:10.0f}x {1e3 * t_rdp:9.2f} {closed:11.6g} {(pld - closed) / closed:13.1e} "
                      f"{(rdp - closed) / closed:13.1e}")
    print(f"   closed form: median {1e6 * statistics.median(closed_times):.1f} us, "
          f"max {1e6 * max(closed_times):.1f} us per query over {len(closed_times)} settings")

    print("\n2. discrete Gaussian (rho-zCDP, rho_total = k rho): closed form vs dp_accounting RDP (ZCDpEvent)")
    print(f"{'k':>6s} {'closed [us]':>12s} {'RDP [ms]':>9s} {'RDP/closed':>11s} {'eps closed':>11s} "
          f"{'RDP rel.diff':>13s}")
    dg = DiscreteGaussianMechanism(epsilon=1.0, delta=1e-5, sensitivity=1.0)
    rho = 0.5 / dg.noise_multiplier**2
    for k in (1, 24, 1000, 10**6):
        closed, t_closed = per_call(lambda k=k: privacy_spent(dg, readings=k, delta=1e-6).epsilon, 200)
        rdp, t_rdp = per_call(lambda k=k: rdp_epsilon(dp_accounting.ZCDpEvent(rho), k, 1e-6), 5)
        print(f"{k:6d} {1e6 * t_closed:12.1f} {1e3 * t_rdp:9.2f} {t_rdp / t_closed:10.0f}x {closed:11.6g} "
              f"{(rdp - closed) / closed:13.1e}")


if __name__ == "__main__":
    main()

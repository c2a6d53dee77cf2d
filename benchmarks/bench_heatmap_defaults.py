"""Benchmark: the parameter rule of ``private_heatmap`` (issue 32) against every fixed w, top-1 % and uniform.

For the experiments' two data sets (the Appendix E.3 synthetic mixture and 200-vessel draws of the
public New York harbour AIS data, ``tracktable-data``; n = 200 users, Δ = 128) and every
ε ∈ {0.2, 0.5, 1, 2, 5}, each trial draws a data set, bounds it and releases it

* with the **default** (no ``w``, no ``population``: 1/10 of ε on a noisy user count, which picks w and
  the finest level; :mod:`dpcloak.heatmaps.parameters`),
* with the same rule fed the **public** n̂ = 200 (nothing spent on the count),
* with the pyramid at every fixed w ∈ {10, 20, 50, 100, 200, 400} (all levels),
* with top-1 % Laplace, and scores the uniform map,

each release with its own float-Laplace noise (reproducible from the seed), and records the exact EMD
(unit square, ℓ1 ground metric) against the true aggregate. Seeds 0.. (validation); the rule's finest
level was calibrated on seeds 100–102, so no draw here was seen by the calibration. The held-out
real sets of issue 32 (Chorley, Soho, Cardiff) are not used.

Checks printed per (data set, ε): default / best fixed w ≤ 1.10 (best = smallest of six noisy means,
biased low), default ≤ uniform, and default < top-1 % at ε ≥ 2. A second, low-signal table compares the
default with the uniform map only, at n ∈ {20, 50} and ε ∈ {0.2, 0.5} (ε n down to 4).

Run: ``PYTHONPATH=src python benchmarks/bench_heatmap_defaults.py [--trials 6] [--figure PNG]``
(writes ``benchmarks/results/heatmap_defaults.json``; ``--rows FILE`` re-plots saved results).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from dpcloak.heatmaps import bound_users, gaussian_mixture_points, heatmap_from_aggregate, load_ais
from dpcloak.metrics import heatmap as hm

RESULTS = Path(__file__).resolve().parent / "results" / "heatmap_defaults.json"
EPSILONS = (0.2, 0.5, 1.0, 2.0, 5.0)
FIXED_W = (10, 20, 50, 100, 200, 400)
DATASETS = ("synthetic", "ais")
N_USERS = 200
RESOLUTION = 128


def _emd(true: np.ndarray, estimate: np.ndarray) -> float:
    return float(hm.emd(true, estimate, extent=(1.0, 1.0)))


def trial(dataset: str, eps: float, seed: int, ais: object) -> dict:
    rng = np.random.default_rng([seed, DATASETS.index(dataset), EPSILONS.index(eps)])
    if dataset == "ais":
        data = ais.sample_users(N_USERS, rng=rng)  # type: ignore[attr-defined]
    else:
        data = gaussian_mixture_points(n_users=N_USERS, n_components=20, points_per_user=10, spread=(0.002, 0.02),
                                       rng=rng)
    agg = bound_users(data.users, data.x, data.y, resolution=RESOLUTION)
    truth = agg.normalized
    row: dict = {"dataset": dataset, "epsilon": eps, "seed": seed}
    default = heatmap_from_aggregate(agg, epsilon=eps, rng=rng, noise="float")
    row["default"] = _emd(truth, default.aggregate)
    row["default_w"], row["default_depth"] = default.parameters["w"], default.parameters["depth"]
    public = heatmap_from_aggregate(agg, epsilon=eps, population=N_USERS, rng=rng, noise="float")
    row["public"] = _emd(truth, public.aggregate)
    for w in FIXED_W:
        row[f"w{w}"] = _emd(truth, heatmap_from_aggregate(agg, epsilon=eps, w=w, rng=rng, noise="float").aggregate)
    top = heatmap_from_aggregate(agg, method="laplace", top_percent=1.0, epsilon=eps, rng=rng, noise="float")
    row["top1"] = _emd(truth, top.aggregate)
    row["uniform"] = _emd(truth, np.full(truth.shape, 1.0 / truth.size))
    return row


LOW_SIGNAL = ((20, 0.2), (20, 0.5), (50, 0.2), (50, 0.5))


def low_signal_trial(dataset: str, n: int, eps: float, seed: int, ais: object) -> dict:
    rng = np.random.default_rng([seed, DATASETS.index(dataset), n, int(10 * eps), 1])
    if dataset == "ais":
        data = ais.sample_users(n, rng=rng)  # type: ignore[attr-defined]
    else:
        data = gaussian_mixture_points(n_users=n, n_components=20, points_per_user=10, spread=(0.002, 0.02), rng=rng)
    agg = bound_users(data.users, data.x, data.y, resolution=RESOLUTION)
    default = heatmap_from_aggregate(agg, epsilon=eps, rng=rng, noise="float")
    return {"dataset": dataset, "n": n, "epsilon": eps, "seed": seed,
            "default": _emd(agg.normalized, default.aggregate),
            "uniform": _emd(agg.normalized, np.full(agg.fixed.shape, 1.0 / agg.fixed.size))}


def report_low(rows: list[dict]) -> None:
    print("low signal: default / uniform (mean EMD ratio)")
    for dataset in DATASETS:
        for n, eps in LOW_SIGNAL:
            sel = [r for r in rows if (r["dataset"], r["n"], r["epsilon"]) == (dataset, n, eps)]
            d, u = np.mean([r["default"] for r in sel]), np.mean([r["uniform"] for r in sel])
            print(f"  {dataset:9} n = {n:3} ε = {eps:g}: {d:.4f} / {u:.4f} = {d / u:.3f}")


def summarise(rows: list[dict]) -> list[dict]:
    out = []
    for dataset in DATASETS:
        for eps in EPSILONS:
            sel = [r for r in rows if r["dataset"] == dataset and r["epsilon"] == eps]
            if not sel:
                continue
            mean = {k: float(np.mean([r[k] for r in sel])) for k in ("default", "public", "top1", "uniform",
                                                                     *(f"w{w}" for w in FIXED_W))}
            best_w = min(FIXED_W, key=lambda w: mean[f"w{w}"])
            best = mean[f"w{best_w}"]
            out.append({
                "dataset": dataset, "epsilon": eps, "trials": len(sel), **mean, "best_fixed_w": best_w,
                "default_over_best": mean["default"] / best, "public_over_best": mean["public"] / best,
                "default_over_uniform": mean["default"] / mean["uniform"],
                "default_over_top1": mean["default"] / mean["top1"],
                "default_w": sorted({r["default_w"] for r in sel}),
                "default_depth": sorted({r["default_depth"] for r in sel}),
                "within_10pct": mean["default"] <= 1.10 * best,
                "not_worse_than_uniform": mean["default"] <= mean["uniform"],
                "beats_top1": mean["default"] < mean["top1"],
            })
    return out


def report(summary: list[dict]) -> None:
    print(f"{'data':9} {'ε':>4} {'default':>8} {'best w':>12} {'def/best':>8} {'pub/best':>8} {'uniform':>8} "
          f"{'top-1 %':>8}  default w / L")
    for s in summary:
        print(f"{s['dataset']:9} {s['epsilon']:4g} {s['default']:8.4f} {s['w' + str(s['best_fixed_w'])]:8.4f} "
              f"w{s['best_fixed_w']:<3} {s['default_over_best']:8.3f} {s['public_over_best']:8.3f} {s['uniform']:8.4f} "
              f"{s['top1']:8.4f}  {s['default_w']} / {s['default_depth']}")
    within = all(s["within_10pct"] for s in summary)
    uniform = all(s["not_worse_than_uniform"] for s in summary)
    top = all(s["beats_top1"] for s in summary if s["epsilon"] >= 2)
    print(f"default within 10 % of the best fixed w at every point: {within}; never worse than uniform: {uniform}; "
          f"beats top-1 % at ε ≥ 2: {top}")


def plot(summary: list[dict], path: Path) -> None:
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=False, constrained_layout=True)
    for ax, dataset in zip(axes, DATASETS, strict=True):
        sel = [s for s in summary if s["dataset"] == dataset]
        eps = [s["epsilon"] for s in sel]
        for i, w in enumerate(FIXED_W):
            ax.plot(eps, [s[f"w{w}"] for s in sel], marker=".", linewidth=1, color=plt.cm.viridis(i / len(FIXED_W)),
                    label=f"fixed w = {w}")
        ax.plot(eps, [s["top1"] for s in sel], "--", color="0.5", label="top-1 % Laplace")
        ax.plot(eps, [s["uniform"] for s in sel], ":", color="0.3", label="uniform map")
        ax.plot(eps, [s["public"] for s in sel], "s--", color="tab:red", markersize=4, label="rule, public n̂ = 200")
        ax.plot(eps, [s["default"] for s in sel], "o-", color="k", linewidth=2.5, label="default (noisy n̂, ε/10)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(EPSILONS, [f"{e:g}" for e in EPSILONS], minor=False)
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel("ε")
        ax.set_ylabel("mean EMD (unit square, lower is better)")
        ax.set_title(f"{dataset}: n = {N_USERS}, Δ = {RESOLUTION}, {sel[0]['trials']} trials")
    axes[0].legend(fontsize=7, ncols=2)
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=6)
    parser.add_argument("--figure", type=Path, default=None)
    parser.add_argument("--rows", type=Path, default=None, help="re-plot saved results instead of running")
    args = parser.parse_args()
    if args.rows is not None:
        saved = json.loads(args.rows.read_text())
        rows, low = saved["rows"], saved["low_signal"]
    else:
        ais = load_ais()[0]
        rows = []
        t0 = time.perf_counter()
        for dataset in DATASETS:
            for eps in EPSILONS:
                rows.extend(trial(dataset, eps, seed, ais) for seed in range(args.trials))
        low = [low_signal_trial(dataset, n, eps, seed, ais) for dataset in DATASETS for n, eps in LOW_SIGNAL
               for seed in range(2 * args.trials)]
        print(f"{len(rows) + len(low)} trials in {time.perf_counter() - t0:.0f} s")
        RESULTS.parent.mkdir(exist_ok=True)
        RESULTS.write_text(json.dumps({"rows": rows, "summary": summarise(rows), "low_signal": low,
                                       "trials": args.trials, "resolution": RESOLUTION, "n_users": N_USERS}, indent=1))
    summary = summarise(rows)
    report(summary)
    report_low(low)
    if args.figure is not None:
        plot(summary, args.figure)


if __name__ == "__main__":
    main()

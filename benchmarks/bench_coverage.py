"""Experiment: do a field network's 90 % EMD uncertainties cover the truth when the model is misspecified?

16 sensor sites uniform on 600 m × 600 m, graph diffusion model with τ = 20 000 m²; the true readings
come from the same graph with τ × ``factor`` (1: well specified; 2: misspecified). Each trial draws a
sparse crowd (30 % of sites busy, exponential sizes of mean ``scale`` people), privatizes its true
readings at ε = 1, δ = 1e-6 (one person moved by up to 150 m), recovers the map with ``draws`` bootstrap
draws and checks whether EMD(truth, map) ≤ the map's ``uncertainty_90``. The network is built twice:
without a declared misfit, and with the misfit ``choose_diffusion_time`` measures on 30 public periods
of the same truth (the bootstrap then includes it). Two more rows declare a diffusion range τ/2 … 2τ
(``diffusion_range``: Δ2 the largest over it, and the bootstrap draws readings from the models at its
ends) instead of a misfit. Nominal coverage: 90 % (target 85–95 %). A map with
no stated uncertainty (least-residual: "not stated") is counted apart; coverage is over the stated ones.
The stated 90 % value is the bootstrap's split-conformal one (the ⌈0.9 (B + 1)⌉-th smallest of B draws,
:mod:`dpcloak.sensors.result`). The misspecification here (the truth diffuses twice as far) cannot be seen
in one window's readings — ``exp(−2τL) f = exp(−τL) (exp(−τL) f)`` is a non-negative map of the model — so
only a declared misfit or range can widen the uncertainty for it.

Run: ``PYTHONPATH=src python benchmarks/bench_coverage.py [--trials 500] [--draws 10]`` (two to four
minutes per 500 trials and configuration). Writes ``benchmarks/results/bench_coverage.json`` and the
figure ``docs/figures/coverage.png``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import time

import numpy as np

from dpcloak.metrics import emd
from dpcloak.sensors import ModelSpec, Relation, SensorNetwork, build_model, choose_diffusion_time

RESULTS = "benchmarks/results/bench_coverage.json"
FIGURE = "docs/figures/coverage.png"
TAU = 20_000.0


def run(factor: float, misfit: bool, trials: int, draws: int, seed: int, scale: float = 50.0,
        span: float | None = None) -> dict:
    rng = np.random.default_rng(seed)
    pos = rng.uniform(0, 600, (16, 2))
    truth = build_model(pos, ModelSpec(kind="graph", diffusion=TAU * factor)).todense()

    def crowd() -> np.ndarray:
        f = rng.exponential(scale, 16) * (rng.random(16) < 0.3)
        if not f.any():
            f[rng.integers(16)] = scale
        return f

    history = np.array([truth @ crowd() for _ in range(30)])
    choice = choose_diffusion_time(lambda d: build_model(pos, ModelSpec(kind="graph", diffusion=d)), history,
                                   candidates=[TAU])
    net = SensorNetwork.from_coordinates(sensors=pos, relation=Relation.move(150.0), epsilon=1.0, delta=1e-6,
                                         budget=(1e9, 1e-5), diffusion=TAU, misfit=choice.misfit if misfit else None,
                                         diffusion_range=None if span is None else (TAU / span, TAU * span))
    covered, errors, widths, statuses = 0, [], [], {}
    start = time.perf_counter()
    for _ in range(trials):
        f = crowd()
        result = net.recover(net.privatize(truth @ f, rng=rng, simulation=True), uncertainty_draws=draws, rng=rng)
        error = emd(f, result.sources, net.model.domain)
        covered += error <= result.uncertainty_90  # False for "not stated" (nan)
        errors.append(error)
        widths.append(result.uncertainty_90)
        statuses[result.status] = statuses.get(result.status, 0) + 1
    stated = int(np.isfinite(widths).sum())
    return {"factor": factor, "misfit_declared": choice.misfit if misfit else None, "range_factor": span,
            "trials": trials, "draws": draws,
            "stated": stated, "coverage_90": covered / max(stated, 1), "median_emd_error_m": float(np.median(errors)),
            "median_uncertainty_90_m": float(np.nanmedian(widths)), "statuses": statuses,
            "seconds": round(time.perf_counter() - start, 1), "errors_m": [round(e, 2) for e in errors],
            "uncertainty_90_m": [None if not np.isfinite(w) else round(w, 2) for w in widths]}


def _declared(row: dict) -> str:
    if row.get("range_factor"):
        return f"range τ/{row['range_factor']:g}…{row['range_factor']:g}τ"
    return "misfit declared" if row["misfit_declared"] is not None else "no misfit"


def figure(rows: list[dict], path: str) -> None:
    """Coverage per configuration against the 85–95 % target, and error against the stated 90 % uncertainty."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    names = [f"τ×{r['factor']:g}\n{_declared(r)}" for r in rows]
    left.axhspan(0.85, 0.95, color="tab:green", alpha=0.15, label="target 85–95 %")
    left.axhline(0.9, color="tab:green", lw=1)
    left.bar(range(len(rows)), [r["coverage_90"] for r in rows], color="tab:blue")
    for k, r in enumerate(rows):
        left.text(k, r["coverage_90"] + 0.02, f"{100 * r['coverage_90']:.0f} %", ha="center", fontsize=8)
    left.set_xticks(range(len(rows)), names, fontsize=7)
    left.set_ylim(0, 1.1)
    left.set_ylabel("share of trials with EMD(truth, map) ≤ stated 90 %")
    left.set_title(f"coverage of the nominal 90 % uncertainty ({rows[0]['trials']} trials each)", fontsize=9)
    left.legend(fontsize=7, loc="lower left")
    for r, colour in zip(rows, ("tab:blue", "tab:cyan", "tab:red", "tab:orange", "tab:green", "tab:olive"),
                         strict=False):
        w = np.array([np.nan if v is None else v for v in r["uncertainty_90_m"]], dtype=float)
        e = np.array(r["errors_m"], dtype=float)
        right.scatter(w, e, s=4, alpha=0.4, color=colour, label=f"τ×{r['factor']:g}, {_declared(r)}")
    top = float(np.nanmax([max(r["errors_m"]) for r in rows]))
    right.plot([0, top], [0, top], color="black", lw=1, label="error = stated 90 %")
    right.set_xlabel("stated 90 % uncertainty (m)")
    right.set_ylabel("EMD(truth, map) (m)")
    right.set_title("each trial: below the line = covered", fontsize=9)
    right.legend(fontsize=7, markerscale=3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=500)
    parser.add_argument("--draws", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rows = []
    print(f"{'truth tau / model tau':>22s} {'declared':>16s} {'coverage (90 %)':>16s} {'median EMD':>11s} "
          f"{'median unc90':>13s}  statuses")
    configs = [(f, m, None) for f in (1.0, 2.0) for m in (False, True)] + [(1.0, False, 2.0), (2.0, False, 2.0)]
    for factor, misfit, span in configs:
        row = run(factor, misfit, args.trials, args.draws, args.seed, span=span)
        rows.append(row)
        declared = _declared(row) if span else ("no" if row["misfit_declared"] is None
                                                else f"{row['misfit_declared']:.3f}")
        print(f"{factor:22g} {declared:>16s} {row['coverage_90']:16.3f} {row['median_emd_error_m']:9.1f} m "
              f"{row['median_uncertainty_90_m']:11.1f} m  {row['statuses']}, stated {row['stated']}", flush=True)
    figure(rows, FIGURE)
    with open(RESULTS, "w", encoding="utf-8") as fh:
        json.dump({"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"), "seed": args.seed,
                   "rows": rows}, fh, indent=2)
        fh.write("\n")
    print(f"written {RESULTS} and {FIGURE}")


if __name__ == "__main__":
    main()

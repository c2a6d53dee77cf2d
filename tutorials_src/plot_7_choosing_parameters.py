"""
Choosing ε, δ, α and the relation
=================================

*For whoever signs off a deployment.* Four numbers fix what a sensor network promises: **ε** and
**δ** (how strong the promise is), the **relation** (what it is a promise about: one person moved by
up to **α** metres, or one person added or removed) and the **budget** (how many releases it covers).
This page shows what each choice costs in noise and accuracy, with numbers computed by dpcloak when
this page was built — the same calibrations a deployment uses. It recommends no universal values:
it gives you what you need to pick yours and to defend them.
"""

# %%
# ε: how much one person can change what is seen
# ----------------------------------------------
# ε-differential privacy bounds, for every output, the ratio of its probability with and without the
# change the relation protects by e^ε. An observer who thought a fact about one person was a coin toss
# (prior 50 %) can end up at most e^ε / (1 + e^ε) sure of it, whatever else they know.
import math

import matplotlib.pyplot as plt
import numpy as np

from dpcloak.domains import Line
from dpcloak.errors import InvalidParameterError
from dpcloak.metrics import emd
from dpcloak.models import heat_kernel_1d
from dpcloak.privacy import GaussianMechanism, composed_epsilon, l2_sensitivity, privacy_report
from dpcloak.recovery import bpdn
from dpcloak.sensors import Relation, SensorNetwork

print(f"{'ε':>5} {'e^ε':>7} {'belief from a 50 % prior, at most':>34}")
for epsilon in (0.1, 0.5, 1.0, 2.0, 4.0, 8.0):
    print(f"{epsilon:5.1f} {math.exp(epsilon):7.2f} {math.exp(epsilon) / (1 + math.exp(epsilon)):33.2%}")

# %%
# Values of ε up to about 1 per release are what the literature calls strong; the guarantee that
# matters is the one composed over everything a person's data appears in (the budget, below).
#
# δ: the probability the promise may fail
# ---------------------------------------
# (ε, δ)-DP allows the ε-bound to fail with probability δ. The definition does not say *how* it fails:
# a mechanism that published one random person's data outright with probability δ would meet it. So
# δ must be far smaller than one over the number of people covered; a common choice is 10⁻⁶ or less.
# Small δ is cheap with Gaussian noise: σ grows only like √log(1/δ).
for delta in (1e-1, 1e-3, 1e-6, 1e-9, 1e-12):
    sigma = GaussianMechanism(epsilon=1.0, delta=delta, sensitivity=1.0).sigma
    print(f"δ = {delta:<6g}: σ = {sigma:.3f} per unit of Δ2 at ε = 1")
ratio = (GaussianMechanism(epsilon=1.0, delta=1e-9, sensitivity=1.0).sigma
         / GaussianMechanism(epsilon=1.0, delta=1e-1, sensitivity=1.0).sigma)
print(f"going from δ = 0.1 to δ = 1e-9 costs {ratio:.2f}× the noise")

# %%
# The relation and α: what is hidden
# ----------------------------------
# The relation says which two worlds must look alike. ``Relation.move(α, "m")`` hides where one person
# was, up to α metres: they could have been anywhere within α of where they were. ``add_remove()``
# hides whether a person was there at all — stronger, and it costs more noise. α is a promise in
# metres: pick the distance that makes a difference to the people counted (which shop, which room,
# which street), not the smallest that keeps the noise low. Here, 25 counters 50 m apart; the noise σ
# each must add grows with what it hides (Δ2 is the network's exact sensitivity for that relation).
sites = np.array([[x, y] for x in range(0, 250, 50) for y in range(0, 250, 50)], dtype=float)


def network(relation, epsilon=1.0, delta=1e-6, budget=(10.0, 1e-5)):
    """The 25-counter network of this page (diffusion on a 4-nearest-neighbour graph)."""
    return SensorNetwork.from_coordinates(sensors=sites, relation=relation, epsilon=epsilon, delta=delta,
                                          budget=budget, diffusion=5000.0)


for relation in (Relation.move(50.0, "m"), Relation.move(100.0, "m"), Relation.move(200.0, "m"),
                 Relation.add_remove()):
    net = network(relation)
    print(f"{relation.describe():34s}: Δ2 = {net.delta2:.4f}, σ = {net.sigma:.3f} people per reading")

# %%
# An α smaller than the distance between two source locations would hide nothing (no move is
# possible), so it is refused rather than giving a guarantee that protects no one:
try:
    network(Relation.move(10.0, "m"))
except InvalidParameterError as refused:
    print(f"refused: {refused}")

# %%
# The budget: what all releases together promise
# ----------------------------------------------
# Every release spends privacy again. A sensor that reports every hour releases 24 readings a day;
# what protects a *pattern* present all day (a home, a workplace) is the composed guarantee of all of
# them, while one *event* (a 3-hour visit) is covered by the releases it appears in.
hourly = GaussianMechanism(epsilon=1.0, delta=1e-6, sensitivity=1.0)
report = privacy_report(hourly, releases=24, window=3, delta=1e-5)
print(f"24 hourly releases at (1, 1e-6) each: one 3-hour event is ({report.event.epsilon:.2f}, 1e-5)-DP, "
      f"the whole day's pattern ({report.pattern.epsilon:.2f}, 1e-5)-DP")

# %%
# Working backwards: the per-release ε that keeps a day of hourly releases within a daily ε = 3
# at δ = 10⁻⁵ (bisection on dpcloak's exact composition of Gaussian releases).
low, high = 1e-3, 3.0
for _ in range(40):
    mid = (low + high) / 2
    day = composed_epsilon(GaussianMechanism(epsilon=mid, delta=1e-6, sensitivity=1.0), readings=24, delta=1e-5)
    low, high = (mid, high) if day <= 3.0 else (low, mid)
per_release = GaussianMechanism(epsilon=low, delta=1e-6, sensitivity=1.0)
print(f"per-release ε = {low:.3f} (σ = {per_release.sigma:.2f} per unit of Δ2); "
      f"24 releases compose to ε = {composed_epsilon(per_release, readings=24, delta=1e-5):.3f}")
net = network(Relation.move(100.0, "m"), budget=(10.0, 1e-5))
print(f"the network's budget (10, 1e-5) at (1, 1e-6) per release allows {net.max_releases()} releases per sensor")

# %%
# What it costs in accuracy
# -------------------------
# The analyst's error, in Earth Mover's Distance (how far, on average, the recovered map puts the
# people), for the line of the first tutorial (two sources, 50 sensors; a simulation: float noise, seeded,
# ten draws per ε). More noise does not just blur the answer: below some ε the recovery finds nothing
# and answers the uniform map ("somewhere"), and in between it can place the sources in the wrong
# places, which may be *worse* than the uniform map. Check your own layout at your ε before deploying.
model = heat_kernel_1d(100, 50, 0.05)
truth = np.zeros(100)
truth[[25, 70]] = [0.6, 0.4]
delta2 = l2_sensitivity(model)
epsilons = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0]
errors = []
for epsilon in epsilons:
    mechanism = GaussianMechanism(epsilon=epsilon, delta=1e-6, sensitivity=delta2)
    draws = [emd(truth, bpdn(model, mechanism.privatize(model.matvec(truth), rng=seed), sigma=mechanism.sigma).x,
                 Line(100)) for seed in range(10)]
    errors.append(draws)
    print(f"ε = {epsilon:4}: EMD {np.mean(draws):.3f} ± {np.std(draws):.3f} (unit interval)")
print(f"knowing nothing (the uniform map): EMD {emd(truth, np.ones(100), Line(100)):.3f}")

fig, ax = plt.subplots(figsize=(6, 3.5), constrained_layout=True)
ax.errorbar(epsilons, [np.mean(e) for e in errors], yerr=[np.std(e) for e in errors], marker="o", capsize=3)
ax.axhline(emd(truth, np.ones(100), Line(100)), color="C3", ls="--", label="the uniform map")
ax.set(xscale="log", xlabel="ε per release (δ = 1e-6)", ylabel="EMD of the recovered map",
       title="Privacy against accuracy on a line of 50 sensors")
ax.legend()
plt.show()

# %%
# A checklist
# -----------
# * Write the relation in words first ("one person moved by up to 100 m") and check it is what the
#   people counted would want hidden; then α follows, in metres or hops.
# * Choose δ far below one over the number of people covered (10⁻⁶ or less); it costs little.
# * Fix the budget per period (day, week) from what a pattern deserves, and derive the per-release ε
#   from it, as above; the sensors refuse releases past it.
# * Check the accuracy at that ε on a simulation of your layout before deploying.
# * Publish the deployment file: anyone can recompute the guarantee from it (gallery: "Read a
#   deployment's guarantee").

"""
Read a deployment's guarantee
=============================

A deployment (``dpcloak deploy init``) is a directory whose public ``deployment.json`` fixes
everything the guarantee depends on: the sensor network (positions, model, the neighbouring relation
with its unit, per-reading ε and δ), the window length and the budget period. Anyone holding that
file can compute what the deployment promises, without any secret. Here a small deployment (two
sensors 100 m apart, shipped as :mod:`dpcloak.service.examples`) is written to disk, read back, and
its guarantee read in numbers and in words.
"""

import tempfile
import textwrap
from pathlib import Path

import matplotlib.pyplot as plt

from dpcloak.service.config import load_deployment, write_deployment
from dpcloak.service.examples import two_sensor_deployment
from dpcloak.service.views import guarantee_words

with tempfile.TemporaryDirectory() as tmp:
    write_deployment(Path(tmp), two_sensor_deployment())
    deployment = load_deployment(Path(tmp) / "deployment.json")  # what `dpcloak deploy show` reads

network = deployment.sensor_network
print(f"fingerprint {deployment.fingerprint[:16]}…, {network.n_sensors} sensors, windows of "
      f"{deployment.window_seconds:g} s, periods of {deployment.period_windows} windows")
print(f"neighbouring datasets: {network.relation.describe()}")
print(f"per reading: (ε, δ) = ({network.epsilon:g}, {network.delta:g}); σ = {network.sigma:.3f} people")
print(textwrap.fill(guarantee_words(deployment), 100))

# %%
# The composed guarantee grows with the number of readings a sensor releases in one period, and the
# sensors refuse to release more than the period's budget allows. It is stated at the budget's δ
# (10⁻⁵ here), which is why one reading shows an ε below the per-reading ε = 1 (stated at δ = 10⁻⁶).
releases = range(1, deployment.releases_per_period + 1)
composed = [deployment.guarantee(k)[0] for k in releases]
for k in (1, 4, deployment.releases_per_period):
    epsilon, delta = deployment.guarantee(k)
    print(f"{k:2d} readings in a period: ({epsilon:.3f}, {delta:g})-DP")

fig, ax = plt.subplots(figsize=(6, 3.2), constrained_layout=True)
ax.plot(list(releases), composed, "o-", label="composed ε of one sensor's readings")
ax.plot(list(releases), [network.epsilon * k for k in releases], ":", label="k · ε (basic composition)")
ax.axhline(network.budget[0], color="C3", ls="--", label=f"budget ε = {network.budget[0]:g}")
ax.set(xlabel="readings released in one period", ylabel="ε", title="What a period of readings spends")
ax.legend()
plt.show()

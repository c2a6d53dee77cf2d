"""
Audit my own mechanism
======================

You wrote a mechanism and claim it is ε-differentially private. :func:`~dpcloak.audit.audit_blackbox`
tests the claim from the mechanism's **outputs only** (McMillan's thesis, Part IV): it samples the
mechanism on two neighbouring databases, bins the outputs and runs a property tester that accepts
every mechanism meeting the claim and rejects, with high probability, one that misses it by more
than the accuracy ``alpha``. Here: a noisy count with Laplace noise of scale 1/ε (correct), the same
with the scale off by a factor of 2.5 (a common bug: the noise scaled by the wrong sensitivity), and
one that leaks the true count now and then.
"""

import matplotlib.pyplot as plt
import numpy as np

from dpcloak.audit import audit_blackbox

epsilon = 1.0
neighbours = (np.array([1, 0, 1, 1, 0]), np.array([1, 0, 1, 1, 1]))  # one person's answer changed


def noisy_count(database, rng, size):
    """The correct mechanism: the count plus Laplace noise of scale Δ/ε = 1/ε."""
    return database.sum() + rng.laplace(0.0, 1.0 / epsilon, size)


def too_little_noise(database, rng, size):
    """A bug: the noise is 2.5 times too small, so the mechanism is only 2.5ε-DP."""
    return database.sum() + rng.laplace(0.0, 0.4 / epsilon, size)


def leaks_sometimes(database, rng, size):
    """Correct noise, but one output in ten is the true count."""
    noisy = database.sum() + rng.laplace(0.0, 1.0 / epsilon, size)
    return np.where(rng.random(size) < 0.1, float(database.sum()), noisy)


for mechanism in (noisy_count, too_little_noise, leaks_sometimes):
    audit = audit_blackbox(mechanism, neighbours, epsilon=epsilon, rng=11, alpha=0.1, vectorized=True)
    print(f"{mechanism.__name__:16s} claimed {epsilon}-DP: {audit.verdict} after {audit.queries:,} queries")

# %%
# What the tester sees: the two output distributions of each mechanism. A claim of ε-DP bounds the
# ratio of their densities by e^ε everywhere; the bug's narrow peaks exceed it, and the leak's atom at
# the true count is an output the other database almost never gives.
rng = np.random.default_rng(0)
fig, axes = plt.subplots(1, 3, figsize=(10, 3), sharey=True, constrained_layout=True)
for ax, mechanism in zip(axes, (noisy_count, too_little_noise, leaks_sometimes), strict=True):
    for database, colour in zip(neighbours, ("C0", "C1"), strict=True):
        ax.hist(mechanism(database, rng, 20_000), bins=np.linspace(-2, 9, 89), histtype="step", density=True,
                color=colour, label=f"count {database.sum()}")
    ax.set(title=mechanism.__name__, xlabel="output")
axes[0].legend()
plt.show()

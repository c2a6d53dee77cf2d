"""
Bounded noise density
=====================

When noise must stay within fixed limits (a reading that may be off by at most ±2 people),
Farokhi & Sandberg's optimal choice is the cos² density γ(w) = (2/L)·cos²(π(w − c)/L) on [low, high]:
it has the least Fisher information of all densities on that interval, so it maximises the
Cramér–Rao bound L²/(4π²) on the mean squared error of any unbiased estimate of the true value.
This is **not** differential privacy (the guarantee object says so); it is an estimation-error
guarantee. Here the density is checked three ways: its samples against its pdf, its Fisher
information by quadrature against the closed form 4π²/L², and against the uniform density on the
same interval (whose Fisher information is infinite: its edges give the value away).
"""

import math

import matplotlib.pyplot as plt
import numpy as np

from dpcloak.privacy.fisher import BoundedOptimalNoise, fisher_information_1d

low, high = -2.0, 2.0
noise = BoundedOptimalNoise(low=low, high=high)
guarantee = noise.guarantee()
print(f"differential privacy: {guarantee.is_differential_privacy}")
print(f"Cramér–Rao bound on the MSE of an unbiased estimate: {guarantee.cramer_rao_bound:.4f} "
      f"(L²/(4π²) = {(high - low) ** 2 / (4 * math.pi ** 2):.4f})")
quadrature = fisher_information_1d(lambda w: float(noise.pdf(w)), low=low, high=high)
print(f"Fisher information: {noise.fisher_information().trace:.6f} closed form, "
      f"{quadrature.trace:.6f} by quadrature")

# %%
# A simulation (a seed is allowed: this is not a release): 100,000 samples against the density.
samples = noise.sample(100_000, rng=1)
print(f"samples within [{low}, {high}]: {bool(np.all((samples >= low) & (samples <= high)))}; "
      f"sample variance {samples.var():.4f} "
      f"(exact: L²(1/12 − 1/(2π²)) = {(high - low) ** 2 * (1 / 12 - 1 / (2 * math.pi ** 2)):.4f})")
grid = np.linspace(low, high, 401)
fig, ax = plt.subplots(figsize=(6, 3.5), constrained_layout=True)
ax.hist(samples, bins=60, density=True, alpha=0.4, label="100,000 samples")
ax.plot(grid, noise.pdf(grid), "C0", lw=2, label="cos² density (optimal)")
ax.plot(grid, np.full_like(grid, 1 / (high - low)), "C3--", label="uniform (infinite Fisher information)")
ax.set(xlabel="noise w", ylabel="density", title=f"Optimal bounded noise on [{low:g}, {high:g}]")
ax.legend(loc="lower center")
plt.show()

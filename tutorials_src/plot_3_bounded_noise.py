"""
Optimal bounded noise: hiding a value with the least Fisher information
=======================================================================

*For the engineer who must add noise that never exceeds a hard bound* — a meter reading that may be
off by at most a few units, a position that must stay on the map. Farokhi & Sandberg ("Ensuring
privacy with constrained additive noise by minimizing Fisher information") ask: among all noise
densities supported on ``[low, high]``, which one tells an observer the least about the value? Their
answer (Corollaries 1–3) is the raised-cosine density

.. math::

   \\gamma^*(w) = \\frac{2}{L}\\cos^2\\!\\Big(\\frac{\\pi (w - c)}{L}\\Big),
   \\qquad L = \\text{high} - \\text{low},

whose Fisher information :math:`4\\pi^2/L^2` is the smallest possible. The guarantee is **not**
differential privacy: it is a Cramér–Rao lower bound on the mean-squared error of every *unbiased*
estimator of the value, and because the noise is bounded, one observation rules out every value
outside ``y − [low, high]``.
"""

# %%
# The optimal density and its guarantee
# -------------------------------------
import matplotlib.pyplot as plt
import numpy as np

from dpcloak.privacy.fisher import BoundedOptimalNoise, fisher_information_1d

noise = BoundedOptimalNoise(low=-1.0, high=1.0)
guarantee = noise.guarantee()
print(guarantee.kind)
print(f"Fisher information {guarantee.fisher_information:.4f}; Cramér–Rao bound {guarantee.cramer_rao_bound:.4f}")
print(guarantee.note)

# %%
# Sampling is exact inverse-CDF sampling; the histogram of many draws follows the density. The
# uniform density on the same support is the natural alternative a user would pick: its Fisher
# information is infinite (the density jumps at the edges), so it offers no Cramér–Rao protection.
w = np.linspace(-1.2, 1.2, 481)
draws = noise.sample(200_000, rng=1)
fig, ax = plt.subplots(figsize=(6.5, 3.6), constrained_layout=True)
ax.hist(draws, bins=80, range=(-1, 1), density=True, color="0.8", label="200,000 draws")
ax.plot(w, noise.pdf(w), "C0", lw=2, label=r"optimal $\gamma^*$ (cos$^2$)")
ax.plot(w, np.where(np.abs(w) <= 1, 0.5, 0.0), "C3--", label="uniform on the same support")
ax.set(xlabel="noise value w", ylabel="density", title="Bounded noise on [-1, 1]")
ax.legend(loc="upper right", fontsize="small")
plt.show()

# %%
# The bound is checked, not assumed: the Fisher information of the density, integrated numerically,
# equals the closed form :math:`4\pi^2/L^2 = \pi^2` for ``L = 2``.
numeric = fisher_information_1d(noise.marginal_pdf, low=-1.0, high=1.0)
print(f"numerical Fisher information {numeric.trace:.9f}, closed form {np.pi**2:.9f}")

# %%
# What an unbiased observer can do
# --------------------------------
# Privatize a value many times and estimate it by the sample mean of the (centred) releases: the
# error of one release is at least the Cramér–Rao bound :math:`L^2/(4\pi^2)`; the noise variance
# itself is :math:`L^2(1/12 - 1/(2\pi^2))`, above the bound as it must be.
x = 0.3
releases = noise.privatize(np.full(100_000, x), rng=2)
print(f"variance of one release  {np.var(releases - x):.5f}")
print(f"Cramér–Rao lower bound   {noise.cramer_rao_bound().value:.5f}")

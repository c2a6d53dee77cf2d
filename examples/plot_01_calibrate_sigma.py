"""
Calibrate σ for my ε
====================

The Gaussian mechanism adds N(0, σ²) noise to each released value. For a target (ε, δ) and an ℓ2
sensitivity Δ2, :class:`~dpcloak.privacy.GaussianMechanism` finds σ two ways: the classic bound
σ = Δ2·√(2 ln(1.25/δ))/ε (proved for ε < 1 only) and the analytic calibration of Balle & Wang, the
smallest σ whose exact privacy curve meets (ε, δ). Each σ is re-checked here with the exact
δ(ε) of the Gaussian, :func:`~dpcloak.privacy.gaussian_delta`.
"""

import matplotlib.pyplot as plt
import numpy as np

from dpcloak.errors import InvalidParameterError
from dpcloak.privacy import GaussianMechanism, gaussian_delta

sensitivity, delta = 1.0, 1e-6
print(f"{'ε':>5} {'σ analytic':>11} {'σ classic':>10} {'exact δ at analytic σ':>22}")
for epsilon in (0.25, 0.5, 1.0, 2.0, 4.0):
    analytic = GaussianMechanism(epsilon=epsilon, delta=delta, sensitivity=sensitivity)
    try:
        classic = GaussianMechanism(epsilon=epsilon, delta=delta, sensitivity=sensitivity, calibration="classic")
        classic_sigma = f"{classic.sigma:10.3f}"
    except InvalidParameterError:  # the classic bound is proved for ε < 1 only
        classic_sigma = f"{'refused':>10}"
    exact = gaussian_delta(epsilon=epsilon, sigma=analytic.sigma, sensitivity=sensitivity)
    print(f"{epsilon:5.2f} {analytic.sigma:11.3f} {classic_sigma} {exact:22.3e}")

# %%
# σ scales linearly with Δ2, so one curve per δ covers every model: multiply by your Δ2.
epsilons = np.geomspace(0.1, 8.0, 40)
fig, ax = plt.subplots(figsize=(6, 3.5), constrained_layout=True)
for d in (1e-3, 1e-6, 1e-9):
    sigmas = [GaussianMechanism(epsilon=e, delta=d, sensitivity=1.0).sigma for e in epsilons]
    ax.loglog(epsilons, sigmas, label=f"δ = {d:g}")
ax.set(xlabel="ε", ylabel="σ / Δ2 (analytic)", title="Noise per unit of sensitivity")
ax.legend()
plt.show()

"""
Compute Δ2 of my model
======================

The noise a sensor network needs is proportional to the ℓ2 sensitivity Δ2 of its forward model
A (column i: what the sensors read from a unit source at location i): the largest change of the
reading vector when one unit of source moves to a neighbouring location. For a model on a line,
Δ2 = max_i ‖A_i − A_{i+1}‖₂ (Gilbert & McMillan, Proposition 4).

:func:`~dpcloak.privacy.l2_sensitivity` computes it exactly for any model; here for your own matrix
(checked against a loop over the columns) and for the 1-D heat kernel over a range of diffusion
times, next to the paper's closed-form upper bound :func:`~dpcloak.privacy.sensitivity.heat1d_bound`.
"""

import matplotlib.pyplot as plt
import numpy as np

from dpcloak.models import heat_kernel_1d, matrix_model
from dpcloak.privacy import l2_sensitivity
from dpcloak.privacy.sensitivity import heat1d_bound

# %%
# Your own matrix: 3 sensors, 5 source locations on a line (each source is read mostly by its nearest sensor).
A = np.array([
    [0.9, 0.6, 0.2, 0.1, 0.0],
    [0.1, 0.3, 0.6, 0.3, 0.1],
    [0.0, 0.1, 0.2, 0.6, 0.9],
])
by_loop = max(np.linalg.norm(A[:, i] - A[:, i + 1]) for i in range(A.shape[1] - 1))
print(f"Δ2 of my matrix: {l2_sensitivity(matrix_model(A)):.6f} (loop over adjacent columns: {by_loop:.6f})")
print(f"a person who may move 2 locations: Δ2 = {l2_sensitivity(matrix_model(A), alpha=2.0):.6f}")

# %%
# The heat kernel: n = 100 source locations, m = 50 sensors. Short diffusion times leave each source
# visible to few sensors, so moving it changes the readings a lot; long times blur everything.
times = np.geomspace(0.002, 0.5, 25)
exact = [l2_sensitivity(heat_kernel_1d(100, 50, t)) for t in times]
bound = [heat1d_bound(100, 50, t).value for t in times]
for t in (0.01, 0.1):
    print(f"t = {t}: Δ2 = {l2_sensitivity(heat_kernel_1d(100, 50, t)):.4f}, "
          f"proved bound = {heat1d_bound(100, 50, t).value:.4f}")

fig, ax = plt.subplots(figsize=(6, 3.5), constrained_layout=True)
ax.loglog(times, exact, "o-", ms=3, label="exact Δ2 (l2_sensitivity)")
ax.loglog(times, bound, "--", label="upper bound (heat1d_bound)")
ax.set(xlabel="diffusion time t", ylabel="Δ2", title="Sensitivity of the 1-D heat kernel, n = 100, m = 50")
ax.legend()
plt.show()

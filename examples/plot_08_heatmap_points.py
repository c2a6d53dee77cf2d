"""
A private heatmap from points
=============================

Many users, several location points each; the analyst wants the density map, no user's presence
may show. :func:`~dpcloak.heatmaps.private_heatmap` bounds each user's contribution to one unit
(all of a user's points together weigh 1), adds exact discrete Laplace noise from the operating
system's CSPRNG to a pyramid of coarse-to-fine counts (Ghazi et al., Algorithm 1) and reconstructs a
sparse map from them (Algorithm 2). The points here are simulated by the library
(:func:`~dpcloak.heatmaps.gaussian_mixture_points`: 2,000 users around 8 centres, 10 points each),
and the release is scored against the true map with the paper's metrics — a comparison only the data
holder can make (it reads the true data).
"""

import matplotlib.pyplot as plt

from dpcloak.heatmaps import bound_users, gaussian_mixture_points, private_heatmap, score_heatmap

points = gaussian_mixture_points(n_users=2000, n_components=8, points_per_user=10, rng=3)
resolution = 64
truth = bound_users(points.users, points.x, points.y, resolution=resolution).normalized  # not private

fig, axes = plt.subplots(1, 3, figsize=(10, 3.6), constrained_layout=True)
axes[0].imshow(truth, origin="lower", cmap="magma")
axes[0].set_title("true map (not released)")
for ax, epsilon in zip(axes[1:], (0.5, 5.0), strict=True):
    result = private_heatmap(points.users, points.x, points.y, epsilon=epsilon, resolution=resolution,
                             population=2000)  # population: a public estimate of the number of users
    scores = score_heatmap(truth, result.aggregate)
    print(f"ε = {epsilon}: {result.guarantee().kind} released; EMD to the truth {scores.emd:.4f} "
          f"(unit square), SIM {scores.sim:.3f}, Pearson CC {scores.cc:.3f}")
    ax.imshow(result.aggregate, origin="lower", cmap="magma")
    ax.set_title(f"private, ε = {epsilon}: EMD {scores.emd:.3f}")
for ax in axes:
    ax.set(xticks=[], yticks=[])
plt.show()

"""
A sensor network on a graph
===========================

Rooms joined by corridors, stops on a transit line, junctions of a street network: when people
move along the edges of a graph, heat (presence) diffuses along them for a time τ and the forward
model is exp(−τL) with L the graph Laplacian (McMillan's thesis, §8.3).
:func:`~dpcloak.models.graph_diffusion` builds it, :func:`~dpcloak.privacy.l2_sensitivity` gives its
exact Δ2 for "one person moved to a neighbouring node", each node's sensor adds calibrated noise and
:func:`~dpcloak.recovery.bpdn` recovers where people are; the error is the EMD in hops. The graph here
is a 6 × 8 grid of rooms (made by networkx), 30 people in one room and 20 in another.
"""

import matplotlib.pyplot as plt
import networkx as nx
import numpy as np

from dpcloak.metrics import emd
from dpcloak.models import graph_diffusion
from dpcloak.privacy import SensorPrivatizer, l2_sensitivity
from dpcloak.recovery import bpdn

graph = nx.convert_node_labels_to_integers(nx.grid_2d_graph(6, 8), label_attribute="room")
model = graph_diffusion(graph, 0.3)
people = np.zeros(graph.number_of_nodes())
people[[9, 38]] = [30.0, 20.0]
print(f"{model.shape[0]} sensors, {model.shape[1]} rooms, Δ2 = {l2_sensitivity(model):.4f}")

# %%
# One release of all sensors is (ε, δ) = (4, 1e-5)-DP; the exact discrete Gaussian is drawn from the
# operating system's CSPRNG, so this page shows a different draw at every build.
privatizer = SensorPrivatizer.from_model(model, epsilon=4.0, delta=1e-5)
readings = privatizer.privatize_all(model.matvec(people))
sigma = privatizer.mechanism.sigma
estimate = bpdn(model, readings, sigma=sigma, bounds=(0.0, None)).x
error = emd(people, estimate, model.domain)
print(f"σ = {sigma:.3f} per reading; EMD(true, recovered) = {error:.3f} hops")
print(f"guessing the uniform map instead: EMD = {emd(people, np.ones_like(people), model.domain):.3f} hops")

positions = {node: (data["room"][1], -data["room"][0]) for node, data in graph.nodes(data=True)}
fig, axes = plt.subplots(1, 2, figsize=(9, 3.2), constrained_layout=True)
for ax, values, title in zip(axes, (people, estimate), ("people per room", f"recovered (EMD {error:.2f} hops)"),
                             strict=True):
    nx.draw_networkx_edges(graph, positions, ax=ax, alpha=0.3)
    ax.scatter(*np.array([positions[n] for n in graph.nodes]).T, c=values, cmap="magma", s=120, edgecolors="0.6")
    ax.set(title=title)
    ax.axis("off")
plt.show()

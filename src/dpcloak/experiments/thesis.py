"""McMillan's thesis (seed 002), chapter 8: Figures 8.1–8.3 and Table 8.2.

Ids: ``thesis-fig8.1``, ``thesis-fig8.2`` (the thesis's copy of seed 000 Figure 5),
``thesis-fig8.3``, ``thesis-table8.2``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import networkx as nx
import numpy as np
from matplotlib.figure import Figure

from dpcloak.experiments import plotting
from dpcloak.experiments.registry import Claim, Experiment, Row, vary
from dpcloak.experiments.sensor import FIG5
from dpcloak.models import graph_diffusion
from dpcloak.privacy import sensitivity as sens

__all__ = ["EXPERIMENTS"]


# ------------------------------------------------------------------------------------------- Table 8.2
_CLOSED_FORMS = {
    "complete": (nx.complete_graph, sens.complete_graph_delta2_published, sens.complete_graph_delta2),
    "star": (lambda n: nx.star_graph(n - 1), sens.star_graph_delta2_published, sens.star_graph_delta2),
}


def table82_trial(params: Mapping[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    """Exact Δ2 of ``exp(−τL)`` (eigendecomposition, every edge) vs the printed and corrected closed forms."""
    build, published, corrected = _CLOSED_FORMS[str(params["graph"])]
    n, tau = int(params["n"]), float(params["tau"])
    exact = sens.l2_sensitivity(graph_diffusion(build(n), tau))
    pub, cor = published(n, tau), corrected(n, tau)
    return {"delta2": exact, "published": pub, "corrected": cor,
            "rel_err_published": abs(pub - exact) / exact, "rel_err_corrected": abs(cor - exact) / exact}


def table82_sweep(quick: bool = False) -> list[dict[str, Any]]:
    """Complete and star graphs, n ∈ {3, …, 64}, τ ∈ {0.05, 0.2, 0.5} (τn ≤ 32 keeps Δ2 ≥ 1e−14)."""
    ns, taus = ([3, 8], [0.2]) if quick else ([3, 4, 8, 16, 32, 64], [0.05, 0.2, 0.5])
    return [p for g in ("complete", "star") for tau in taus
            for p in vary("n", ns, panel=g, graph=g, tau=tau) if not (g == "complete" and tau * p["n"] > 16)]


def table82_plot(rows: Sequence[Row]) -> Figure:
    fig, axes = plotting.new_figure(2, titles=["complete graph K_n", "star graph (n − 1 leaves)"])
    for ax, graph in zip(axes, ("complete", "star"), strict=True):
        for tau in sorted({r["tau"] for r in plotting.select(rows, graph=graph)}):
            plotting.errorbar(ax, rows, "n", "delta2", label=f"exact, τ={tau:g}", graph=graph, tau=tau)
            colour = ax.lines[-1].get_color()
            for key, marker in (("published", "x"), ("corrected", "+")):
                c = plotting.summarise(rows, "n", key, graph=graph, tau=tau)
                ax.plot(c.x, c.mean, marker, color=colour, ls="none", ms=7,
                        label=f"Table 8.2 as printed, τ={tau:g}" if key == "published" else None)
        ax.set_yscale("log")
        ax.set_ylabel("Δ2(A_G)")
        ax.legend(fontsize=7, title="+ corrected closed form", title_fontsize=7)
    return fig


def table82_claims(rows: Sequence[Row]) -> list[Claim]:
    out = []
    for graph, printed in (("complete", "Δ2² = 2e^{−τn}"),
                           ("star", "Δ2² = e^{−2τn} + ((e^{−τn}−e^{−τ})/(n−1))² + ((e^{−τn}−e^{−τ})/(n−1) + e^{−τ})²")):
        chosen = plotting.select(rows, graph=graph)
        pub = max(chosen, key=lambda r: r["rel_err_published"])
        cor = max(r["rel_err_corrected"] for r in chosen)
        exact_pub = [r for r in chosen if r["rel_err_published"] < 1e-9]
        out.append(Claim.check(
            f"Table 8.2, {graph} graph: {printed}",
            f"largest relative error vs exact Δ2: {pub['rel_err_published']:.3g} (n={pub['n']}, τ={pub['tau']:g}); "
            f"exact at {len(exact_pub)}/{len(chosen)} points", pub["rel_err_published"] < 1e-6))
        out.append(Claim.check(f"(dpcloak) corrected closed form for the {graph} graph",
                               f"largest relative error vs exact Δ2: {cor:.2g}", cor < 1e-6))
    return out


TABLE82 = Experiment(
    id="thesis-table8.2", title="Δ2 of graph diffusion: Table 8.2's closed forms vs exact (complete, star)",
    source="McMillan thesis (seed 002), Table 8.2", trial=table82_trial, sweep=table82_sweep(),
    quick_sweep=table82_sweep(quick=True), plot=table82_plot, claims=table82_claims, trials=1, quick_trials=1,
    notes="""\
Exact Δ2 = max over edges (i, j) of ‖(A_G)_i − (A_G)_j‖₂ with A_G = exp(−τL) from the Laplacian's
eigendecomposition. Complete graph: L = nI − J gives A_G = e^{−τn} I + (1 − e^{−τn}) J/n, so
Δ2² = 2e^{−2τn}; the printed 2e^{−τn} lacks the factor 2 in the exponent. Star graph: the column
difference has entry (e^{−τn} − e^{−τ})/(n−1) at each of the n − 2 other leaves, which the printed
formula counts once instead of n − 2 times (it is exact for n = 3). For the complete graph only
τn ≤ 16 is swept: beyond it Δ2 falls below the eigendecomposition's relative accuracy.""",
)

FIG82 = dataclasses.replace(FIG5, id="thesis-fig8.2", source="McMillan thesis (seed 002), Figure 8.2 / Proposition 8.5",
                            title="Exact Δ2 vs m, n and t (the thesis's copy of seed 000 Figure 5)")

EXPERIMENTS = (TABLE82, FIG82)

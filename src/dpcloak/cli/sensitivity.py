"""``dpcloak sensitivity``: Δ2, the published bound and the condition number of a model."""

from __future__ import annotations

import math

import typer
from rich.table import Table

from dpcloak.cli._common import ModelSpec, cli_errors, console, emit_json, model_options
from dpcloak.models import GraphDiffusion, HeatKernel1D
from dpcloak.privacy.sensitivity import (
    condition_number,
    graph_spectral_bound,
    heat1d_bound,
    heat1d_bound_published,
    l2_sensitivity,
)


@cli_errors
@model_options
def sensitivity(
    *,
    spec: ModelSpec,
    alpha: float = typer.Option(1.0, help="Neighbour radius alpha (EMD steps)."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON object instead of a table."),
) -> None:
    """Exact l2 sensitivity Delta_2 of a forward model, its published bound and condition number."""
    built, description = spec.build()
    delta2 = l2_sensitivity(built, alpha=alpha)
    if isinstance(built, HeatKernel1D):
        published = heat1d_bound_published(built.n, built.m, built.t, mu=built.mu)
        bound, bound_name = alpha * published.value, "seed 000 Prop. 4 (Appendix A constant)"
        proved = heat1d_bound(built.n, built.m, built.t, mu=built.mu, alpha=alpha).value
    else:
        assert isinstance(built, GraphDiffusion)
        bound, bound_name = graph_spectral_bound(built, alpha=alpha).value, "thesis Lemma 8.9"
        proved = bound
    kappa = condition_number(built)
    if as_json:
        emit_json(
            {
                "model": description,
                "alpha": alpha,
                "delta2": delta2,
                "bound": bound,
                "bound_source": bound_name,
                "proved_bound": proved,
                "condition_number": kappa if math.isfinite(kappa) else None,
            }
        )
        return
    table = Table(title=description, show_header=True)
    table.add_column("quantity")
    table.add_column("value", justify="right")
    table.add_row("Δ2 (exact)", f"{delta2:.6g}")
    table.add_row(f"upper bound: {bound_name}", f"{bound:.6g}")
    if proved != bound:
        table.add_row("upper bound with proof (dpcloak)", f"{proved:.6g}")
    table.add_row("condition number κ₂", f"{kappa:.3g}" + ("  (numerically singular)" if kappa > 4.5e15 else ""))
    console.print(table)

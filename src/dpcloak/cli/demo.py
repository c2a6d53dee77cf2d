"""``dpcloak demo``: the paper's default scenario, as far as the library goes."""

from __future__ import annotations

import typer
from rich.table import Table

from dpcloak.cli._common import cli_errors, console
from dpcloak.models import heat_kernel_1d
from dpcloak.privacy.sensitivity import condition_number, l2_sensitivity


@cli_errors
def demo(
    n: int = typer.Option(100, help="Number of source locations."),
    m: int = typer.Option(50, help="Number of sensors."),
    t: float = typer.Option(0.1, help="Time lapse t."),
) -> None:
    """Run seed 000's default scenario: heat model, sensitivity."""
    model = heat_kernel_1d(n, m, t)
    delta2 = l2_sensitivity(model)
    table = Table(title="dpcloak demo: seed 000 default scenario")
    table.add_column("step")
    table.add_column("result", justify="right")
    table.add_row("forward model", repr(model))
    table.add_row("sensitivity Δ2", f"{delta2:.6g}")
    table.add_row("condition number κ₂", f"{condition_number(model):.3g}")
    console.print(table)

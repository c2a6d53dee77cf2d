"""``dpcloak calibrate``: Δ2 of a model and the Gaussian noise σ of each calibration."""

from __future__ import annotations

from typing import Any

import typer
from rich.table import Table

from dpcloak._validation import check_choice
from dpcloak.cli._common import ModelSpec, cli_errors, console, emit_json, model_options
from dpcloak.errors import InvalidParameterError
from dpcloak.privacy.mechanisms import GAUSSIAN_CALIBRATIONS, GaussianMechanism
from dpcloak.privacy.sensitivity import l2_sensitivity


def _row(calibration: str, *, epsilon: float, delta: float, delta2: float) -> dict[str, Any]:
    """σ of one calibration, or the reason it is refused."""
    try:
        mech = GaussianMechanism(epsilon=epsilon, delta=delta, sensitivity=delta2, calibration=calibration)
    except InvalidParameterError as exc:
        return {"calibration": calibration, "sigma": None, "refused": str(exc)}
    return {"calibration": calibration, "sigma": mech.sigma, "refused": None}


@cli_errors
@model_options
def calibrate(
    *,
    spec: ModelSpec,
    alpha: float = typer.Option(1.0, help="Neighbour radius alpha (EMD steps)."),
    epsilon: float = typer.Option(1.0, help="Privacy parameter epsilon > 0."),
    delta: float = typer.Option(0.1, help="Privacy parameter delta in (0, 1)."),
    calibration: str | None = typer.Option(
        None, help="analytic, classic or paper (default: show all three; JSON reports analytic)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON object instead of a table."),
) -> None:
    """Noise sigma of the local Gaussian mechanism for a model: analytic, classic and paper calibrations."""
    if calibration is not None:
        check_choice("--calibration", calibration, GAUSSIAN_CALIBRATIONS)
    built, description = spec.build()
    delta2 = l2_sensitivity(built, alpha=alpha)
    if calibration is not None:
        # a single requested calibration that is refused is an error (exit status 2)
        mech = GaussianMechanism(epsilon=epsilon, delta=delta, sensitivity=delta2, calibration=calibration)
        rows = [{"calibration": calibration, "sigma": mech.sigma, "refused": None}]
    else:
        GaussianMechanism(epsilon=epsilon, delta=delta, sensitivity=delta2)  # validates epsilon and delta
        rows = [_row(c, epsilon=epsilon, delta=delta, delta2=delta2) for c in GAUSSIAN_CALIBRATIONS]
    if as_json:
        emit_json({"model": description, "alpha": alpha, "epsilon": epsilon, "delta": delta, "delta2": delta2,
                   "calibration": rows[0]["calibration"], "sigma": rows[0]["sigma"], "calibrations": rows})
        return
    table = Table(title=f"{description}; epsilon={epsilon:g}, delta={delta:g}")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    table.add_row("Δ2 (exact)", f"{delta2:.6g}")
    for row in rows:
        value = f"{row['sigma']:.6g}" if row["sigma"] is not None else f"refused: {row['refused']}"
        table.add_row(f"σ ({row['calibration']})", value)
    console.print(table)

"""``dpcloak recover``: basis pursuit denoising on readings from a CSV file."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import typer
from numpy.typing import NDArray
from rich.table import Table

from dpcloak.cli._common import ModelSpec, cli_errors, console, emit_json, model_options
from dpcloak.errors import InvalidParameterError
from dpcloak.models import LinearModel
from dpcloak.recovery import bpdn


def _read_readings(path: Path) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(positions, readings)`` from a CSV with two numeric columns; a header row is skipped."""
    if not path.is_file():
        raise InvalidParameterError(f"--readings file not found: {path}")
    rows = []
    with path.open(newline="") as fh:
        for lineno, row in enumerate(csv.reader(fh), start=1):
            if not row or all(not cell.strip() for cell in row):
                continue
            if len(row) < 2:
                raise InvalidParameterError(f"{path}:{lineno}: expected two columns (sensor position, reading)")
            try:
                rows.append((float(row[0]), float(row[1])))
            except ValueError:
                if lineno == 1 and not rows:
                    continue  # header
                raise InvalidParameterError(f"{path}:{lineno}: not numbers: {row[:2]!r}") from None
    if not rows:
        raise InvalidParameterError(f"{path} holds no readings")
    arr = np.asarray(rows)
    return arr[:, 0], arr[:, 1]


def _order_readings(
    model: LinearModel, positions: NDArray[np.float64], values: NDArray[np.float64]
) -> NDArray[np.float64]:
    """The readings in the model's sensor order, matching each CSV position to a sensor."""
    sensors = model.sensor_positions
    m = model.shape[0]
    if sensors is None or np.ndim(sensors) != 1:
        raise InvalidParameterError("this model's sensors have no 1-D positions to match the CSV against")
    sensors = np.asarray(sensors, dtype=float)
    if len(positions) != m:
        raise InvalidParameterError(f"the model has {m} sensors but the CSV has {len(positions)} readings")
    tol = 1e-6 * max(1.0, float(np.max(np.abs(sensors))))
    idx = np.abs(positions[:, None] - sensors[None, :]).argmin(axis=1)
    bad = np.abs(sensors[idx] - positions) > tol
    if np.any(bad):
        first = sensors[:3].tolist()
        raise InvalidParameterError(f"CSV position {positions[bad][0]:g} matches no sensor of the model ({first}…)")
    if len(np.unique(idx)) != m:
        raise InvalidParameterError("the CSV lists some sensor twice")
    out = np.empty(m)
    out[idx] = values
    return out


@cli_errors
@model_options
def recover(
    *,
    spec: ModelSpec,
    readings: str = typer.Option(..., "--readings", help="CSV: sensor position, reading (header optional)."),
    sigma: float = typer.Option(None, help="Noise standard deviation per reading (sets the radius)."),
    radius: float = typer.Option(None, help="Explicit data-fit radius (instead of --sigma)."),
    radius_policy: str = typer.Option("chi2", help="chi2, lemma6 or paper (sigma*sqrt(m))."),
    failure_probability: float = typer.Option(0.05, help="Chance the true sources fall outside the ball."),
    upper: float = typer.Option(1.0, help="Upper bound on each source intensity (inf for none)."),
    solver: str = typer.Option("ipm", help="ipm (dpcloak) or cvxpy (reference extra)."),
    top: int = typer.Option(5, help="How many of the largest recovered sources to list."),
    out: str = typer.Option(None, help="Write the estimate as CSV (location, value)."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON object instead of a table."),
) -> None:
    """Recover source locations from noisy readings by basis pursuit denoising (seed 000 Algorithm 1)."""
    built, description = spec.build()
    positions, values = _read_readings(Path(readings))
    y = _order_readings(built, positions, values)
    rec = bpdn(built, y, sigma=sigma, radius=radius, radius_policy=radius_policy,
               failure_probability=failure_probability, bounds=(0.0, upper), solver=solver)
    coords = np.asarray(built.domain.coordinates(), dtype=float).reshape(len(rec.x), -1)
    location = coords[:, 0] if coords.shape[1] == 1 else np.arange(len(rec.x), dtype=float)
    order = np.argsort(-rec.x)[: max(top, 0)]
    order = order[rec.x[order] > 0]
    if out is not None:
        with Path(out).open("w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(["location", "value"])
            for loc, val in zip(location, rec.x, strict=True):
                writer.writerow([f"{loc:.12g}", f"{val:.12g}"])
    listed = [{"location": float(location[i]), "value": float(rec.x[i])} for i in order]
    if as_json:
        emit_json({"model": description, "radius": rec.radius, "radius_policy": rec.radius_policy,
                   "converged": rec.converged, "feasible": rec.feasible, "message": rec.message,
                   "objective": rec.objective, "residual": rec.residual, "n_iter": rec.n_iter,
                   "solve_time": rec.solve_time, "top": listed, "out": None if out is None else str(out)})
        return
    table = Table(title=f"BPDN recovery — {description}")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    table.add_row(f"radius ({rec.radius_policy})", f"{rec.radius:.6g}")
    table.add_row("status", "converged" if rec.converged else ("ball out of reach" if not rec.feasible else "stopped"))
    table.add_row("‖f̂‖₁", f"{rec.objective:.6g}")
    table.add_row("residual ‖Mf̂ − ỹ‖", f"{rec.residual:.6g}")
    table.add_row("solve time", f"{rec.solve_time * 1e3:.1f} ms")
    for item in listed:
        table.add_row(f"source at {item['location']:.4g}", f"{item['value']:.4g}")
    console.print(table)
    console.print(rec.message, highlight=False)
    if out is not None:
        console.print(f"estimate written to {out}")

"""``dpcloak recover``: basis pursuit denoising on readings from a CSV file (a synthetic model or a network)."""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import typer
from numpy.typing import NDArray

from dpcloak.cli._common import (
    PICTURE_SUFFIXES,
    SyntheticModel,
    check_output_file,
    cli_errors,
    console,
    emit_json,
    model_options,
    progress_bar,
    show_progress,
)
from dpcloak.cli._network import NetworkCli, network_options
from dpcloak.errors import InvalidParameterError

if TYPE_CHECKING:
    from dpcloak.models import LinearModel
    from dpcloak.sensors import NetworkRecovery, SensorNetwork

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
        raise InvalidParameterError(f"--readings has {len(positions)} readings but the model has --m {m} sensors",
                                    parameter="--readings")
    tol = 1e-6 * max(1.0, float(np.max(np.abs(sensors))))
    idx = np.abs(positions[:, None] - sensors[None, :]).argmin(axis=1)
    bad = np.abs(sensors[idx] - positions) > tol
    if np.any(bad):
        first = sensors[:3].tolist()
        raise InvalidParameterError(f"--readings position {positions[bad][0]:g} matches no sensor of the model "
                                    f"({first}…)", parameter="--readings")
    if len(np.unique(idx)) != m:
        raise InvalidParameterError("--readings lists some sensor position twice", parameter="--readings")
    out = np.empty(m)
    out[idx] = values
    return out


def map_rows(network: SensorNetwork, result: NetworkRecovery) -> list[dict[str, Any]]:
    """One row per source location: position (metres, and lon/lat when the network has a projection), the map's
    value (column named by the network's source unit)."""
    pos = result.source_positions
    rows = []
    proj = network.layout.projection if network.layout is not None else None
    lonlat = proj.inverse(pos[:, 0], pos[:, 1]) if (proj is not None and pos is not None) else None
    for k, people in enumerate(result.sources):
        row: dict[str, Any] = {"source": k, network.source_unit: float(people)}
        if pos is not None:
            row.update(x_m=float(pos[k, 0]), y_m=float(pos[k, 1]))
        if lonlat is not None:
            row.update(lon=float(lonlat[0][k]), lat=float(lonlat[1][k]))
        rows.append(row)
    return rows


def _recover_network(
    network: NetworkCli, *, readings: str, alpha: float | None, epsilon: float | None, delta: float | None,
    png: str | None, top: int, out: str | None, as_json: bool, quiet: bool,
) -> None:
    from rich.table import Table

    from dpcloak.sensors.plot import save_maps

    with progress_bar(show_progress(quiet), "recover") as update:
        update(0, 3, "building the network")
        net = network.network(epsilon=epsilon, delta=delta, alpha=alpha)
        from dpcloak.sensors.readings import read_named_readings

        names = list(net.layout.names) if net.layout is not None else [str(k) for k in range(net.n_sensors)]
        y = read_named_readings(readings, names)
        update(1, 3, "recovering the map and its uncertainty")
        result = net.recover(y)
        rows = map_rows(net, result)
        update(2, 3, "drawing the map")
        picture = Path(png) if png is not None else Path(readings).with_name(Path(readings).stem + "_map.png")
        save_maps(net, [result], picture, labels=[Path(readings).stem])
    if out is not None:
        with Path(out).open("w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    unit = net.source_unit
    listed = sorted(rows, key=lambda r: -r[unit])[: max(top, 0)]
    listed = [r for r in listed if r[unit] > 0]
    rec = result.recovery
    if as_json:
        emit_json({"people": result.total, "uncertainty_m": result.uncertainty if math.isfinite(result.uncertainty)
                   else None, "uncertainty_90_m": result.uncertainty_90 if math.isfinite(result.uncertainty_90)
                   else None, "uncertainty": result.uncertainty_text,
                   "degenerate": result.degenerate, "present": int(result.present.sum()),
                   "sensors": net.n_sensors, "sigma": result.sigma, "radius": result.radius,
                   "converged": rec.converged, "feasible": rec.feasible, "message": rec.message, "top": listed,
                   "status": result.status, "guarantee": net.guarantee_text(), "unit": unit,
                   "picture": str(picture), "out": None if out is None else str(out)})
        return
    table = Table(title=f"where? {net.guarantee_text()}; noise: {net.noise}")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    table.add_row("sensors reporting", f"{int(result.present.sum())} of {net.n_sensors}")
    table.add_row(f"{unit} (recovered total)", f"{result.total:.1f}")
    table.add_row("uncertainty of the map (EMD, bootstrap)", result.uncertainty_text)
    table.add_row("status", result.status if rec.converged or not rec.feasible else "stopped")
    if result.degenerate:
        table.add_row("answer", "empty (no information where: read as uniform)")
    for item in listed:
        where = (f"({item['x_m']:.0f} m, {item['y_m']:.0f} m)" if "x_m" in item else f"#{item['source']}")
        near = f" ±{result.uncertainty:.0f} m" if math.isfinite(result.uncertainty) else ""
        table.add_row(f"{unit} at {where}{near}", f"{item[unit]:.1f}")
    console.print(table)
    console.print(rec.message, highlight=False)
    console.print(f"map saved to {picture}", highlight=False)
    if out is not None:
        console.print(f"estimate written to {out}", highlight=False)


@cli_errors
@model_options
@network_options
def recover(
    *,
    spec: SyntheticModel,
    network: NetworkCli,
    readings: str = typer.Option(..., "--readings", help="CSV: sensor position (or name, for a network), reading."),
    sigma: float = typer.Option(None, help="Noise standard deviation per reading (sets the radius)."),
    radius: float = typer.Option(None, help="Explicit data-fit radius (instead of --sigma)."),
    radius_policy: str = typer.Option("chi2", help="chi2, lemma6 or paper (sigma*sqrt(m))."),
    failure_probability: float = typer.Option(0.05, help="Chance the true sources fall outside the ball."),
    upper: float = typer.Option(1.0, help="Upper bound on each source intensity (inf for none)."),
    solver: str = typer.Option("ipm", help="ipm (dpcloak) or cvxpy (reference extra)."),
    alpha: float | None = typer.Option(None, help="Network: relation radius in --unit (with --sensors)."),
    epsilon: float | None = typer.Option(None, help="Network: epsilon per release (with --sensors)."),
    delta: float | None = typer.Option(None, help="Network: delta per release (with --sensors)."),
    png: str | None = typer.Option(None, help="Network: picture of the map (default: <readings>_map.png)."),
    top: int = typer.Option(5, help="How many of the largest recovered sources to list."),
    out: str = typer.Option(None, help="Write the estimate as CSV."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON object instead of a table."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar (it is also off when not on a "
                               "terminal)."),
) -> None:
    """Recover where the sources are from (private) readings by basis pursuit denoising (Gilbert & McMillan, Alg. 1)."""
    if top < 0:
        raise InvalidParameterError(f"--top must be a non-negative integer, got {top}", parameter="--top")
    if out is not None:
        check_output_file("--out", out, suffixes=(".csv",))
    if png is not None:
        check_output_file("--png", png, suffixes=PICTURE_SUFFIXES)
    if network.given:
        fixed = {"--model and its options": spec != SyntheticModel(), "--sigma": sigma is not None,
                 "--radius": radius is not None, "--radius-policy": radius_policy != "chi2",
                 "--failure-probability": failure_probability != 0.05, "--upper": upper != 1.0,
                 "--solver": solver != "ipm"}
        given = [name for name, changed in fixed.items() if changed]
        if given:
            raise InvalidParameterError(f"{', '.join(given)}: fixed by the network (σ from its mechanism, counts "
                                        "unbounded above); remove them")
        _recover_network(network, readings=readings, alpha=alpha, epsilon=epsilon, delta=delta, png=png, top=top,
                         out=out, as_json=as_json, quiet=quiet)
        return
    network.require_absent()
    extra = [n for n, v in (("--alpha", alpha), ("--epsilon", epsilon), ("--delta", delta), ("--png", png)) if v]
    if extra:
        raise InvalidParameterError(f"{', '.join(extra)}: for a network (--sensors or --config)")
    if (sigma is None) == (radius is None):
        raise InvalidParameterError("give exactly one of --sigma (noise standard deviation) and --radius "
                                    f"(explicit data-fit radius); got {'both' if sigma is not None else 'neither'}")
    if not upper > 0:
        raise InvalidParameterError(f"--upper must be > 0 (the largest intensity of a source), got {upper:g}",
                                    parameter="--upper")
    with progress_bar(show_progress(quiet), "recover") as update:
        update(0, 2, "building the model")
        built, description = spec.build()
        from dpcloak.sensors.readings import read_position_readings

        positions, values = read_position_readings(readings)
        y = _order_readings(built, positions, values)
        update(1, 2, "basis pursuit denoising")
        rec = _bpdn(built, y, sigma=sigma, radius=radius, radius_policy=radius_policy,
                    failure_probability=failure_probability, upper=upper, solver=solver)
    _print_recovery(built, description, rec, y, readings=readings, top=top, out=out, as_json=as_json)


def _bpdn(built: LinearModel, y: NDArray[np.float64], *, sigma: float | None, radius: float | None,
          radius_policy: str, failure_probability: float, upper: float, solver: str) -> Any:
    from dpcloak.recovery import bpdn

    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is reported below, in the user's words
        return bpdn(built, y, sigma=sigma, radius=radius, radius_policy=radius_policy,
                   failure_probability=failure_probability, bounds=(0.0, upper), solver=solver)


def _print_recovery(built: LinearModel, description: str, rec: Any, y: NDArray[np.float64], *, readings: str,
                    top: int, out: str | None, as_json: bool) -> None:
    from rich.table import Table

    if not (np.all(np.isfinite(rec.x)) and math.isfinite(rec.objective) and math.isfinite(rec.residual)):
        raise InvalidParameterError(f"--readings {readings}: readings up to {float(np.max(np.abs(y))):.3g} overflow "
                                    "the recovery in double precision; rescale them", parameter="--readings")
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

"""``dpcloak heatmap``: an ε-DP heatmap of a CSV/Parquet file of (user, lat, lon) or (user, x, y) points."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import typer

from dpcloak.cli._common import cli_errors, console, emit_json
from dpcloak.errors import InvalidParameterError
from dpcloak.heatmaps.api import METHODS, heatmap_from_aggregate
from dpcloak.heatmaps.data import bound_users
from dpcloak.heatmaps.loaders import load_points
from dpcloak.heatmaps.render import plot_heatmaps


def _parse_bbox(text: str | None) -> tuple[float, float, float, float] | None:
    if text is None:
        return None
    parts = text.split(",")
    if len(parts) != 4:
        raise InvalidParameterError(f"--bbox must be 'lon_min,lat_min,lon_max,lat_max', got {text!r}")
    try:
        a, b, c, d = (float(p) for p in parts)
    except ValueError:
        raise InvalidParameterError(f"--bbox must hold four numbers, got {text!r}") from None
    return a, b, c, d


@cli_errors
def heatmap(
    points: str = typer.Argument(..., help="CSV or Parquet file with one row per point."),
    epsilon: float = typer.Option(..., help="Privacy budget epsilon > 0 (add/remove-one-user DP)."),
    resolution: int = typer.Option(256, help="Grid size Delta (a power of two)."),
    out: str | None = typer.Option(None, help="Write the rendered private heatmap as an image (PNG)."),
    npy: str | None = typer.Option(None, help="Write the normalised private aggregate as a .npy array."),
    method: str = typer.Option("pyramid", help="pyramid (Algorithms 1-2), laplace (baseline) or dense (App. D)."),
    w: int = typer.Option(20, help="pyramid: cells kept per level."),
    gamma: float = typer.Option(2**-0.5, help="pyramid: budget decay rate."),
    top_percent: float | None = typer.Option(None, help="laplace: keep only the top t percent of cells."),
    user: str = typer.Option("user", help="User-id column."),
    lat: str = typer.Option("lat", help="Latitude column."),
    lon: str = typer.Option("lon", help="Longitude column."),
    xy: str | None = typer.Option(None, help="Use 'xcol,ycol' holding coordinates in [0, 1) instead of lat/lon."),
    bbox: str | None = typer.Option(None, help="lon_min,lat_min,lon_max,lat_max mapped to the unit square."),
    drop_outside: bool = typer.Option(False, help="Drop points outside the box instead of failing."),
    sigma: float = typer.Option(0.01, help="Rendering sigma (unit-square units) for --out."),
    seed: int | None = typer.Option(None, help="Random seed (default: fresh OS entropy)."),
    noise: str = typer.Option("float", help="float (numpy Laplace, experiments) or secure (exact discrete "
                              "Laplace from the OS CSPRNG without --seed: use for deployment)."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON summary."),
) -> None:
    """Release an epsilon-DP heatmap of users' points (Ghazi et al., 'Differentially Private Heatmaps')."""
    if method not in METHODS:
        raise InvalidParameterError(f"--method must be one of {', '.join(METHODS)}, got {method!r}")
    unit = None
    if xy is not None:
        cols = xy.split(",")
        if len(cols) != 2:
            raise InvalidParameterError(f"--xy must be 'xcol,ycol', got {xy!r}")
        unit = (cols[0], cols[1])
    box = _parse_bbox(bbox)
    data, used_box = load_points(Path(points), user=user, lat=lat, lon=lon, bbox=box, drop_outside=drop_outside,
                                 unit_columns=unit)
    agg = bound_users(data.users, data.x, data.y, resolution=resolution)
    res = heatmap_from_aggregate(agg, method=method, epsilon=epsilon, w=w, gamma=gamma, top_percent=top_percent,
                                 rng=seed, noise=noise)
    if npy is not None:
        np.save(Path(npy), res.aggregate)
    if out is not None:
        fig = plot_heatmaps({f"{method}, ε={epsilon:g}": res.aggregate}, sigma=sigma)
        fig.savefig(Path(out), dpi=150)
    g = res.guarantee()
    note = ""
    if unit is None and box is None:
        note = "bounding box taken from the data (not private); pass --bbox for a fully private release"
    summary = {
        "method": method, "epsilon": g.epsilon, "delta": g.delta, "neighbouring": g.neighbouring,
        "resolution": res.resolution, "users": res.n_users, "points": res.n_points,
        "bbox": list(used_box) if used_box is not None else None, "seconds": res.timings["total"],
        "out": out, "npy": npy, "note": note,
    }
    if as_json:
        emit_json(summary)
        return
    console.print(f"[bold]{method}[/] heatmap, {g.kind} with ε={g.epsilon:g} ({g.neighbouring})")
    console.print(f"{res.n_users} users, {res.n_points} points, Δ={res.resolution}, {res.timings['total']:.3f} s")
    for path in (out, npy):
        if path is not None:
            console.print(f"wrote {path}")
    if note:
        console.print(f"[yellow]note:[/] {note}")

"""``dpcloak heatmap``: an ε-DP heatmap of a CSV/Parquet file of (user, lat, lon) or (user, x, y) points.

Thin over :mod:`dpcloak.heatmaps`; the library is imported inside the command. What the command
prints (or writes with ``--json``) is the release: the DP output's files and public parameters.
Curator-side diagnostics (exact user and point counts, timings) appear only with ``--diagnostics``,
in a separate section labelled not private.
"""

from __future__ import annotations

from typing import Any

import typer

from dpcloak.cli._common import cli_errors, console, emit_json
from dpcloak.errors import InvalidParameterError


def _parse_numbers(option: str, text: str, count: int, form: str) -> tuple[float, ...]:
    parts = text.split(",")
    if len(parts) != count:
        raise InvalidParameterError(f"{option} must be '{form}', got {text!r}")
    try:
        return tuple(float(p) for p in parts)
    except ValueError:
        raise InvalidParameterError(f"{option} must hold {count} numbers '{form}', got {text!r}") from None


@cli_errors
def heatmap(
    points: str = typer.Argument(..., help="CSV or Parquet file with one row per point."),
    epsilon: float = typer.Option(..., help="Privacy budget epsilon > 0 (add/remove-one-user DP)."),
    resolution: int = typer.Option(256, help="Grid size Delta (a power of two)."),
    bbox: str | None = typer.Option(None, help="PUBLIC box lon_min,lat_min,lon_max,lat_max mapped to the grid "
                                    "(required with lat/lon columns; never taken from the data)."),
    out: str | None = typer.Option(None, help="Write the rendered private heatmap as an image (PNG)."),
    npy: str | None = typer.Option(None, help="Write the normalised private aggregate as a .npy array."),
    method: str = typer.Option("pyramid", help="pyramid (Algorithms 1-2), laplace (baseline) or dense (App. D)."),
    w: int = typer.Option(20, help="pyramid: cells kept per level."),
    gamma: float = typer.Option(2**-0.5, help="pyramid: budget decay rate."),
    top_percent: float | None = typer.Option(None, help="laplace: keep only the top t percent of cells."),
    population: float | None = typer.Option(None, help="dense: PUBLIC estimate of the number of users (else 10% "
                                            "of epsilon buys a noisy count)."),
    user: str = typer.Option("user", help="User-id column."),
    lat: str = typer.Option("lat", help="Latitude column."),
    lon: str = typer.Option("lon", help="Longitude column."),
    xy: str | None = typer.Option(None, help="Use 'xcol,ycol' holding coordinates in [0, 1) instead of lat/lon."),
    drop_outside: bool = typer.Option(False, help="Drop points outside the box instead of failing."),
    sigma: float = typer.Option(0.01, help="Rendering sigma (unit-square units) for --out."),
    noise: str = typer.Option("secure", help="secure (exact discrete Laplace from the OS CSPRNG, the default) or "
                              "float (numpy Laplace: simulation only, leaks through low-order bits)."),
    seed: int | None = typer.Option(None, help="Random seed: only with --noise float or --simulation."),
    simulation: bool = typer.Option(False, help="Allow --seed with secure noise (reproducible: not a release)."),
    diagnostics: bool = typer.Option(False, help="Also show curator-side diagnostics (exact counts, timings): "
                                     "NOT private, never publish them."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON summary."),
) -> None:
    """Release an epsilon-DP heatmap of users' points (Ghazi et al., 'Differentially Private Heatmaps')."""
    from pathlib import Path

    import numpy as np

    from dpcloak.heatmaps.api import METHODS, heatmap_from_aggregate
    from dpcloak.heatmaps.data import bound_users
    from dpcloak.heatmaps.loaders import load_points
    from dpcloak.heatmaps.release import NOT_PRIVATE
    from dpcloak.heatmaps.render import plot_heatmaps

    if method not in METHODS:
        raise InvalidParameterError(f"--method must be one of {', '.join(METHODS)}, got {method!r}")
    if seed is not None and noise == "secure" and not simulation:
        raise InvalidParameterError(
            f"--seed {seed} is refused with --noise secure (a release): whoever knows the seed can subtract the noise; "
            "add --simulation to reproduce a release in a test, or use --noise float for simulation"
        )
    unit = None
    if xy is not None:
        cols = xy.split(",")
        if len(cols) != 2:
            raise InvalidParameterError(f"--xy must be 'xcol,ycol', got {xy!r}")
        unit = (cols[0], cols[1])
    box = None
    if bbox is not None:
        lon0, lat0, lon1, lat1 = _parse_numbers("--bbox", bbox, 4, "lon_min,lat_min,lon_max,lat_max")
        box = (lon0, lat0, lon1, lat1)
    if unit is None and box is None:
        raise InvalidParameterError(
            "--bbox lon_min,lat_min,lon_max,lat_max is required with lat/lon columns: the extent of a release must "
            "be public input (a bounding box taken from the data is not private); or pass --xy with [0, 1) columns"
        )
    data, _ = load_points(Path(points), user=user, lat=lat, lon=lon, bbox=box, drop_outside=drop_outside,
                          unit_columns=unit)
    agg = bound_users(data.users, data.x, data.y, resolution=resolution)
    res = heatmap_from_aggregate(agg, method=method, epsilon=epsilon, w=w, gamma=gamma, top_percent=top_percent,
                                 population=population, rng=seed, noise=noise, simulation=simulation)
    if npy is not None:
        np.save(Path(npy), res.aggregate)
    if out is not None:
        fig = plot_heatmaps({f"{method}, ε={epsilon:g}": res.aggregate}, sigma=sigma)
        fig.savefig(Path(out), dpi=150)
    summary: dict[str, Any] = {**res.public_summary(), "bbox": list(box) if box is not None else None,
                               "out": out, "npy": npy}
    curator = {"label": NOT_PRIVATE, "users": res.curator.n_users, "points": res.curator.n_points,
               "seconds": res.curator.timings["total"]}
    if as_json:
        emit_json({**summary, **({"curator_not_private": curator} if diagnostics else {})})
        return
    console.print(f"[bold]{method}[/] heatmap, {res.privacy.kind} with ε={res.privacy.epsilon:g} "
                  f"({res.privacy.neighbouring})")
    console.print(f"Δ={res.resolution}, noise={noise}: {res.privacy.mechanism}")
    for path in (out, npy):
        if path is not None:
            console.print(f"wrote {path}")
    if diagnostics:
        console.print(f"[yellow]{NOT_PRIVATE}:[/] {curator['users']} users, {curator['points']} points, "
                      f"{curator['seconds']:.3f} s")

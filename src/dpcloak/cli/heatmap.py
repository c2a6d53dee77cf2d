"""``dpcloak heatmap``: an ε-DP heatmap of a CSV/Parquet file of (user, lon, lat) or (user, x, y) points.

Thin over :mod:`dpcloak.heatmaps`; the library is imported inside the command. What the command
prints (or writes with ``--json``) is the release: the DP output's files and public parameters.
Curator-side numbers (exact user and point counts, timings, ``--evaluate``'s scores and true map)
appear only when asked for, labelled NOT private.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from dpcloak.cli._common import (
    PICTURE_SUFFIXES,
    check_input_file,
    check_output_file,
    check_text_file,
    cli_errors,
    console,
    emit_json,
    progress_bar,
    show_progress,
)
from dpcloak.errors import InvalidParameterError

if TYPE_CHECKING:
    from dpcloak.heatmaps.extent import Extent


def _numbers(option: str, text: str, count: int, form: str) -> tuple[float, ...]:
    parts = text.split(",")
    if len(parts) != count:
        raise InvalidParameterError(f"{option} must be '{form}', got {text!r}", parameter=option)
    try:
        return tuple(float(p) for p in parts)
    except ValueError:
        raise InvalidParameterError(f"{option} must hold {count} numbers '{form}', got {text!r}",
                                    parameter=option) from None


def _extent(bbox: str | None, centre: str | None, size: float | None, metres_box: str | None,
            crs: str | None = None) -> Extent | None:
    """The public extent from exactly one of --bbox, --centre/--size, --metres-box [--crs] (or none: unit square)."""
    from dpcloak.heatmaps.extent import Extent

    given = [name for name, v in (("--bbox", bbox), ("--centre", centre), ("--metres-box", metres_box)) if v]
    if len(given) > 1:
        raise InvalidParameterError(f"give one extent, got {' and '.join(given)}")
    if (centre is None) != (size is None):
        raise InvalidParameterError("--centre lon,lat and --size METRES go together", parameter="--centre")
    if crs is not None and metres_box is None:
        raise InvalidParameterError("--crs gives the CRS of --metres-box and the --xy columns; give --metres-box",
                                    parameter="--crs")
    if bbox is not None:
        return Extent.lonlat_box(*_numbers("--bbox", bbox, 4, "lon_min,lat_min,lon_max,lat_max"))
    if centre is not None and size is not None:
        lon, lat = _numbers("--centre", centre, 2, "lon,lat")
        return Extent.around(lon=lon, lat=lat, size=size)
    if metres_box is not None:
        box = _numbers("--metres-box", metres_box, 4, "x_min,y_min,x_max,y_max")
        return Extent.metres_box(*box) if crs is None else Extent.crs_box(*box, crs=crs)
    return None


POINT_SUFFIXES = (".csv", ".gz", ".parquet")
DEFAULT_GAMMA = 2**-0.5
DEFAULT_SIGMA = 0.004


def _check_files(points: str, outputs: dict[str, tuple[str | None, tuple[str, ...]]]) -> None:
    """The points file is readable (CSV as UTF-8 text); every output can be written with a supported extension."""
    suffix = Path(points).suffix.lower()
    if suffix not in POINT_SUFFIXES:
        raise InvalidParameterError(f"POINTS {points}: unsupported extension {suffix or '(none)'!r}; give a .csv, "
                                    ".csv.gz or .parquet file", parameter="POINTS")
    check_text_file("POINTS", points) if suffix == ".csv" else check_input_file("POINTS", points)
    for option, (path, suffixes) in outputs.items():
        if path is not None:
            check_output_file(option, path, suffixes=suffixes)


def _check_used(method: str, *, w: int | None, gamma: float, top_percent: float | None, out: str | None,
                evaluate: bool, units: str, sigma: float) -> None:
    """Refuse options that the chosen method or outputs would silently ignore."""
    unused = [name for name, given in (("--w", w is not None), ("--gamma", gamma != DEFAULT_GAMMA)) if given]
    if method != "pyramid" and unused:
        raise InvalidParameterError(f"{' and '.join(unused)}: only for --method pyramid, not {method}")
    if method != "laplace" and top_percent is not None:
        raise InvalidParameterError(f"--top-percent: only for --method laplace, not {method}",
                                    parameter="--top-percent")
    if out is None and units != "m":
        raise InvalidParameterError("--units: only for the picture; give --out FILE.png", parameter="--units")
    if out is None and not evaluate and sigma != DEFAULT_SIGMA:
        raise InvalidParameterError("--sigma: only for the picture (--out) or --evaluate", parameter="--sigma")


def _check_memory(resolution: int) -> None:
    """A Δ×Δ grid is held several times (counts, pyramid levels, noise, rendering): refuse it up front if too big."""
    from dpcloak._validation import check_memory

    if isinstance(resolution, int) and 0 < resolution <= 2**15:
        check_memory(f"--resolution {resolution} (a {resolution}x{resolution} grid, held about 8 times)",
                     8 * 8 * resolution**2, hint="use a smaller --resolution")


def _beside(path: str, tag: str) -> Path:
    p = Path(path)
    return p.with_name(f"{p.stem}.{tag}{p.suffix}")


@cli_errors
def heatmap(
    points: str = typer.Argument(..., help="CSV or Parquet file with one row per point."),
    epsilon: float = typer.Option(..., help="Privacy budget epsilon > 0 (add/remove-one-user DP)."),
    resolution: int = typer.Option(256, help="Grid size Delta (a power of two)."),
    bbox: str | None = typer.Option(None, help="PUBLIC extent: lon_min,lat_min,lon_max,lat_max (points in lon/lat, "
                                    "projected to metres; a non-square box is padded to a square)."),
    centre: str | None = typer.Option(None, help="PUBLIC extent: centre lon,lat of a square of --size metres."),
    size: float | None = typer.Option(None, help="Side in metres of the --centre square."),
    metres_box: str | None = typer.Option(None, help="PUBLIC extent in metres: x_min,y_min,x_max,y_max (points "
                                          "in metres, columns from --xy)."),
    crs: str | None = typer.Option(None, help="CRS of --metres-box and the --xy columns, e.g. EPSG:3857 (Web "
                                   "Mercator): converted to true metres through PROJ (geo extra)."),
    xy: str | None = typer.Option(None, help="'xcol,ycol': metres with --metres-box, else coordinates in [0, 1)."),
    user: str = typer.Option("user", help="User-id column."),
    lat: str = typer.Option("lat", help="Latitude column."),
    lon: str = typer.Option("lon", help="Longitude column."),
    drop_outside: bool = typer.Option(False, help="Drop points outside the extent instead of failing."),
    method: str = typer.Option("pyramid", help="pyramid (Algorithms 1-2), laplace (baseline) or dense (App. D)."),
    w: int | None = typer.Option(None, help="pyramid: cells kept per level, all levels measured (default: w and the "
                                 "levels from a rule of epsilon, resolution and --population, or without it a "
                                 "noisy user count costing 1/10 of epsilon)."),
    gamma: float = typer.Option(2**-0.5, help="pyramid: budget decay rate."),
    top_percent: float | None = typer.Option(None, help="laplace: keep only the top t percent of cells."),
    population: float | None = typer.Option(None, help="PUBLIC estimate of the number of users (never counted from "
                                            "the data): pyramid chooses w and its levels from it, dense its grid "
                                            "(else 10% of epsilon buys a noisy count)."),
    out: str | None = typer.Option(None, help="Write the rendered map as PNG (axes, colour bar)."),
    units: str = typer.Option("m", help="PNG axes: m (km east/north) or lonlat."),
    sigma: float = typer.Option(0.004, help="Rendering sigma as a fraction of the extent's side."),
    csv: str | None = typer.Option(None, help="Write a CSV of cells: row, col, centre (metres, lon/lat), share."),
    geojson: str | None = typer.Option(None, help="Write the cells with a positive share as GeoJSON polygons."),
    npy: str | None = typer.Option(None, help="Write the normalised private aggregate as a .npy array."),
    tiles: str | None = typer.Option(None, help="Write XYZ/quadkey tiles as CSV (z, x, y, quadkey, units, share); "
                                     "coarser zooms are the exact sums of their children."),
    h3: str | None = typer.Option(None, help="Write H3 hexagons as CSV (resolution, h3, units, share; h3 extra); "
                                  "coarser resolutions are the exact sums of their children."),
    geotiff: str | None = typer.Option(None, help="Write a cloud-optimised GeoTIFF of the shares (.tif; geotiff "
                                       "extra): CRS and transform of the extent, overviews the exact sums of their "
                                       "children."),
    error_bars: int = typer.Option(0, help="pyramid: B > 0 adds the calibrated 90% EMD error bar from B re-releases "
                                   "of the released map (19 is usual, >= 9; post-processing, no epsilon spent): "
                                   "printed, in --json, the GeoJSON/GeoTIFF metadata and the PNG."),
    noise: str = typer.Option("secure", help="secure (exact discrete Laplace from the OS CSPRNG, the default) or "
                              "float (numpy Laplace: simulation only, leaks through low-order bits)."),
    seed: int | None = typer.Option(None, help="Random seed: only with --noise float or --simulation."),
    simulation: bool = typer.Option(False, help="Allow --seed with secure noise (reproducible: not a release)."),
    evaluate: bool = typer.Option(False, help="Curator-side, NOT private: EMD/SIM/CC/KL against the true map; "
                                  "--out gets a second panel with the true map, --npy a second file beside it "
                                  "(*.true-NOT-PRIVATE.npy)."),
    diagnostics: bool = typer.Option(False, help="Also show curator-side diagnostics (exact counts, timings): "
                                     "NOT private, never publish them."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON summary."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar (it is also off when not on a "
                               "terminal)."),
) -> None:
    """Release an epsilon-DP heatmap of users' points (Ghazi et al., 'Differentially Private Heatmaps')."""
    with progress_bar(show_progress(quiet), "heatmap") as update:
        update(0, STEPS, "loading dpcloak.heatmaps")  # seconds of imports: the bar shows at once
        from dpcloak.heatmaps.api import METHODS

        if method not in METHODS:
            raise InvalidParameterError(f"--method must be one of {', '.join(METHODS)}, got {method!r}",
                                        parameter="--method")
        if error_bars and (method != "pyramid" or error_bars < 9):
            raise InvalidParameterError(f"--error-bars must be 0 or at least 9, with --method pyramid; got "
                                        f"{error_bars} with {method}", parameter="--error-bars")
        ext, cols = _check(points, epsilon=epsilon, resolution=resolution, bbox=bbox, centre=centre, size=size,
                           metres_box=metres_box, xy=xy, method=method, w=w, gamma=gamma, top_percent=top_percent,
                           out=out, units=units, sigma=sigma, csv=csv, geojson=geojson, npy=npy, noise=noise,
                           seed=seed, simulation=simulation, evaluate=evaluate, lon=lon, lat=lat, crs=crs,
                           tiles=tiles, h3=h3, geotiff=geotiff)
        res, agg = _release(update, points, user=user, cols=cols, ext=ext, drop_outside=drop_outside,
                            resolution=resolution, method=method, epsilon=epsilon, w=w, gamma=gamma,
                            top_percent=top_percent, population=population, seed=seed, noise=noise,
                            simulation=simulation, error_bars=error_bars)
        update(4, STEPS, "writing")
        written = _write(res, agg, evaluate=evaluate, npy=npy, out=out, csv=csv, geojson=geojson, ext=ext,
                         method=method, epsilon=epsilon, sigma=sigma, units=units, tiles=tiles, h3=h3,
                         geotiff=geotiff)
    _report(res, agg, evaluate=evaluate, diagnostics=diagnostics, sigma=sigma, ext=ext, as_json=as_json,
            outputs={"out": out, "npy": npy, "csv": csv, "geojson": geojson, "tiles": tiles, "h3": h3,
                     "geotiff": geotiff},
            true_file=written)


STEPS = 5


def _check(points: str, *, epsilon: float, resolution: int, bbox: str | None, centre: str | None,
           size: float | None, metres_box: str | None, xy: str | None, method: str, w: int | None, gamma: float,
           top_percent: float | None, out: str | None, units: str, sigma: float, csv: str | None,
           geojson: str | None, npy: str | None, noise: str, seed: int | None, simulation: bool, evaluate: bool,
           lon: str, lat: str, crs: str | None = None, tiles: str | None = None, h3: str | None = None,
           geotiff: str | None = None) -> tuple[Extent | None, tuple[str, str]]:
    """Every option checked before the points are read: the extent and the two coordinate columns."""
    _check_used(method, w=w, gamma=gamma, top_percent=top_percent, out=out, evaluate=evaluate, units=units,
                sigma=sigma)
    if not sigma > 0:
        raise InvalidParameterError(f"--sigma must be > 0, got {sigma:g}", parameter="--sigma")
    _check_files(points, {"--out": (out, PICTURE_SUFFIXES), "--csv": (csv, (".csv",)),
                          "--geojson": (geojson, (".geojson", ".json")), "--npy": (npy, (".npy",)),
                          "--tiles": (tiles, (".csv",)), "--h3": (h3, (".csv",)),
                          "--geotiff": (geotiff, (".tif", ".tiff"))})
    _check_memory(resolution)
    if seed is not None and noise == "secure" and not simulation:
        raise InvalidParameterError(
            f"--seed {seed} is refused with --noise secure (a release): whoever knows the seed can subtract the noise; "
            "add --simulation to reproduce a release in a test, or use --noise float for simulation",
            parameter="--seed"
        )
    ext = _extent(bbox, centre, size, metres_box, crs)
    if ext is not None and (ext.projection is None or ext.crs is not None) and xy is None:
        raise InvalidParameterError("--metres-box needs --xy 'xcol,ycol' naming the columns in metres",
                                    parameter="--metres-box")
    if ext is None and xy is None:
        raise InvalidParameterError(
            "an extent is required with lon/lat columns: --bbox lon_min,lat_min,lon_max,lat_max or --centre lon,lat "
            "--size METRES; it must be public input (a bounding box taken from the data is not private); or pass "
            "--xy with [0, 1) columns"
        )
    cols = (lon, lat) if xy is None else tuple(xy.split(","))
    if len(cols) != 2:
        raise InvalidParameterError(f"--xy must be 'xcol,ycol', got {xy!r}", parameter="--xy")
    for option, path in (("--geojson", geojson), ("--tiles", tiles), ("--h3", h3)):
        if path is not None and (ext is None or ext.projection is None):
            raise InvalidParameterError(f"{option} needs a lon/lat extent (--bbox, --centre/--size or --metres-box "
                                        "with --crs)", parameter=option)
    if geotiff is not None and ext is None:
        raise InvalidParameterError("--geotiff needs an extent (--bbox, --centre/--size or --metres-box)",
                                    parameter="--geotiff")
    return ext, (cols[0], cols[1])


def _release(update: Any, points: str, *, user: str, cols: tuple[str, str], ext: Extent | None, drop_outside: bool,
             resolution: int, method: str, epsilon: float, w: int | None, gamma: float, top_percent: float | None,
             population: float | None, seed: int | None, noise: str, simulation: bool,
             error_bars: int = 0) -> tuple[Any, Any]:
    """Load the points, bound each user's contribution and release the map."""
    from dpcloak.heatmaps.api import heatmap_from_aggregate
    from dpcloak.heatmaps.data import bound_users
    from dpcloak.heatmaps.loaders import load_points

    update(1, STEPS, "loading points")
    try:
        data = load_points(Path(points), user=user, columns=cols, extent=ext, drop_outside=drop_outside)
    except InvalidParameterError as exc:
        if exc.parameter != "drop_outside":
            raise
        where = "" if ext is None else f" ({ext.source})"
        raise InvalidParameterError(f"POINTS {points}: {exc.got} points lie outside the extent{where}; enlarge the "
                                    "extent or add --drop-outside", parameter="--drop-outside", got=exc.got) from None
    if len(data.x) == 0:
        raise InvalidParameterError(f"POINTS {points}: no point left to map" + (
            " (--drop-outside dropped every point: none lies inside the extent)" if drop_outside else ""),
                                    parameter="POINTS")
    update(2, STEPS, "bounding users")
    agg = bound_users(data.users, data.x, data.y, resolution=resolution)
    update(3, STEPS, f"releasing ({method})")
    res = heatmap_from_aggregate(agg, method=method, epsilon=epsilon, w=w, gamma=gamma, top_percent=top_percent,
                                 population=population, extent=ext, rng=seed, noise=noise, simulation=simulation,
                                 error_bar_draws=error_bars)
    return res, agg


def _write(res: Any, agg: Any, *, evaluate: bool, npy: str | None, out: str | None, csv: str | None,
           geojson: str | None, ext: Extent | None, method: str, epsilon: float, sigma: float,
           units: str, tiles: str | None = None, h3: str | None = None, geotiff: str | None = None) -> str | None:
    """Write the requested files (each path was checked before any work); returns the NOT private one, if any."""
    import numpy as np

    from dpcloak.heatmaps.export import (
        h3_masses,
        tile_masses,
        write_cells_csv,
        write_geojson,
        write_geotiff,
        write_masses_csv,
    )
    from dpcloak.heatmaps.render import plot_heatmaps, render

    truth = agg.normalized if evaluate else None
    true_npy = None
    if npy is not None:
        np.save(Path(npy), res.aggregate)
        if truth is not None:
            true_npy = str(_beside(npy, "true-NOT-PRIVATE"))
            np.save(true_npy, truth)
    if out is not None:
        panels = {f"private ({method}, ε={epsilon:g})": res.render(sigma=sigma)}
        if truth is not None:
            panels["true map (NOT private)"] = render(truth, sigma=sigma)
        figure = plot_heatmaps(panels, extent=ext, units=units)
        if res.error_bar is not None:
            figure.text(0.5, 0.005, res.error_bar.describe(), ha="center", va="bottom", fontsize=7)
        if res.error_bar is not None and Path(out).suffix.lower() == ".png":  # also in the PNG's tEXt metadata
            figure.savefig(Path(out), dpi=150, metadata={"Description": res.error_bar.describe()})
        else:
            figure.savefig(Path(out), dpi=150)
    if csv is not None:
        write_cells_csv(csv, res.aggregate, extent=ext)
    if geojson is not None and ext is not None:
        write_geojson(geojson, res.aggregate, extent=ext, properties=res.public_summary())
    if tiles is not None and ext is not None:
        write_masses_csv(tiles, tile_masses(res.aggregate, extent=ext))
    if h3 is not None and ext is not None:
        write_masses_csv(h3, h3_masses(res.aggregate, extent=ext))
    if geotiff is not None and ext is not None:
        write_geotiff(geotiff, res.aggregate, extent=ext, properties=res.public_summary())
    return true_npy


def _report(res: Any, agg: Any, *, evaluate: bool, diagnostics: bool, sigma: float, ext: Extent | None,
            as_json: bool, outputs: dict[str, str | None], true_file: str | None) -> None:
    """Print the release (or its JSON), and curator-side numbers only when asked for."""
    from dpcloak.heatmaps.evaluate import score_heatmap
    from dpcloak.heatmaps.release import NOT_PRIVATE

    truth = agg.normalized if evaluate else None
    summary: dict[str, Any] = {**res.public_summary(), **outputs}
    curator: dict[str, Any] = {"label": NOT_PRIVATE}
    if diagnostics:
        curator.update(users=res.curator.n_users, points=res.curator.n_points, seconds=res.curator.timings["total"])
    if truth is not None:
        scores = score_heatmap(truth, res.aggregate, sigma=sigma, scale=1.0 if ext is None else ext.size)
        curator.update(emd=scores.emd, emd_unit="m" if ext is not None else "unit square", sim=scores.sim,
                       cc=scores.cc, kl=scores.kl)
    if true_file is not None:
        curator.update(true_map_file=true_file)
    if as_json:
        emit_json({**summary, **({"curator_not_private": curator} if len(curator) > 1 else {})})
        return
    _print(res, summary, curator)


def _print(res: Any, summary: dict[str, Any], curator: dict[str, Any]) -> None:
    g = res.privacy
    console.print(f"[bold]{res.method}[/] heatmap, {g.kind} with ε={g.epsilon:g} ({g.neighbouring})")
    console.print(f"Δ={res.resolution}, noise={res.noise}: {g.mechanism}")
    if "w_rule" in summary:
        spent = (f"; {summary['count_share']} of ε (ε={summary['count_epsilon']:.6g}) spent on the noisy user count"
                 if summary["count_share"] else "; no ε spent on choosing them")
        console.print(f"parameters: {summary['w_rule']}{spent}", highlight=False)
    if res.error_bar is not None:
        console.print(f"error bar: {res.error_bar.describe()}", highlight=False)
    if "size_m" in summary:
        console.print(f"extent: {summary['extent']}; square side {summary['size_m']:.6g} m, "
                      f"cells {summary['cell_size_m']:.6g} m")
    for key in ("out", "npy", "csv", "geojson", "tiles", "h3", "geotiff"):
        if summary[key] is not None:
            console.print(f"wrote {summary[key]}", highlight=False)
    if len(curator) > 1:
        console.print(f"[yellow]{curator['label']}:[/]")
        if "users" in curator:
            console.print(f"  {curator['users']} users, {curator['points']} points, {curator['seconds']:.3f} s")
        if "emd" in curator:
            console.print(f"  against the true map: EMD {curator['emd']:.4g} ({curator['emd_unit']}), "
                          f"SIM {curator['sim']:.3f}, CC {curator['cc']:.3f}, KL {curator['kl']:.3f}")
        if "true_map_file" in curator:
            console.print(f"  wrote the true map: {curator['true_map_file']}", highlight=False)

"""Pictures of recovered maps over the sensor positions (matplotlib, no pyplot state)."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dpcloak.errors import InvalidParameterError
from dpcloak.sensors.result import NetworkRecovery, misfit_advice

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from dpcloak.sensors.network import SensorNetwork

__all__ = ["draw_map", "save_maps"]


def draw_map(ax: Axes, network: SensorNetwork, result: NetworkRecovery, *, title: str = "", vmax: float | None = None,
             ) -> Any:
    """Draw one map on ``ax``: people per source (colour and area), sensors (triangles, hollow when
    missing), and a dashed circle of radius = the EMD uncertainty around the map's centre of mass.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> from dpcloak.sensors import Relation, SensorNetwork
    >>> net = SensorNetwork.from_coordinates(
    ...     sensors=[[0.0, 0.0], [100.0, 0.0], [0.0, 100.0], [100.0, 100.0]], relation=Relation.move(150.0),
    ...     epsilon=1.0, delta=1e-6, budget=(10.0, 1e-5), diffusion=2000.0)
    >>> result = net.recover(net.privatize([10.0, 20.0, 30.0, 5.0], rng=1, simulation=True), uncertainty_draws=0)
    >>> fig, ax = plt.subplots()
    >>> artist = draw_map(ax, net, result, title="people per source")
    >>> ax.get_title().splitlines()[0], ax.get_title().splitlines()[-1].split(",")[0], len(ax.collections) > 0
    ('people per source', 'fit', True)
    >>> plt.close(fig)
    """
    src = result.source_positions
    sensors = network.sensor_positions
    if src is None or sensors is None:
        raise InvalidParameterError("drawing a map needs source and sensor positions in metres", parameter="network")
    people = result.sources
    top = vmax if vmax is not None else max(float(people.max()), 1e-12)
    size = 20 + 400 * np.sqrt(np.clip(people / top, 0, 1))
    art = ax.scatter(src[:, 0], src[:, 1], s=size, c=people, cmap="magma_r", vmin=0, vmax=top, alpha=0.85,
                     edgecolors="none", zorder=2)
    ax.scatter(sensors[result.present, 0], sensors[result.present, 1], marker="^", s=28, c="tab:blue",
               zorder=3, label="sensor")
    if not result.present.all():
        ax.scatter(sensors[~result.present, 0], sensors[~result.present, 1], marker="^", s=28, facecolors="none",
                   edgecolors="tab:blue", zorder=3, label="missing")
    if not result.degenerate and math.isfinite(result.uncertainty):
        centre = result.distribution @ src
        ax.add_patch(_circle(centre, result.uncertainty))
    unc = f"±{result.uncertainty:.0f} m (EMD)" if math.isfinite(result.uncertainty) else result.uncertainty_text
    fit = "" if network.measurement == "counts" or not math.isfinite(result.misfit) else (
        f", misfit {100 * result.misfit:.2g} %")
    ax.set_title(f"{title}{chr(10) if title else ''}{result.total:.0f} {network.source_unit}, {unc}\n"
                 f"{result.status}{fit}", fontsize=7,
                 color="tab:red" if result.status == "least-residual" else "black")
    ax.set_aspect("equal")
    ax.margins(0.12)
    ax.tick_params(labelsize=6)
    return art


def _circle(centre: np.ndarray, radius: float) -> Any:
    from matplotlib.patches import Circle

    return Circle((float(centre[0]), float(centre[1])), radius, fill=False, linestyle="--", color="tab:green",
                  linewidth=1.0, zorder=4)


def save_maps(
    network: SensorNetwork, results: Sequence[NetworkRecovery], path: str | Path, *,
    labels: Sequence[str] | None = None, columns: int = 6,
) -> Path:
    """Save one map, or a grid of maps (e.g. a day of hourly maps, one colour scale), as a PNG.

    Examples
    --------
    >>> import tempfile
    >>> from dpcloak.sensors import Relation, SensorNetwork
    >>> net = SensorNetwork.from_coordinates(sensors=[[0.0, 0.0], [100.0, 0.0]], relation=Relation("add-remove"),
    ...                                      epsilon=1.0, delta=1e-6, budget=(10.0, 1e-5), diffusion=2000.0)
    >>> readings = ([5.0, 1.0], [1.0, 5.0])
    >>> maps = [net.recover(net.privatize(r, rng=0, simulation=True), uncertainty_draws=0) for r in readings]
    >>> tmp = tempfile.TemporaryDirectory()
    >>> png = save_maps(net, maps, Path(tmp.name) / "maps.png", labels=["8:00", "9:00"])
    >>> png.name, png.read_bytes()[:4] == b"\\x89PNG"
    ('maps.png', True)
    >>> tmp.cleanup()
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    if not results:
        raise InvalidParameterError("results must hold at least one map",
                                    parameter="results", allowed="at least one map")
    names = list(labels) if labels is not None else [""] * len(results)
    if len(names) != len(results):
        raise InvalidParameterError(f"labels must have one entry per map ({len(results)}), got {len(names)}",
                                    parameter="labels")
    cols = min(columns, len(results))
    rows = math.ceil(len(results) / cols)
    fig = Figure(figsize=(max(6.0, 3.2 * cols), max(4.5, 3.0 * rows + 0.6)), layout="constrained")
    FigureCanvasAgg(fig)
    vmax = max(float(r.sources.max()) for r in results) or 1.0
    arts = []
    for k, (res, name) in enumerate(zip(results, names, strict=True)):
        ax = fig.add_subplot(rows, cols, k + 1)
        arts.append(draw_map(ax, network, res, title=name, vmax=vmax))
        if k == 0:
            ax.legend(fontsize=6, loc="best", framealpha=0.6)
        ax.set_xlabel("metres east", fontsize=6)
        ax.set_ylabel("metres north", fontsize=6)
    what = "private counts per site" if network.measurement == "counts" else "recovered"
    fig.colorbar(arts[-1], ax=fig.axes, label=f"{network.source_unit} ({what})", shrink=0.6)
    wrapped = textwrap.fill(network.guarantee_text(), width=40 * min(cols, 4))
    advice = misfit_advice(network, results)
    warning = "" if advice is None else "\nWARNING: " + textwrap.fill(advice, width=40 * min(cols, 4))
    fig.suptitle(f"{wrapped}\nnoise: {network.noise} per reading; dashed circle: EMD uncertainty{warning}",
                 fontsize=8)
    out = Path(path)
    fig.savefig(out, dpi=110)
    return out

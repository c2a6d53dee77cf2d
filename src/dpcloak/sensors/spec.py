r"""The forward model of a sensor network, built from its layout: what reaches each sensor from each source.

Readings are in **people** (counts). Three physical models, each with one diffusion parameter
``diffusion`` in **m²** (heat spreads over about ``√(2·diffusion)`` metres):

``"graph"``
    Diffusion on a proximity graph of the sites (:func:`~dpcloak.domains.proximity_graph`,
    k-nearest-neighbour or Delaunay, conductance ``1/d²``): ``M = exp(−τ L)`` with ``τ =
    diffusion`` (thesis §8.3). Sources are the sites; ``M`` is column-stochastic, so one person at a
    site is spread over the sites as one person in total.
``"heat"``
    The free-space 2-D heat kernel (Gilbert & McMillan §2.1 in the plane) with ``T = diffusion``, scaled by
    ``4πT``: ``M[s, c] = exp(−d²/(4T))``, so a person standing at a sensor counts 1 there and one
    at distance ``d`` counts ``exp(−d²/4T)``.
``"heat-walls"``
    The same inside a closed box (reflecting walls, method of images): ``room``, or the sensors'
    bounding box grown by ``margin`` metres.

**A declared range of diffusions** (``diffusion_range=(lo, hi)``, containing ``diffusion``): the
guarantee is stated for every model with a diffusion in the range, so the sensitivity is the largest over
it (:func:`range_sensitivity`), certified: for ``"graph"``, ``M = exp(−τL)`` with ``L`` symmetric positive
semi-definite, so ``‖M v‖₂`` never grows with τ and the largest is at ``lo``; for ``"heat"``, each entry
``exp(−d²/4T)`` changes by at most ``ln(T'/T)/e`` between ``T`` and ``T'`` (its derivative in T is at most
``1/(eT)``), so on a geometric grid of ratio ``r`` the sensitivity between two grid points exceeds the
larger of theirs by at most ``‖v‖₁·√m·ln(r)/e`` (``‖v‖₁ ≤ 2`` for the relations' differences), which is
added. ``"heat-walls"`` (a sum of image kernels) takes no range. The map is recovered with ``diffusion``.

Sources (``sources``): ``"sensors"`` (one location per site) or ``"grid"``: cell centres every
``spacing`` metres over ``room`` or the sensors' bounding box grown by ``margin`` (a :class:`~dpcloak.domains.Sites`
domain, Euclidean metric). The graph model needs ``"sensors"``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dpcloak._validation import check_choice, check_int, check_real
from dpcloak.domains import PROXIMITY_METHODS, Sites, proximity_graph
from dpcloak.errors import InvalidParameterError
from dpcloak.models import LinearModel, graph_diffusion, heat_kernel_2d
from dpcloak.models.base import DenseModel
from dpcloak.privacy.sensitivity import Relation, relation_sensitivity

__all__ = ["MODEL_KINDS", "SOURCE_KINDS", "ModelSpec", "build_model", "counts_model", "grid_sites",
           "range_sensitivity"]

MODEL_KINDS = ("graph", "heat", "heat-walls")
SOURCE_KINDS = ("sensors", "grid")

#: Largest number of grid sources built (the relation and the EMD enumerate pairs of sources).
MAX_GRID_SOURCES = 4000


@dataclass(frozen=True)
class ModelSpec:
    """How the forward model is built from the layout (module docstring).

    Attributes
    ----------
    kind : {"graph", "heat", "heat-walls"}
    diffusion : float
        τ or T in m² (> 0).
    graph : {"knn", "delaunay"}
        Proximity graph of the ``"graph"`` model.
    k : int
        Neighbours per site for ``graph="knn"``.
    sources : {"sensors", "grid"}
    spacing : float or None
        Grid spacing in metres (``sources="grid"``).
    margin : float
        Metres added around the sensors' bounding box (grid sources, walls).
    room : ((x0, x1), (y0, y1)) or None
        An explicit floor in metres instead of the grown bounding box (e.g. a building's walls):
        grid sources cover it and ``"heat-walls"`` reflects at it. Sensors must lie inside.
    diffusion_range : (float, float) or None
        ``(lo, hi)`` m² with ``lo ≤ diffusion ≤ hi``: the diffusions the guarantee is stated for (module
        docstring; not for ``"heat-walls"``). ``None``: ``diffusion`` alone.

    Examples
    --------
    >>> spec = ModelSpec(kind="heat", diffusion=2000.0, sources="grid", spacing=50.0)
    >>> spec.kind, spec.diffusion, spec.sources
    ('heat', 2000.0, 'grid')
    >>> ModelSpec(kind="wave")
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidParameterError: ...

    >>> ModelSpec(kind="heat", diffusion=2000.0, margin=10.0).floor(np.array([[0.0, 0.0], [100.0, 50.0]]))
    ((-10.0, 110.0), (-10.0, 60.0))
    >>> ModelSpec().to_dict()["kind"]
    'graph'
    """

    kind: str = "graph"
    diffusion: float = 10_000.0
    graph: str = "knn"
    k: int = 4
    sources: str = "sensors"
    spacing: float | None = None
    margin: float = 0.0
    room: tuple[tuple[float, float], tuple[float, float]] | None = None
    diffusion_range: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        check_choice("model", self.kind, MODEL_KINDS)
        object.__setattr__(self, "diffusion", check_real("diffusion", self.diffusion, low=0.0))
        check_choice("graph", self.graph, PROXIMITY_METHODS)
        object.__setattr__(self, "k", check_int("k", self.k, minimum=1))
        check_choice("sources", self.sources, SOURCE_KINDS)
        object.__setattr__(self, "margin", check_real("margin", self.margin, low=0.0, low_inclusive=True))
        if self.sources == "grid":
            object.__setattr__(self, "spacing", check_real("spacing", self.spacing, low=0.0))
        elif self.spacing is not None:
            raise InvalidParameterError(f"spacing is for sources='grid', got spacing={self.spacing!r} with sensors",
                                        parameter="spacing")
        if self.kind == "graph" and self.sources != "sensors":
            raise InvalidParameterError("the graph model's sources are its nodes: use sources='sensors'",
                                        parameter="sources", allowed="sensors")
        if self.room is not None:
            if self.margin != 0.0:
                raise InvalidParameterError("give either room (the floor) or margin (around the sensors), not both",
                                            parameter="room", allowed="room or margin, not both")
            if self.kind == "graph":
                raise InvalidParameterError("room is for the heat models (grid sources, walls)", parameter="room")
            object.__setattr__(self, "room", _check_box(self.room))
        if self.diffusion_range is not None:
            object.__setattr__(self, "diffusion_range", self._check_range(self.diffusion_range))

    def _check_range(self, given: Any) -> tuple[float, float]:
        try:
            lo, hi = (check_real("diffusion_range", v, low=0.0) for v in given)
        except (TypeError, ValueError):
            raise InvalidParameterError(f"diffusion_range must be a pair (lo, hi) of m², got {given!r}",
                                        parameter="diffusion_range") from None
        if not lo <= self.diffusion <= hi:
            raise InvalidParameterError(f"diffusion_range must contain diffusion={self.diffusion:g} m² (lo <= "
                                        f"diffusion <= hi), got ({lo:g}, {hi:g})", parameter="diffusion_range")
        if self.kind == "heat-walls":
            raise InvalidParameterError("diffusion_range is for the graph and heat models (its sensitivity is "
                                        "certified for them), not heat-walls", parameter="diffusion_range")
        return lo, hi

    def to_dict(self) -> dict[str, Any]:
        """All fields (``spacing`` only for grid sources, ``room`` only when given)."""
        out = asdict(self)
        for key in ("spacing", "room", "diffusion_range"):
            if out[key] is None:
                del out[key]
        if "room" in out:
            out["room"] = [list(axis) for axis in out["room"]]
        if "diffusion_range" in out:
            out["diffusion_range"] = list(out["diffusion_range"])
        return out

    def describe(self) -> str:
        """The model in words, with its diffusion and unit (used in every field guarantee text).

        Examples
        --------
        >>> ModelSpec(kind="graph", diffusion=12000.0).describe()
        'graph diffusion on the 4-nearest-neighbour graph of the sites, τ = 12000 m², spreading ~155 m'
        """
        where = {"graph": f"graph diffusion on the {self.k}-nearest-neighbour graph of the sites" if self.graph == "knn"
                 else "graph diffusion on the Delaunay graph of the sites",
                 "heat": "2-D heat kernel", "heat-walls": "2-D heat kernel with reflecting walls"}[self.kind]
        symbol = "τ" if self.kind == "graph" else "T"
        text = f"{where}, {symbol} = {self.diffusion:g} m², spreading ~{math.sqrt(2 * self.diffusion):.0f} m"
        if self.diffusion_range is not None:
            lo, hi = self.diffusion_range
            text += f", any {symbol} in [{lo:g}, {hi:g}] m²"
        return text

    def floor(self, positions: NDArray[np.float64]) -> tuple[tuple[float, float], tuple[float, float]]:
        """The room: ``room`` if given (sensors must be inside), else the bounding box of ``positions`` ± margin."""
        if self.room is None:
            lo, hi = positions.min(axis=0) - self.margin, positions.max(axis=0) + self.margin
            return (float(lo[0]), float(hi[0])), (float(lo[1]), float(hi[1]))
        (x0, x1), (y0, y1) = self.room
        inside = (positions[:, 0] >= x0) & (positions[:, 0] <= x1) & (positions[:, 1] >= y0) & (positions[:, 1] <= y1)
        if not inside.all():
            bad = positions[~inside][0]
            raise InvalidParameterError(f"sensors must lie inside room {self.room}; got one at {tuple(bad.tolist())}",
                                        parameter="sensors")
        return self.room


def _check_box(box: Any) -> tuple[tuple[float, float], tuple[float, float]]:
    try:
        arr = np.asarray(box, dtype=float)
    except (TypeError, ValueError):
        arr = np.zeros(0)
    if arr.shape != (2, 2) or not np.all(np.isfinite(arr)) or not np.all(arr[:, 1] > arr[:, 0]):
        raise InvalidParameterError(f"room must be ((x0, x1), (y0, y1)) in metres with x1 > x0, y1 > y0, got {box!r}",
                                    parameter="room")
    return (float(arr[0, 0]), float(arr[0, 1])), (float(arr[1, 0]), float(arr[1, 1]))


def grid_sites(floor: tuple[tuple[float, float], tuple[float, float]], spacing: float) -> NDArray[np.float64]:
    """Cell centres every ``spacing`` metres covering ``floor`` ((x0, x1), (y0, y1)), centred in it.

    Examples
    --------
    >>> grid_sites(((0.0, 20.0), (0.0, 10.0)), 10.0).tolist()  # two 10 m cells, centred
    [[5.0, 5.0], [15.0, 5.0]]
    """
    (x0, x1), (y0, y1) = floor
    nx_, ny = max(1, math.ceil((x1 - x0) / spacing)), max(1, math.ceil((y1 - y0) / spacing))
    if nx_ * ny > MAX_GRID_SOURCES:
        raise InvalidParameterError(
            f"spacing={spacing:g} m gives {nx_ * ny} grid sources over a {x1 - x0:.0f} m x {y1 - y0:.0f} m box; "
            f"at most {MAX_GRID_SOURCES} are supported: use a larger spacing", parameter="spacing"
        )
    cx = x0 + ((x1 - x0) - nx_ * spacing) / 2 + (np.arange(nx_) + 0.5) * spacing
    cy = y0 + ((y1 - y0) - ny * spacing) / 2 + (np.arange(ny) + 0.5) * spacing
    xx, yy = np.meshgrid(cx, cy, indexing="xy")
    return np.column_stack([xx.ravel(), yy.ravel()])


def build_model(positions: NDArray[np.float64], spec: ModelSpec) -> LinearModel:
    """The forward model for sensors at ``positions`` (metres), in people (module docstring).

    Examples
    --------
    >>> positions = np.array([[0.0, 0.0], [100.0, 0.0], [0.0, 100.0], [100.0, 100.0]])
    >>> build_model(positions, ModelSpec(kind="graph", diffusion=2000.0)).shape  # sources at the sensors
    (4, 4)
    >>> build_model(positions, ModelSpec(kind="heat", diffusion=2000.0, sources="grid", spacing=50.0)).shape
    (4, 4)
    """
    if spec.kind == "graph":
        if len(positions) < 2:
            raise InvalidParameterError(f"the graph model needs at least 2 sensor sites, got {len(positions)}",
                                        parameter="sensors", allowed="at least 2 sites", got=len(positions))
        return graph_diffusion(proximity_graph(positions, method=spec.graph, k=spec.k), spec.diffusion)
    floor = spec.floor(positions)
    src = positions if spec.sources == "sensors" else grid_sites(floor, float(spec.spacing or 0.0))
    sites = Sites(src)
    T = spec.diffusion
    if spec.kind == "heat":
        heat = heat_kernel_2d(sites, positions, T, mu=1.0)
    else:
        if floor[0][1] <= floor[0][0] or floor[1][1] <= floor[1][0]:
            raise InvalidParameterError("heat-walls needs a room of positive size: set margin > 0 or room",
                                        parameter="margin", allowed="> 0 (or a room)")
        heat = heat_kernel_2d(sites, positions, T, mu=1.0, walls="reflecting", box=floor)
    return DenseModel(heat.todense() * (4 * math.pi * T), domain=sites, sensor_positions=positions)


def counts_model(positions: NDArray[np.float64]) -> LinearModel:
    """The model of a ``counts`` network: the identity over the sites (each site's map value is its own count).

    Examples
    --------
    >>> model = counts_model(np.array([[0.0, 0.0], [100.0, 0.0]]))
    >>> model.shape, model.todense().tolist()
    ((2, 2), [[1.0, 0.0], [0.0, 1.0]])
    """
    pos = np.asarray(positions, dtype=float)
    return DenseModel(np.eye(len(pos)), domain=Sites(pos), sensor_positions=pos)


#: Most diffusions :func:`range_sensitivity` evaluates on a heat model's range (the grid's slack is added).
RANGE_POINTS = 64
#: Grid ratio at which :func:`range_sensitivity` stops refining: its slack is then at most 2·√m·ln(r)/e.
RANGE_RATIO = 1.02


def range_sensitivity(positions: NDArray[np.float64], spec: ModelSpec, relation: Relation) -> float:
    """The largest Δ2 under ``relation`` over the spec's ``diffusion_range``, certified (module docstring).

    Without a range, Δ2 of the model at ``diffusion``.

    Examples
    --------
    >>> from dpcloak.privacy.sensitivity import Relation
    >>> pos = np.array([[0.0, 0.0], [100.0, 0.0], [0.0, 100.0], [100.0, 100.0]])
    >>> spec = ModelSpec(kind="graph", diffusion=4000.0, diffusion_range=(2000.0, 8000.0))
    >>> at_lo = relation_sensitivity(build_model(pos, ModelSpec(kind="graph", diffusion=2000.0)), Relation.move(150.0))
    >>> range_sensitivity(pos, spec, Relation.move(150.0)) == at_lo  # graph diffusion: the largest is at lo
    True
    """
    def at(diffusion: float) -> float:
        return relation_sensitivity(build_model(positions, replace(spec, diffusion=diffusion, diffusion_range=None)),
                                    relation)

    if spec.diffusion_range is None:
        return at(spec.diffusion)
    lo, hi = spec.diffusion_range
    if spec.kind == "graph" or lo == hi:
        return at(lo)
    points = min(RANGE_POINTS, max(2, math.ceil(math.log(hi / lo) / math.log(RANGE_RATIO)) + 1))
    grid = np.geomspace(lo, hi, points)
    ratio = float(np.max(grid[1:] / grid[:-1]))
    slack = 2.0 * math.sqrt(len(positions)) * math.log(ratio) / math.e
    return max(at(float(t)) for t in grid) + slack

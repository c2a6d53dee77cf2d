"""Command-line description of a sensor network: a saved configuration, or sensors CSV + model + relation.

Shared by ``dpcloak sensitivity / calibrate / recover`` and ``dpcloak network run``. The library
is imported inside the functions, so ``dpcloak --help`` pays for none of it.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from dpcloak.cli._common import readdressed
from dpcloak.errors import DpcloakError, InvalidParameterError

if TYPE_CHECKING:
    from collections.abc import Callable

    from dpcloak.models import LinearModel
    from dpcloak.privacy.sensitivity import Relation
    from dpcloak.sensors import SensorLayout, SensorNetwork

__all__ = ["NetworkCli", "network_options"]

F = TypeVar("F", bound="Callable[..., Any]")


@dataclass(frozen=True)
class NetworkCli:
    """The network options of a command (see :func:`network_options`)."""

    config: str | None = None
    sensors: str | None = None
    measurement: str = "field"
    max_count_per_person: int = 1
    reading_unit: str = "people"
    network_model: str = "graph"
    diffusion: float | None = None
    diffusion_range: str | None = None
    graph_method: str = "knn"
    k: int = 4
    sources: str = "sensors"
    spacing: float | None = None
    margin: float = 0.0
    relation: str = "move"
    unit: str = "m"
    colocated: str = "refuse"
    reading_max: float | None = None
    misfit: float | None = None
    budget_epsilon: float | None = None
    budget_delta: float | None = None

    @property
    def given(self) -> bool:
        """Whether a network was described (``--config`` or ``--sensors``)."""
        return self.config is not None or self.sensors is not None

    def require_absent(self) -> None:
        """Refuse network options given without ``--sensors``/``--config`` (they would be ignored)."""
        if not self.given:
            own = [f.name for f in fields(self) if getattr(self, f.name) != f.default]
            if own:
                names = ", ".join("--" + n.replace("_", "-") for n in own)
                raise InvalidParameterError(f"{names} describe a sensor network: give --sensors or --config too")

    def _relation(self, alpha: float | None) -> Relation:
        from dpcloak.privacy.sensitivity import Relation

        if self.relation == "add-remove":
            if alpha is not None:
                raise InvalidParameterError("--alpha is for the move relations; --relation add-remove takes none",
                                            parameter="--alpha")
            return Relation("add-remove")
        if alpha is None:
            raise InvalidParameterError(f"--relation {self.relation} needs --alpha (with --unit m or hops)",
                                        parameter="--relation")
        return Relation(self.relation, alpha, self.unit)

    def layout(self) -> SensorLayout:
        """The sensors from ``--sensors``."""
        from dpcloak.sensors import read_sensors_csv

        if self.sensors is None:
            raise InvalidParameterError("give --sensors (a CSV of lon/lat or x/y) or --config (a saved network)",
                                        parameter="--sensors")
        layout = read_sensors_csv(self.sensors, colocated=self.colocated)  # the file's errors name it and the line
        given = self.k != NetworkCli.k  # the default adapts to a small network; a given --k must fit it
        if self.network_model == "graph" and self.graph_method == "knn" and (
                self.k < 1 or (given and self.k >= layout.n_sites)):
            raise InvalidParameterError(f"--k must lie in [1, {layout.n_sites - 1}] (neighbours among the "
                                        f"{layout.n_sites} sensor sites), got {self.k}", parameter="--k")
        return layout

    def _check_exclusive(self, alpha: float | None) -> None:
        if self.config is not None and self.sensors is not None:
            raise InvalidParameterError("give either --config or --sensors, not both", parameter="--config")
        if alpha is not None and self.config is not None:
            raise InvalidParameterError("--config fixes the relation; remove --alpha", parameter="--config")
        if self.config is not None:
            own = [f.name for f in fields(self) if f.name != "config" and getattr(self, f.name) != f.default]
            if own:
                names = ", ".join("--" + n.replace("_", "-") for n in own)
                raise InvalidParameterError(f"--config fixes the whole network; remove {names}",
                                            parameter="--config")

    def model_and_relation(self, alpha: float | None) -> tuple[LinearModel, Relation, str]:
        """Model, relation and a one-line description, without a mechanism (for ``sensitivity``)."""
        try:
            return self._model_and_relation(alpha)
        except InvalidParameterError as exc:
            raise _in_options(exc) from None

    def _model_and_relation(self, alpha: float | None) -> tuple[LinearModel, Relation, str]:
        self._check_exclusive(alpha)
        if self.config is not None:
            net = self.network(epsilon=None, delta=None, alpha=None)
            if net.relation is None:
                raise InvalidParameterError(f"{self.config} is a counts network: its sensitivity is "
                                            f"max_count_per_person={net.max_count_per_person}, with no model")
            return net.model, net.relation, f"network {self.config}"
        from dpcloak.sensors import build_model

        if self.measurement != "field":
            raise InvalidParameterError("--measurement counts has no model: its sensitivity is --max-count-per-person",
                                        parameter="--measurement")
        layout = self.layout()
        return build_model(layout.positions, self._spec()), self._relation(alpha), self._describe(layout.n_sites)

    def _spec(self) -> Any:
        from dpcloak.sensors import ModelSpec

        if self.diffusion is None:
            raise InvalidParameterError("--diffusion (m²) is required with --sensors: heat spreads about "
                                        "sqrt(2 x diffusion) metres", parameter="--diffusion")
        return ModelSpec(kind=self.network_model, diffusion=self.diffusion, graph=self.graph_method, k=self.k,
                         sources=self.sources, spacing=self.spacing, margin=self.margin,
                         diffusion_range=self._range())

    def _range(self) -> tuple[float, float] | None:
        if self.diffusion_range is None:
            return None
        try:
            lo, hi = (float(v) for v in self.diffusion_range.split(","))
        except ValueError:
            raise InvalidParameterError(f"--diffusion-range must be LO,HI in m² (e.g. 1e4,4e4), got "
                                        f"{self.diffusion_range!r}", parameter="--diffusion-range") from None
        return lo, hi

    def _describe(self, sites: int) -> str:
        return (f"{self.network_model} model over {sites} sensor sites, diffusion {self.diffusion:g} m², "
                f"sources: {self.sources}")

    def network(self, *, epsilon: float | None, delta: float | None, alpha: float | None) -> SensorNetwork:
        """The network: loaded from ``--config`` (then ``epsilon``/``delta``/``alpha`` must be None) or built."""
        try:
            return self._network(epsilon=epsilon, delta=delta, alpha=alpha)
        except InvalidParameterError as exc:
            raise _in_options(exc) from None

    def _network(self, *, epsilon: float | None, delta: float | None, alpha: float | None) -> SensorNetwork:
        from dpcloak.sensors import SensorNetwork

        self._check_exclusive(alpha)
        if self.config is not None:
            if epsilon is not None or delta is not None:
                raise InvalidParameterError("--config fixes epsilon and delta; remove --epsilon/--delta",
                                            parameter="--config")
            return SensorNetwork.load(self.config)
        if epsilon is None or delta is None:
            raise InvalidParameterError("--epsilon and --delta are required with --sensors", parameter="--epsilon")
        if self.budget_epsilon is None or self.budget_delta is None:
            raise InvalidParameterError("--budget-epsilon and --budget-delta are required with --sensors: the total "
                                        "privacy the network may spend", parameter="--budget-epsilon")
        common: dict[str, Any] = {
            "sensors": self.layout(), "epsilon": epsilon, "delta": delta, "reading_unit": self.reading_unit,
            "budget": (self.budget_epsilon, self.budget_delta), "reading_range": (0.0, self.reading_max)}
        if self.measurement == "counts":
            field_only = [name for name in ("network_model", "diffusion", "diffusion_range", "graph_method", "k",
                                            "sources", "spacing", "margin", "relation", "unit", "misfit")
                          if getattr(self, name) != getattr(NetworkCli, name)]
            if field_only or alpha is not None:
                names = ", ".join("--" + n.replace("_", "-") for n in field_only + (["alpha"] if alpha else []))
                raise InvalidParameterError(f"{names} describe a field model; --measurement counts has none (the "
                                            "privacy unit is one person's contribution, --max-count-per-person)")
            return SensorNetwork.from_coordinates(measurement="counts",
                                                  max_count_per_person=self.max_count_per_person, **common)
        if self.measurement != "field":
            raise InvalidParameterError(f"--measurement must be counts or field, got {self.measurement!r}",
                                        parameter="--measurement")
        return SensorNetwork.from_coordinates(
            relation=self._relation(alpha), model=self.network_model, diffusion=self._spec().diffusion,
            diffusion_range=self._spec().diffusion_range,
            sources=self.sources, graph=self.graph_method, k=self.k, spacing=self.spacing, margin=self.margin,
            misfit=self.misfit, **common)


def _in_options(exc: InvalidParameterError) -> DpcloakError:
    """A library error in the options' words: its ``parameter`` field names the option (never its message)."""
    return readdressed(exc, LIBRARY_NAMES)


LIBRARY_NAMES = {
    "model": "--network-model", "graph": "--graph-method", "reading_range[1]": "--reading-max",
    "budget epsilon": "--budget-epsilon", "budget delta": "--budget-delta", "diffusion": "--diffusion", "k": "--k",
    "diffusion_range": "--diffusion-range",
    "spacing": "--spacing", "margin": "--margin", "sources": "--sources", "colocated": "--colocated",
    "alpha": "--alpha", "unit": "--unit", "kind": "--relation", "epsilon": "--epsilon", "delta": "--delta",
    "measurement": "--measurement", "max_count_per_person": "--max-count-per-person", "reading_unit": "--reading-unit",
    "misfit": "--misfit",
}
"""Names the library gives the network's parameters → the options that set them."""

_HELP = {
    "config": "Saved network configuration (TOML/JSON from 'dpcloak network run' or SensorNetwork.save).",
    "sensors": "Sensors CSV with a header: lon,lat (degrees) or x,y (metres), optional name column.",
    "measurement": "What the sensors measure: counts (people counters: unconditional guarantee for one person's "
                   "contribution, map = private counts) or field (a diffusing quantity: model-based guarantee).",
    "max_count_per_person": "Counts: how often one person may be counted per window, over all sensors (>= 1).",
    "reading_unit": "Unit of the readings, used in every label (e.g. people, µg/m³).",
    "network_model": "Network model: graph (diffusion on a k-NN/Delaunay graph), heat or heat-walls.",
    "diffusion": "Diffusion tau or T in m² (heat spreads about sqrt(2 x diffusion) metres).",
    "diffusion_range": "Field: LO,HI in m² around --diffusion: the guarantee holds for any diffusion in it (Delta2 is "
                       "the largest over it).",
    "graph_method": "Graph of the graph model: knn or delaunay.",
    "k": "Neighbours per sensor of the knn graph.",
    "sources": "Where people may be: sensors (the sites) or grid (needs --spacing).",
    "spacing": "Grid spacing in metres (--sources grid).",
    "margin": "Metres added around the sensors (grid sources, heat-walls room).",
    "relation": "Neighbouring relation: move, add-remove or move-or-add-remove (one person).",
    "unit": "Unit of --alpha: m (metres) or hops.",
    "colocated": "Sensors closer than 1 m: refuse or merge (readings summed).",
    "misfit": "Field: the model's misfit on public history (choose_diffusion_time), printed beside the guarantee.",
    "reading_max": "Clip every reading to at most this value (--reading-unit) before noise (default: no limit).",
    "budget_epsilon": "Total epsilon the network may spend over all releases.",
    "budget_delta": "The delta at which the budget is measured.",
}


def network_options(fn: F) -> F:
    """Give a command the network options; it receives them as ``network: NetworkCli``."""
    signature = inspect.signature(fn)
    own = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for n, p in signature.parameters.items() if n != "network"]
    injected = []
    for f in fields(NetworkCli):
        flag = "--" + f.name.replace("_", "-")
        kind = {"k": int, "margin": float, "network_model": str, "graph_method": str, "sources": str,
                "relation": str, "unit": str, "colocated": str, "measurement": str, "max_count_per_person": int,
                "reading_unit": str}.get(f.name)
        text = ("config", "sensors", "diffusion_range")
        annotation = kind if kind is not None else (float | None if f.name not in text else str | None)
        injected.append(inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation,
                                          default=typer.Option(f.default, flag, help=_HELP[f.name])))

    @functools.wraps(fn)
    def wrapper(**kwargs: Any) -> Any:
        network = NetworkCli(**{f.name: kwargs.pop(f.name) for f in fields(NetworkCli)})
        return fn(network=network, **kwargs)

    wrapper.__signature__ = signature.replace(parameters=injected + own)  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]

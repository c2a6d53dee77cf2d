"""A sensor network's configuration as a human-readable file (TOML or JSON) that fixes its guarantee.

Layout of the data (:func:`network_to_dict`)::

    format = "dpcloak.sensor-network/1"
    [measurement] kind ("counts" or "field"; absent: "field"), max_count_per_person (counts)
    [privacy]     epsilon, delta (one release, as declared), budget_epsilon, budget_delta, resolution
                  (reading units), accountant
    [relation]    kind, alpha, unit (field only)
    [readings]    unit (e.g. "people", "µg/m³"), source_unit, low, high (absent: no upper limit)
    [model]       kind, diffusion (m²), graph, k, sources, spacing, margin, misfit (field only)
    [sensors]     names, x, y (metres), groups (input rows merged per site), inputs (the counters'
                  names, one per input row), lon, lat (if given)
    [projection]  lon0, lat0 (if the sensors were given in lon/lat)
    [derived]     n_sensors, n_sources, delta2, sigma — for people reading the file; recomputed
                  on load and refused if they disagree

Everything outside ``[derived]`` is the input; :func:`fingerprint` hashes its canonical JSON
(sorted keys, no whitespace, shortest round-trip floats), so two files with the same fingerprint
determine the same model, relation, mechanism and budget.
"""

from __future__ import annotations

import hashlib
import json
import math
import tomllib
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np

from dpcloak.errors import InvalidParameterError
from dpcloak.geo import projection_for
from dpcloak.privacy.sensitivity import Relation
from dpcloak.sensors.layout import SensorLayout
from dpcloak.sensors.network import ACCOUNTANT, SensorNetwork
from dpcloak.sensors.spec import ModelSpec

__all__ = ["FORMAT", "network_to_dict", "network_from_dict", "save_network", "load_network", "fingerprint", "to_toml"]

FORMAT = "dpcloak.sensor-network/1"

#: Relative agreement required between a file's ``[derived]`` numbers and the recomputed ones.
DERIVED_RTOL = 1e-9


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


def network_to_dict(network: SensorNetwork) -> dict[str, Any]:
    """The configuration of a network built from coordinates (module docstring).

    Examples
    --------
    >>> from dpcloak.sensors import Relation, SensorNetwork
    >>> net = SensorNetwork.from_coordinates(sensors=[[0.0, 0.0], [100.0, 0.0]], relation=Relation.move(150.0),
    ...                                      epsilon=1.0, delta=1e-6, budget=(10.0, 1e-5), diffusion=2000.0)
    >>> data = network_to_dict(net)
    >>> sorted(data)
    ['derived', 'format', 'measurement', 'model', 'privacy', 'readings', 'relation', 'sensors']
    >>> network_from_dict(data).n_sensors
    2
    """
    layout, spec = network.layout, network.spec
    if layout is None or (spec is None and network.measurement == "field"):
        raise InvalidParameterError(
            "only a network built from coordinates (SensorNetwork.from_coordinates or from_dict) can be serialised; "
            "a network built from a bare LinearModel has no description of its model to write"
        )
    low, high = network.reading_range
    sensors: dict[str, Any] = {
        "names": list(layout.names),
        "x": [float(v) for v in layout.positions[:, 0]],
        "y": [float(v) for v in layout.positions[:, 1]],
        "groups": [list(g) for g in layout.groups],
    }
    if layout.input_names:
        sensors["inputs"] = list(layout.input_names)
    data: dict[str, Any] = {
        "format": FORMAT,
        "measurement": _drop_none({"kind": network.measurement, "max_count_per_person": network.max_count_per_person}),
        "privacy": {
            "epsilon": network.epsilon, "delta": network.declared_delta, "budget_epsilon": network.budget[0],
            "budget_delta": network.budget[1], "resolution": network.resolution, "accountant": ACCOUNTANT,
        },
        "readings": _drop_none({"unit": network.reading_unit, "source_unit": network.source_unit, "low": low,
                                "high": high}),
        "sensors": sensors,
    }
    if network.relation is not None and spec is not None:
        data["relation"] = _drop_none(network.relation.to_dict())
        data["model"] = _drop_none({**spec.to_dict(), "misfit": network.misfit})
    if layout.lonlat is not None and layout.projection is not None:
        sensors["lon"] = [float(v) for v in layout.lonlat[:, 0]]
        sensors["lat"] = [float(v) for v in layout.lonlat[:, 1]]
        data["projection"] = {"lon0": layout.projection.lon0, "lat0": layout.projection.lat0}
    data["derived"] = {"n_sensors": network.n_sensors, "n_sources": network.n_sources, "delta2": network.delta2,
                       "sigma": network.sigma}
    return data


def _section(data: dict[str, Any], name: str) -> dict[str, Any]:
    value = data.get(name)
    if not isinstance(value, dict):
        raise InvalidParameterError(f"configuration must have a [{name}] table")
    return value


def _get(section: dict[str, Any], table: str, key: str) -> Any:
    if key not in section:
        raise InvalidParameterError(f"configuration [{table}] must have {key!r}")
    return section[key]


def network_from_dict(data: dict[str, Any], *, ledger: str | PathLike[str] | None = None) -> SensorNetwork:
    """Rebuild a network from :func:`network_to_dict`'s data; refuses a stated Δ2 or σ that does not match.

    ``ledger``: the budget ledger file (see :class:`~dpcloak.sensors.SensorNetwork`).

    Examples
    --------
    The round trip keeps the calibration (Δ2 and σ are recomputed and checked against the stated ones):

    >>> from dpcloak.sensors import Relation, SensorNetwork
    >>> net = SensorNetwork.from_coordinates(sensors=[[0.0, 0.0], [100.0, 0.0]], relation=Relation.move(150.0),
    ...                                      epsilon=1.0, delta=1e-6, budget=(10.0, 1e-5), diffusion=2000.0)
    >>> again = network_from_dict(network_to_dict(net))
    >>> fingerprint(again) == fingerprint(net)
    True
    """
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        got = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise InvalidParameterError(f"configuration format must be {FORMAT!r}, got {got!r}")
    privacy, readings, sensors = _section(data, "privacy"), _section(data, "readings"), _section(data, "sensors")
    measurement = data.get("measurement", {"kind": "field"})
    if not isinstance(measurement, dict):
        raise InvalidParameterError("configuration [measurement] must be a table")
    kind = measurement.get("kind", "field")
    if privacy.get("accountant", ACCOUNTANT) != ACCOUNTANT:  # the guarantee's composition rule is fixed
        raise InvalidParameterError(f"[privacy] accountant must be {ACCOUNTANT!r}, got {privacy['accountant']!r}")
    x, y = np.asarray(_get(sensors, "sensors", "x"), float), np.asarray(_get(sensors, "sensors", "y"), float)
    if x.shape != y.shape or x.ndim != 1:
        raise InvalidParameterError("[sensors] x and y must be lists of the same length")
    names = [str(n) for n in sensors.get("names", [f"sensor {k}" for k in range(len(x))])]
    groups = tuple(tuple(int(i) for i in g) for g in sensors.get("groups", [[k] for k in range(len(x))]))
    if len(names) != len(x) or len(groups) != len(x):
        raise InvalidParameterError("[sensors] names and groups must have one entry per site")
    lonlat = projection = None
    if "projection" in data:
        proj = _section(data, "projection")
        projection = projection_for(_get(proj, "projection", "lon0"), _get(proj, "projection", "lat0"))
        lonlat = np.column_stack([_get(sensors, "sensors", "lon"), _get(sensors, "sensors", "lat")]).astype(float)
    inputs = tuple(str(n) for n in sensors.get("inputs", ()))
    if inputs and len(inputs) != sum(len(g) for g in groups):
        raise InvalidParameterError("[sensors] inputs must name every input row of the groups")
    layout = SensorLayout(positions=np.column_stack([x, y]), names=tuple(names), groups=groups, lonlat=lonlat,
                          projection=projection, input_names=inputs)
    common: dict[str, Any] = {
        "sensors": layout, "epsilon": _get(privacy, "privacy", "epsilon"), "delta": _get(privacy, "privacy", "delta"),
        "budget": (_get(privacy, "privacy", "budget_epsilon"), _get(privacy, "privacy", "budget_delta")),
        "reading_unit": readings.get("unit", "people"),
        "reading_range": (_get(readings, "readings", "low"), readings.get("high")),
        "resolution": privacy.get("resolution"), "ledger": ledger}
    if kind == "counts":
        extra = [name for name in ("relation", "model") if name in data]
        if extra:
            raise InvalidParameterError(f"a counts configuration has no {' or '.join(f'[{n}]' for n in extra)} "
                                        "(its guarantee does not depend on a model)")
        network = SensorNetwork.from_coordinates(
            measurement="counts", max_count_per_person=measurement.get("max_count_per_person", 1), **common)
    elif kind == "field":
        rel, model = _section(data, "relation"), dict(_section(data, "model"))
        relation = Relation(_get(rel, "relation", "kind"), rel.get("alpha"), rel.get("unit"))
        misfit = model.pop("misfit", None)
        spec = ModelSpec(**model)
        network = SensorNetwork.from_coordinates(
            relation=relation, source_unit=readings.get("source_unit"), misfit=misfit, model=spec.kind,
            diffusion=spec.diffusion, sources=spec.sources, graph=spec.graph, k=spec.k, spacing=spec.spacing,
            margin=spec.margin, room=spec.room, **common)
    else:
        raise InvalidParameterError(f"[measurement] kind must be 'counts' or 'field', got {kind!r}")
    derived = data.get("derived", {})
    for key, value in (("delta2", network.delta2), ("sigma", network.sigma), ("n_sensors", network.n_sensors),
                       ("n_sources", network.n_sources)):
        if key in derived and not math.isclose(float(derived[key]), float(value), rel_tol=DERIVED_RTOL):
            raise InvalidParameterError(
                f"configuration states {key}={derived[key]!r} but the model and relation give {value!r}; "
                "the file was edited or comes from another version: remove [derived] to accept the recomputed values"
            )
    return network


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidParameterError(f"cannot write the non-finite number {value!r} to TOML")
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise InvalidParameterError(f"cannot write {type(value).__name__} to TOML")


def to_toml(data: dict[str, Any]) -> str:
    """TOML text for a dict of scalars and one level of tables (the configuration's shape).

    Examples
    --------
    >>> print(to_toml({"format": "dpcloak-network/1", "privacy": {"epsilon": 1.0, "delta": 1e-06}}), end="")
    format = "dpcloak-network/1"
    <BLANKLINE>
    [privacy]
    epsilon = 1.0
    delta = 1e-06
    """
    lines = [f"{k} = {_toml_value(v)}" for k, v in data.items() if not isinstance(v, dict)]
    for name, table in data.items():
        if isinstance(table, dict):
            lines += ["", f"[{name}]"] + [f"{k} = {_toml_value(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


def _suffix(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in (".toml", ".json"):
        raise InvalidParameterError(f"configuration file must end in .toml or .json, got {path.name!r}")
    return suffix


def save_network(network: SensorNetwork, path: str | Path) -> Path:
    """Write the configuration to ``path`` (TOML or JSON by suffix).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from dpcloak.sensors import Relation, SensorNetwork
    >>> net = SensorNetwork.from_coordinates(sensors=[[0.0, 0.0], [100.0, 0.0]], relation=Relation.move(150.0),
    ...                                      epsilon=1.0, delta=1e-6, budget=(10.0, 1e-5), diffusion=2000.0)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = save_network(net, Path(d) / "network.toml")
    ...     print(path.name, fingerprint(load_network(path)) == fingerprint(net))
    network.toml True
    """
    file = Path(path)
    data = network_to_dict(network)
    text = to_toml(data) if _suffix(file) == ".toml" else json.dumps(data, indent=2) + "\n"
    file.write_text(text, encoding="utf-8")
    return file


def load_network(path: str | Path, *, ledger: str | PathLike[str] | None = None) -> SensorNetwork:
    """Read a configuration written by :func:`save_network` (``ledger``: see :func:`network_from_dict`).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from dpcloak.sensors import Relation, SensorNetwork
    >>> net = SensorNetwork.from_coordinates(sensors=[[0.0, 0.0], [100.0, 0.0]], relation=Relation.move(150.0),
    ...                                      epsilon=1.0, delta=1e-6, budget=(10.0, 1e-5), diffusion=2000.0)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     loaded = load_network(save_network(net, Path(d) / "network.json"))
    >>> loaded.n_sensors, loaded.n_sources
    (2, 2)
    """
    file = Path(path)
    suffix = _suffix(file)
    if not file.is_file():
        raise InvalidParameterError(f"configuration file not found: {file}")
    text = file.read_text(encoding="utf-8")
    try:
        data = tomllib.loads(text) if suffix == ".toml" else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise InvalidParameterError(f"{file} is not valid {suffix[1:].upper()}: {exc}") from None
    return network_from_dict(data, ledger=ledger)


def fingerprint(network: SensorNetwork) -> str:
    """Hex SHA-256 of the canonical JSON of the configuration without ``[derived]`` (module docstring).

    Examples
    --------
    >>> from dpcloak.sensors import Relation, SensorNetwork
    >>> def network(epsilon):
    ...     return SensorNetwork.from_coordinates(sensors=[[0.0, 0.0], [100.0, 0.0]], relation=Relation.move(150.0),
    ...                                           epsilon=epsilon, delta=1e-6, budget=(10.0, 1e-5), diffusion=2000.0)
    >>> len(fingerprint(network(1.0))), fingerprint(network(1.0)) == fingerprint(network(1.0))
    (64, True)
    >>> fingerprint(network(1.0)) == fingerprint(network(0.5))  # a different configuration
    False
    """
    data = network_to_dict(network)
    data.pop("derived")
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

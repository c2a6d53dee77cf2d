"""A sensor network's configuration as a human-readable file (TOML or JSON) that fixes its guarantee.

Layout of the data (:func:`network_to_dict`)::

    format = "dpcloak.sensor-network/1"
    [measurement] kind ("counts" or "field"; absent: "field"), max_count_per_person (counts)
    [privacy]     epsilon, delta (one release, as declared), budget_epsilon, budget_delta, resolution
                  (reading units), accountant
    [relation]    kind, alpha, unit (field only)
    [readings]    unit (e.g. "people", "µg/m³"), source_unit, low, high (absent: no upper limit)
    [model]       kind, diffusion (m²), diffusion_range (m², optional), graph, k, sources, spacing, margin,
                  misfit (field only)
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

from dpcloak._textfiles import read_text
from dpcloak.errors import InvalidFileError, InvalidParameterError
from dpcloak.geo import projection_for
from dpcloak.privacy.sensitivity import Relation
from dpcloak.sensors.layout import SensorLayout
from dpcloak.sensors.network import SensorNetwork
from dpcloak.sensors.release import ACCOUNTANT, ReleaseSpec
from dpcloak.sensors.spec import ModelSpec

__all__ = ["FORMAT", "SCHEMA", "check_schema", "network_to_dict", "network_from_dict", "save_network", "load_network",
           "fingerprint", "config_fingerprint", "release_spec_from_dict", "to_toml"]

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
            "a network built from a bare LinearModel has no description of its model to write",
            parameter="network"
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


_NUMBER = "a number"
_INT = "an integer"
_TEXT = "a string"
_NUMBERS = "a list of numbers"
_TEXTS = "a list of strings"
_GROUPS = "a list of lists of integers"
_ROOM = "[[x0, x1], [y0, y1]] in metres"
SCHEMA: dict[str, dict[str, str]] = {
    "measurement": {"kind": _TEXT, "max_count_per_person": _INT},
    "privacy": {"epsilon": _NUMBER, "delta": _NUMBER, "budget_epsilon": _NUMBER, "budget_delta": _NUMBER,
                "resolution": _NUMBER, "accountant": _TEXT},
    "relation": {"kind": _TEXT, "alpha": _NUMBER, "unit": _TEXT},
    "readings": {"unit": _TEXT, "source_unit": _TEXT, "low": _NUMBER, "high": _NUMBER},
    "model": {"kind": _TEXT, "diffusion": _NUMBER, "graph": _TEXT, "k": _INT, "sources": _TEXT, "spacing": _NUMBER,
              "margin": _NUMBER, "room": _ROOM, "misfit": _NUMBER, "diffusion_range": _NUMBERS},
    "sensors": {"names": _TEXTS, "x": _NUMBERS, "y": _NUMBERS, "groups": _GROUPS, "inputs": _TEXTS, "lon": _NUMBERS,
                "lat": _NUMBERS},
    "projection": {"lon0": _NUMBER, "lat0": _NUMBER},
    "derived": {"n_sensors": _INT, "n_sources": _INT, "delta2": _NUMBER, "sigma": _NUMBER},
}
"""The configuration's tables and their keys with the type each holds; any other table or key is refused."""


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_CHECKS = {
    _NUMBER: _is_number,
    _INT: lambda v: isinstance(v, int) and not isinstance(v, bool),
    _TEXT: lambda v: isinstance(v, str),
    _NUMBERS: lambda v: isinstance(v, list) and all(_is_number(x) for x in v),
    _TEXTS: lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
    _GROUPS: lambda v: isinstance(v, list) and all(
        isinstance(g, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in g) for g in v),
    _ROOM: lambda v: isinstance(v, list) and len(v) == 2 and all(
        isinstance(a, list) and len(a) == 2 and all(_is_number(x) for x in a) for a in v),
}


def _bad(message: str, field: str, got: Any = None) -> InvalidFileError:
    """A configuration error naming ``field`` (``table.key``); :func:`load_network` adds the file."""
    return InvalidFileError(f"configuration {message}", field=field, parameter="configuration", got=got)


def check_schema(data: Any) -> None:
    """Refuse a configuration whose tables, keys or value types are not those of :data:`SCHEMA`.

    Examples
    --------
    >>> check_schema({"format": FORMAT, "privacy": {"epsilon": "1"}})
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidFileError: configuration [privacy] epsilon must be a number, got '1'
    >>> check_schema({"format": FORMAT, "privacy": {"epsilon": 1.0, "epsilom": 2.0}})
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidFileError: configuration [privacy] has an unknown key 'epsilom' (keys: epsilon, delta, \
budget_epsilon, budget_delta, resolution, accountant)
    """
    if not isinstance(data, dict):
        raise _bad(f"must be a table of tables, got {type(data).__name__}", "format")
    for table, value in data.items():
        if table == "format":
            continue
        if table not in SCHEMA:
            raise _bad(f"has an unknown table [{table}] (tables: {', '.join(SCHEMA)})", table, table)
        if not isinstance(value, dict):
            raise _bad(f"[{table}] must be a table, got {type(value).__name__}", table, value)
        for key, item in value.items():
            kind = SCHEMA[table].get(key)
            if kind is None:
                raise _bad(f"[{table}] has an unknown key {key!r} (keys: {', '.join(SCHEMA[table])})",
                           f"{table}.{key}", key)
            if not _CHECKS[kind](item):
                shown = repr(item) if len(repr(item)) <= 40 else repr(item)[:37] + "..."
                raise _bad(f"[{table}] {key} must be {kind}, got {shown}", f"{table}.{key}", item)


def _check_sites(names: list[str], groups: tuple[tuple[int, ...], ...], inputs: tuple[str, ...]) -> None:
    """Unique site names; every input row in exactly one group; unique counter names."""
    twice = next((n for k, n in enumerate(names) if n in names[:k]), None)
    if twice is not None:
        raise _bad(f"[sensors] names must be unique: {twice!r} names two sites", "sensors.names", twice)
    rows = [i for g in groups for i in g]
    if any(not g for g in groups):
        raise _bad("[sensors] groups must not be empty: every site has at least one input row", "sensors.groups")
    if sorted(rows) != list(range(len(rows))):
        wrong = sorted(set(i for i in rows if not 0 <= i < len(rows)) | {i for i in rows if rows.count(i) > 1})
        raise _bad(f"[sensors] groups must hold each input row 0..{len(rows) - 1} exactly once, got {wrong[:3]} "
                   "out of range or repeated", "sensors.groups", wrong[:3])
    dup = next((n for k, n in enumerate(inputs) if n in inputs[:k]), None)
    if dup is not None:
        raise _bad(f"[sensors] inputs must be unique: {dup!r} names two counters", "sensors.inputs", dup)


def _section(data: dict[str, Any], name: str) -> dict[str, Any]:
    value = data.get(name)
    if not isinstance(value, dict):
        raise InvalidParameterError(f"configuration must have a [{name}] table", parameter="configuration")
    return value


def _get(section: dict[str, Any], table: str, key: str) -> Any:
    if key not in section:
        raise InvalidParameterError(f"configuration [{table}] must have {key!r}", parameter="configuration")
    return section[key]


def _tables(data: Any) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The checked ``[privacy]``, ``[readings]``, ``[sensors]`` and ``[measurement]`` tables of a configuration."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        got = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise _bad(f"format must be {FORMAT!r}, got {got!r}", "format", got)
    check_schema(data)
    privacy, readings, sensors = _section(data, "privacy"), _section(data, "readings"), _section(data, "sensors")
    measurement = data.get("measurement", {"kind": "field"})
    if privacy.get("accountant", ACCOUNTANT) != ACCOUNTANT:  # the guarantee's composition rule is fixed
        raise InvalidParameterError(f"[privacy] accountant must be {ACCOUNTANT!r}, got {privacy['accountant']!r}",
                                    parameter="configuration", allowed=ACCOUNTANT, got=privacy["accountant"])
    return privacy, readings, sensors, measurement


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
    privacy, readings, sensors, measurement = _tables(data)
    kind = measurement.get("kind", "field")
    x, y = np.asarray(_get(sensors, "sensors", "x"), float), np.asarray(_get(sensors, "sensors", "y"), float)
    if x.shape != y.shape or x.ndim != 1:
        raise InvalidParameterError("[sensors] x and y must be lists of the same length", parameter="configuration")
    names = [str(n) for n in sensors.get("names", [f"sensor {k}" for k in range(len(x))])]
    groups = tuple(tuple(int(i) for i in g) for g in sensors.get("groups", [[k] for k in range(len(x))]))
    if len(names) != len(x) or len(groups) != len(x):
        raise InvalidParameterError("[sensors] names and groups must have one entry per site",
                                    parameter="configuration")
    lonlat = projection = None
    if "projection" in data:
        proj = _section(data, "projection")
        projection = projection_for(_get(proj, "projection", "lon0"), _get(proj, "projection", "lat0"))
        lonlat = np.column_stack([_get(sensors, "sensors", "lon"), _get(sensors, "sensors", "lat")]).astype(float)
    inputs = tuple(str(n) for n in sensors.get("inputs", ()))
    if inputs and len(inputs) != sum(len(g) for g in groups):
        raise InvalidParameterError("[sensors] inputs must name every input row of the groups",
                                    parameter="configuration")
    _check_sites(names, groups, inputs)
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
                                        "(its guarantee does not depend on a model)",
                                        parameter="configuration", got=extra)
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
            margin=spec.margin, room=spec.room, diffusion_range=spec.diffusion_range, **common)
    else:
        raise InvalidParameterError(f"[measurement] kind must be 'counts' or 'field', got {kind!r}",
                                    parameter="configuration", allowed="counts, field", got=kind)
    derived = data.get("derived", {})
    for key, value in (("delta2", network.delta2), ("sigma", network.sigma), ("n_sensors", network.n_sensors),
                       ("n_sources", network.n_sources)):
        if key in derived and not math.isclose(float(derived[key]), float(value), rel_tol=DERIVED_RTOL):
            raise InvalidParameterError(
                f"configuration states {key}={derived[key]!r} but the model and relation give {value!r}; "
                "the file was edited or comes from another version: remove [derived] to accept the recomputed values",
                parameter="configuration"
            )
    return network


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidParameterError(f"cannot write the non-finite number {value!r} to TOML",
                                        parameter="network", allowed="finite numbers", got=value)
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise InvalidParameterError(f"cannot write {type(value).__name__} to TOML",
                                parameter="network", got=type(value).__name__)


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
        raise InvalidParameterError(f"configuration file must end in .toml or .json, got {path.name!r}",
                                    parameter="configuration")
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
    if not file.exists():
        raise InvalidFileError(f"{file}: no such file (the configuration file was not found)", path=file,
                               parameter="configuration")
    text = read_text(file, what="network configuration", parameter="configuration")
    try:
        data = tomllib.loads(text) if suffix == ".toml" else json.loads(text, parse_constant=_no_constant)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError, ValueError) as exc:
        raise InvalidFileError(f"{file} is not valid {suffix[1:].upper()}: {exc}", path=file,
                               line=getattr(exc, "lineno", None), parameter="configuration") from None
    try:
        return network_from_dict(data, ledger=ledger)
    except InvalidParameterError as exc:  # every refusal of the content names the file (and the field if known)
        field = exc.field if isinstance(exc, InvalidFileError) else exc.parameter
        raise InvalidFileError(f"{file}: {exc}", path=file, field=field, parameter="configuration",
                               got=exc.got) from None


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


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
    return config_fingerprint(network_to_dict(network))


def config_fingerprint(data: dict[str, Any]) -> str:
    """:func:`fingerprint` of a configuration given as data (``[derived]`` left out), without building the network.

    Examples
    --------
    >>> from dpcloak.sensors import Relation, SensorNetwork
    >>> net = SensorNetwork.from_coordinates(sensors=[[0.0, 0.0], [100.0, 0.0]], relation=Relation.move(150.0),
    ...                                      epsilon=1.0, delta=1e-6, budget=(10.0, 1e-5), diffusion=2000.0)
    >>> config_fingerprint(json.loads(json.dumps(network_to_dict(net)))) == fingerprint(net)  # through a file
    True
    """
    body = {key: value for key, value in data.items() if key != "derived"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def release_spec_from_dict(data: dict[str, Any]) -> ReleaseSpec:
    """What one sensor needs to release (:class:`~dpcloak.sensors.release.ReleaseSpec`), read off a configuration.

    Builds no model: a field network's Δ2 is the configuration's ``[derived] delta2`` (written with
    the configuration by :func:`network_to_dict`; required here), which whoever hands the
    configuration to a sensor must bind, e.g. in a deployment's fingerprint
    (:class:`dpcloak.service.config.Deployment`). :func:`network_from_dict` recomputes it from the model.

    Examples
    --------
    >>> from dpcloak.sensors import Relation, SensorNetwork
    >>> net = SensorNetwork.from_coordinates(sensors=[[0.0, 0.0], [100.0, 0.0]], relation=Relation.move(150.0),
    ...                                      epsilon=1.0, delta=1e-6, budget=(10.0, 1e-5), diffusion=2000.0)
    >>> spec = release_spec_from_dict(network_to_dict(net))
    >>> spec.mechanism.sigma2 == net.mechanism.sigma2, spec.max_releases() == net.max_releases()
    (True, True)
    """
    privacy, readings, sensors, measurement = _tables(data)
    kind = measurement.get("kind", "field")
    common: dict[str, Any] = {
        "measurement": kind, "n_sensors": len(_get(sensors, "sensors", "x")),
        "epsilon": _get(privacy, "privacy", "epsilon"), "delta": _get(privacy, "privacy", "delta"),
        "budget": (_get(privacy, "privacy", "budget_epsilon"), _get(privacy, "privacy", "budget_delta")),
        "reading_range": (_get(readings, "readings", "low"), readings.get("high")),
        "reading_unit": readings.get("unit", "people"), "resolution": privacy.get("resolution")}
    if kind == "counts":
        c = measurement.get("max_count_per_person", 1)
        return ReleaseSpec(sensitivity=float(c), neighbouring="", max_count_per_person=c, **common)
    rel = _section(data, "relation")
    derived = data.get("derived", {})
    if "delta2" not in derived:
        raise _bad("[derived] must state delta2 for a sensor to release without rebuilding the model (write the "
                   "configuration with SensorNetwork.save or deploy init)", "derived.delta2")
    relation = Relation(_get(rel, "relation", "kind"), rel.get("alpha"), rel.get("unit"))
    return ReleaseSpec(sensitivity=derived["delta2"], neighbouring=relation.describe(), **common)

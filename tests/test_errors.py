"""Every ``InvalidParameterError`` dpcloak raises carries the structured ``parameter`` field (issue 31).

The CLI finds the option an error is about from ``parameter`` (``dpcloak.cli._common.user_message``), never from
the message's words; an error without it reaches the user unaddressed. Oracle: the source itself (every call
``InvalidParameterError(...)`` / ``InvalidFileError(...)`` in ``src/dpcloak``, read with ``ast``).
"""

from __future__ import annotations

import ast
from pathlib import Path

from dpcloak.errors import InvalidFileError, InvalidParameterError

SRC = Path(__file__).resolve().parents[1] / "src" / "dpcloak"

WITHOUT_PARAMETER = {
    # (file, start of the message): why no single parameter is meant
    ("_validation.py", 'f"{what} needs about'): "a memory estimate of a whole computation, not of one argument",
    ("cli/_common.py", "f\"{', '.join(flag(n) for n in ignored)}"): "several options at once",
    ("cli/_network.py", 'f"{names} describe a sensor'): "several options at once",
    ("cli/_network.py", 'f"{self.config} is a counts'): "the saved network as a whole",
    ("cli/_network.py", 'f"{names} describe a field model'): "several options at once",
    ("cli/deploy.py", 'f"the network {network} declares'): "the network as a whole",
    ("cli/heatmap.py", "f\"give one extent, got {' and '.join"): "several options at once",
    ("cli/heatmap.py", "f\"{' and '.join(unused)}: only for"): "several options at once",
    ("cli/heatmap.py", '"an extent is required with lon/lat'): "one of several options is missing",
    ("cli/network.py", '"the network has no sensor layout'): "the network as a whole",
    ("cli/recover.py", '"this model\'s sensors have no 1-D'): "the model as a whole",
    ("cli/recover.py", "f\"{', '.join(extra)}: for a network"): "several options at once",
    ("cli/recover.py", '"give exactly one of --sigma'): "one of two options",
    ("cli/recover.py", "f\"{', '.join(given)}: fixed by the"): "several options at once",
}


def _calls_without_parameter(root: Path = SRC) -> list[tuple[str, str, int]]:
    found = []
    for path in sorted(root.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(source)):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("InvalidParameterError", "InvalidFileError")):
                continue
            keywords = {k.arg for k in node.keywords}
            if "parameter" in keywords or (node.func.id == "InvalidFileError" and "path" in keywords):
                continue  # a file error names its file (and its parameter defaults to "path")
            message = ast.get_source_segment(source, node.args[0]) if node.args else ""
            found.append((path.relative_to(root).as_posix(), " ".join((message or "").split()), node.lineno))
    return found


def _exempt(file: str, message: str) -> bool:
    return any(file == f and message.startswith(start) for f, start in WITHOUT_PARAMETER)


def test_every_invalid_parameter_error_names_its_parameter():
    missing = [f"{file}:{line}: {message[:80]}" for file, message, line in _calls_without_parameter()
               if not _exempt(file, message)]
    assert not missing, "InvalidParameterError without parameter=:\n" + "\n".join(missing)


def test_every_exemption_is_still_needed():
    calls = _calls_without_parameter()
    unused = [key for key in WITHOUT_PARAMETER if not any(f == key[0] and m.startswith(key[1]) for f, m, _ in calls)]
    assert not unused, f"exemptions no longer used: {unused}"


def test_the_scan_finds_a_call_without_parameter(tmp_path):
    """The checker itself: a call without the keyword is found, one with it (or a file error with its path) is
    not (both sides)."""
    (tmp_path / "m.py").write_text('raise InvalidParameterError("k must be >= 1")\n'
                                   'raise InvalidParameterError("x", parameter="k")\n'
                                   'raise InvalidFileError("f", path="a.csv")\n')
    assert _calls_without_parameter(tmp_path) == [("m.py", '"k must be >= 1"', 1)]


def test_structured_fields_survive_on_the_error():
    err = InvalidParameterError("epsilon must be > 0, got -1", parameter="epsilon", allowed="(0, inf)", got=-1.0)
    assert (err.parameter, err.allowed, err.got) == ("epsilon", "(0, inf)", -1.0)
    assert InvalidFileError("bad", path="a.csv", field="x", line=2).parameter == "path"

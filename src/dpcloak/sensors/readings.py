"""Readings from a CSV file: ``position,reading`` (a synthetic model's sensors) or ``sensor,reading`` (a network's).

Both formats have two columns and an optional header row. Every cell is checked: a reading or a
position that is not a finite number, a third column, a position or sensor listed twice, a sensor
the network does not have, and a file that is not UTF-8 are each an
:class:`~dpcloak.errors.InvalidFileError` naming the file, the line and the field.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from dpcloak._textfiles import read_text
from dpcloak.errors import InvalidFileError

__all__ = ["read_position_readings", "read_named_readings"]


def _rows(path: Path, what: str, columns: tuple[str, str]) -> list[tuple[int, list[str]]]:
    """The non-blank rows (line, two stripped cells) of a two-column CSV."""
    text = read_text(path, what=what)
    reader = csv.reader(io.StringIO(text, newline=""))
    rows = []
    try:
        for cells in reader:
            if cells and any(c.strip() for c in cells):
                rows.append((reader.line_num, [c.strip() for c in cells]))
    except csv.Error as exc:
        raise InvalidFileError(f"{path}:{reader.line_num}: not a valid CSV line ({exc})", path=path,
                               line=reader.line_num) from None
    for line, cells in rows:
        if len(cells) != 2:
            raise InvalidFileError(f"{path}:{line}: expected two columns ({columns[0]}, {columns[1]}), got "
                                   f"{len(cells)}", path=path, line=line, allowed="2 columns", got=len(cells))
    return rows


def _finite(path: Path, line: int, field: str, cell: str) -> float:
    try:
        value = float(cell)
    except ValueError:
        raise InvalidFileError(f"{path}:{line}: {field} {cell!r} is not a number", path=path, line=line, field=field,
                               got=cell) from None
    if not math.isfinite(value):
        raise InvalidFileError(f"{path}:{line}: {field} must be a finite number, got {cell!r}", path=path, line=line,
                               field=field, got=cell)
    return value


def read_position_readings(path: str | Path) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(positions, readings)`` from a CSV ``position,reading`` (a header row is optional).

    Examples
    --------
    >>> import tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = Path(tmp.name) / "readings.csv"
    >>> _ = path.write_text("position,reading\\n0.5,1.25\\n1.0,-0.5\\n")
    >>> positions, readings = read_position_readings(path)
    >>> positions.tolist(), readings.tolist()
    ([0.5, 1.0], [1.25, -0.5])
    >>> _ = path.write_text("0.5,inf\\n")
    >>> read_position_readings(path)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidFileError: .../readings.csv:1: reading must be a finite number, got 'inf'
    >>> tmp.cleanup()
    """
    file = Path(path)
    rows = _rows(file, "readings CSV", ("sensor position", "reading"))
    if rows and not _is_number(rows[0][1][0]) and not _is_number(rows[0][1][1]):
        rows = rows[1:]  # a header
    if not rows:
        raise InvalidFileError(f"{file} holds no readings", path=file)
    out = np.array([[_finite(file, line, "position", cells[0]), _finite(file, line, "reading", cells[1])]
                    for line, cells in rows])
    seen: dict[float, int] = {}
    for (line, _), position in zip(rows, out[:, 0], strict=True):
        if position in seen:
            raise InvalidFileError(f"{file}:{line}: position {position:g} is already listed on line {seen[position]}",
                                   path=file, line=line, field="position", got=float(position))
        seen[float(position)] = line
    return out[:, 0], out[:, 1]


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def read_named_readings(path: str | Path, names: list[str] | tuple[str, ...]) -> NDArray[np.float64]:
    """One reading per sensor from a CSV ``sensor,reading``, in the order of ``names`` (NaN where missing).

    A header row is optional; a sensor that is not listed, or whose reading is empty, is missing.

    Examples
    --------
    >>> import tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = Path(tmp.name) / "hour.csv"
    >>> _ = path.write_text("sensor,reading\\ngate,12\\nhall,\\n")
    >>> read_named_readings(path, ["hall", "gate", "door"]).tolist()
    [nan, 12.0, nan]
    >>> _ = path.write_text("gate,12\\ngate,13\\n")
    >>> read_named_readings(path, ["gate"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidFileError: .../hour.csv:2: sensor 'gate' is listed twice (first on line 1)
    >>> tmp.cleanup()
    """
    file = Path(path)
    index = {name: k for k, name in enumerate(names)}
    out = np.full(len(names), np.nan)
    seen: dict[int, int] = {}
    for line, (name, cell) in _rows(file, "readings CSV", ("sensor", "reading")):
        if name not in index:
            if not seen and not _is_number(cell):
                continue  # a header
            raise InvalidFileError(f"{file}:{line}: sensor {name!r} is not in the network ({list(names)[:3]}…)",
                                   path=file, line=line, field="sensor", got=name)
        j = index[name]
        if j in seen:
            raise InvalidFileError(f"{file}:{line}: sensor {name!r} is listed twice (first on line {seen[j]})",
                                   path=file, line=line, field="sensor", got=name)
        seen[j] = line
        if cell:
            out[j] = _finite(file, line, "reading", cell)
    return out

"""Hourly (or any periodic) counts from a CSV: one row per period, one column per counter.

The wide layout of open counter data: label columns (``date``, ``hour``, …) followed by one column
per counter, named as in the sensors file. Empty cells are missing readings (NaN).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from dpcloak._textfiles import read_csv_table
from dpcloak.errors import InvalidFileError, InvalidParameterError
from dpcloak.sensors.layout import SensorLayout

__all__ = ["Counts", "read_counts_csv"]


@dataclass(frozen=True)
class Counts:
    """Counts per period.

    Attributes
    ----------
    labels : tuple of str
        One label per period: the row's non-counter cells joined by a space (e.g. ``"2024-03-05 8:00-8:59"``).
    raw : ndarray, shape (k, n_inputs)
        Per counter, in the layout's input order (NaN = missing).
    values : ndarray, shape (k, m)
        Per site (merged counters summed, :meth:`SensorLayout.combine`): what the network privatizes.

    Examples
    --------
    Returned by :func:`read_counts_csv`:

    >>> import tempfile
    >>> from dpcloak.sensors import layout_from_coordinates
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = Path(tmp.name) / "counts.csv"
    >>> _ = path.write_text("date,hour,gate,hall\\n2024-03-05,8,120,80\\n2024-03-05,9,150,\\n")
    >>> counts = read_counts_csv(path, layout_from_coordinates([[0.0, 0.0], [100.0, 0.0]], names=["gate", "hall"]))
    >>> isinstance(counts, Counts), counts.labels
    (True, ('2024-03-05 8', '2024-03-05 9'))
    >>> counts.values.tolist()  # an empty cell is a missing reading
    [[120.0, 80.0], [150.0, nan]]
    >>> tmp.cleanup()
    """

    labels: tuple[str, ...]
    raw: NDArray[np.float64]
    values: NDArray[np.float64]


def _number(cell: str, file: Path, line: int, column: str) -> float:
    text = cell.strip()
    if not text:
        return math.nan
    try:
        value = float(text)
    except ValueError:
        raise InvalidFileError(f"{file}:{line}: count {cell!r} is not a number (column {column!r})", path=file,
                               line=line, field=column, got=cell) from None
    if not math.isfinite(value) or value < 0:
        raise InvalidFileError(f"{file}:{line}: counts must be finite and >= 0, got {cell!r} (column {column!r})",
                               path=file, line=line, field=column, got=cell)
    return value


def read_counts_csv(path: str | Path, layout: SensorLayout, *, where: dict[str, str] | None = None) -> Counts:
    """Counts for ``layout``'s counters from a wide CSV (module docstring).

    Parameters
    ----------
    path : str or Path
        CSV with a header naming every counter of ``layout.input_names`` (other columns are labels).
    layout : SensorLayout
        The sensors (e.g. ``network.layout``).
    where : dict of str to str, optional
        Keep only rows whose label columns have these values, e.g. ``{"date": "2024-03-05"}``.

    Examples
    --------
    >>> import tempfile
    >>> from dpcloak.sensors import layout_from_coordinates
    >>> layout = layout_from_coordinates([[0.0, 0.0], [100.0, 0.0]], names=["gate", "hall"])
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = Path(tmp.name) / "counts.csv"
    >>> _ = path.write_text("date,hour,gate,hall\\n2024-03-05,8,120,80\\n2024-03-06,8,1,2\\n")
    >>> read_counts_csv(path, layout, where={"date": "2024-03-06"}).values.tolist()
    [[1.0, 2.0]]
    >>> tmp.cleanup()
    """
    file = Path(path)
    if not file.exists():
        raise InvalidFileError(f"{file}: no such file (the counts CSV was not found)", path=file)
    if not layout.input_names:
        raise InvalidParameterError("the layout has no counter names to match the counts file's columns against",
                                    parameter="layout")
    table = read_csv_table(file, what="counts CSV")
    header = list(table.header)
    missing = [n for n in layout.input_names if n not in header]
    if missing:
        raise InvalidFileError(f"{file}: no column for counter(s) {missing[:3]} (columns: {header[:6]}…)", path=file,
                               line=1, field=missing[0])
    counter_cols = [header.index(n) for n in layout.input_names]
    label_cols = [k for k, h in enumerate(header) if h not in layout.input_names]
    filters = dict(where or {})
    for key in filters:
        if key not in header or header.index(key) not in label_cols:
            raise InvalidParameterError(f"where: {key!r} is not a label column of {file} (labels: "
                                        f"{[header[k] for k in label_cols]})", parameter="where", got=key)
    labels, raw = [], []
    for lineno, cells in table.rows:
        if any(cells[header.index(k)] != v for k, v in filters.items()):
            continue
        labels.append(" ".join(cells[k] for k in label_cols))
        raw.append([_number(cells[k], file, lineno, header[k]) for k in counter_cols])
    if not raw:
        raise InvalidFileError(f"{file}: no rows" + (f" match {filters}" if filters else ""), path=file)
    arr = np.asarray(raw, dtype=float)
    return Counts(labels=tuple(labels), raw=arr, values=layout.combine(arr))

"""Reading the text files dpcloak is given: text in UTF-8, CSV tables with a header, each mistake one error.

Every reader of a user's file goes through :func:`read_text` (and, for CSV, :func:`read_csv_table`),
so a missing file, a directory, a binary file, a file in Latin-1 or UTF-16, a duplicated or empty
column name and a row with too many or too few fields are each an
:class:`~dpcloak.errors.InvalidFileError` naming the file, the field and the line, never a
``UnicodeDecodeError`` or a silently shifted column.
"""

from __future__ import annotations

import csv
import gzip
import io
import zlib
from dataclasses import dataclass
from pathlib import Path

from dpcloak.errors import InvalidFileError

__all__ = ["CsvTable", "read_text", "read_csv_table"]

_BOMS = {b"\xff\xfe": "UTF-16 (little-endian)", b"\xfe\xff": "UTF-16 (big-endian)",
         b"\xff\xfe\x00\x00": "UTF-32 (little-endian)", b"\x00\x00\xfe\xff": "UTF-32 (big-endian)"}


def read_text(path: str | Path, *, what: str, parameter: str = "path") -> str:
    """The text of ``path``, which must be a readable UTF-8 file (a UTF-8 byte-order mark is dropped).

    A name ending in ``.gz`` is a gzip file of such text.

    ``what`` names the file's role in messages (e.g. ``"sensors CSV"``); ``parameter`` is the argument
    that named the file, for the error's ``parameter`` field.

    Examples
    --------
    >>> import tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> good, latin = Path(tmp.name) / "good.csv", Path(tmp.name) / "latin.csv"
    >>> _ = good.write_text("name\\nZürich\\n", encoding="utf-8")
    >>> read_text(good, what="sensors CSV").splitlines()[1]
    'Zürich'
    >>> _ = latin.write_text("name\\nZürich\\n", encoding="latin-1")
    >>> read_text(latin, what="sensors CSV")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidFileError: .../latin.csv:2: the sensors CSV is not UTF-8 text (byte 0xfc); save it as UTF-8
    >>> tmp.cleanup()
    """
    p = Path(path)
    if not p.exists():
        raise InvalidFileError(f"{p}: no such file (the {what})", path=p, parameter=parameter)
    if p.is_dir():
        raise InvalidFileError(f"{p}: is a directory, expected the {what}", path=p, parameter=parameter)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise InvalidFileError(f"{p}: cannot be read ({exc.strerror or exc})", path=p, parameter=parameter) from None
    if p.name.endswith(".gz"):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise InvalidFileError(f"{p}: the {what} is not a valid gzip file ({exc})", path=p,
                                   parameter=parameter) from None
    for bom, encoding in sorted(_BOMS.items(), key=lambda item: -len(item[0])):
        if data.startswith(bom):
            raise InvalidFileError(f"{p}: the {what} is {encoding} text; save it as UTF-8", path=p,
                                   parameter=parameter, got=encoding)
    if b"\0" in data:
        line = data.count(b"\n", 0, data.index(b"\0")) + 1
        raise InvalidFileError(f"{p}:{line}: the {what} is a binary file (it holds NUL bytes), expected UTF-8 text",
                               path=p, line=line, parameter=parameter)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line, byte = data.count(b"\n", 0, exc.start) + 1, f"0x{data[exc.start]:02x}"
        raise InvalidFileError(f"{p}:{line}: the {what} is not UTF-8 text (byte {byte}); save it as UTF-8", path=p,
                               line=line, parameter=parameter, got=byte) from None


@dataclass(frozen=True)
class CsvTable:
    """A CSV file with a header: the column names, and each data row with its line number.

    Attributes
    ----------
    path : Path
    header : tuple of str
        Column names, stripped, unique and non-empty.
    rows : tuple of (int, tuple of str)
        ``(line, cells)`` of each non-blank row after the header, every one as long as the header.
    header_line : int
        The header's line (blank lines before it are skipped).
    """

    path: Path
    header: tuple[str, ...]
    rows: tuple[tuple[int, tuple[str, ...]], ...]
    header_line: int = 1

    def column(self, name: str) -> int:
        """Index of column ``name``.

        Examples
        --------
        >>> CsvTable(Path("s.csv"), ("name", "x"), ()).column("x")
        1
        """
        return self.header.index(name)


def read_csv_table(path: str | Path, *, what: str, parameter: str = "path") -> CsvTable:
    """``path`` as a CSV table: UTF-8 (:func:`read_text`), a header of unique non-empty names, full rows.

    Examples
    --------
    >>> import tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = Path(tmp.name) / "counts.csv"
    >>> _ = path.write_text("date,a,b\\n2024-03-05,1,2\\n\\n2024-03-06,3,4\\n")
    >>> table = read_csv_table(path, what="counts CSV")
    >>> table.header, table.rows[1]
    (('date', 'a', 'b'), (4, ('2024-03-06', '3', '4')))
    >>> _ = path.write_text("date,a,a\\n2024-03-05,1,2\\n")
    >>> read_csv_table(path, what="counts CSV")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidFileError: .../counts.csv:1: column 'a' appears twice in the header of the counts CSV
    >>> _ = path.write_text("date,a,b\\n2024-03-05,1,2,7\\n")
    >>> read_csv_table(path, what="counts CSV")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidFileError: .../counts.csv:2: 4 fields, but the header has 3 (date, a, b)...
    >>> tmp.cleanup()
    """
    p = Path(path)
    text = read_text(p, what=what, parameter=parameter)
    records: list[tuple[int, tuple[str, ...]]] = []
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        for raw in reader:
            records.append((reader.line_num, tuple(c.strip() for c in raw)))
    except csv.Error as exc:
        raise InvalidFileError(f"{p}:{reader.line_num}: not a valid CSV line ({exc})", path=p, line=reader.line_num,
                               parameter=parameter) from None
    records = [(line, cells) for line, cells in records if any(cells)]
    if not records:
        raise InvalidFileError(f"{p}: the {what} is empty; it needs a header row", path=p, parameter=parameter)
    head_line, header = records[0]
    for k, name in enumerate(header):
        if not name:
            raise InvalidFileError(f"{p}:{head_line}: column {k + 1} of the header of the {what} has no name", path=p,
                                   line=head_line, field=f"column {k + 1}", parameter=parameter)
        if name in header[:k]:
            raise InvalidFileError(f"{p}:{head_line}: column {name!r} appears twice in the header of the {what}",
                                   path=p, line=head_line, field=name, parameter=parameter)
    for line, cells in records[1:]:
        if len(cells) != len(header):
            shown = ", ".join(header[:6]) + (", …" if len(header) > 6 else "")
            raise InvalidFileError(f"{p}:{line}: {len(cells)} fields, but the header has {len(header)} ({shown}); "
                                   "a missing or extra separator shifts every column after it", path=p, line=line,
                                   parameter=parameter, got=len(cells))
    return CsvTable(path=p, header=header, rows=tuple(records[1:]), header_line=head_line)

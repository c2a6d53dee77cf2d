"""Keep dpcloak's own docstring sections ("Privacy guarantee", "Security events") in the rendered reference.

numpydoc knows a fixed list of sections and drops any other with a warning, which would silently
remove the one paragraph a reader of privacy software most needs. Before numpydoc parses a
docstring, this hook moves each such section into an admonition at the end of the "Notes" section
(creating it if needed), where numpydoc keeps free reStructuredText.
"""

from __future__ import annotations

from typing import Any

TITLES = ("privacy guarantee", "security events")


def _is_header(lines: list[str], i: int) -> bool:
    return (
        i + 1 < len(lines)
        and bool(lines[i].strip())
        and set(lines[i + 1].strip()) == {"-"}
        and len(lines[i + 1].strip()) >= len(lines[i].strip()) - 1
    )


def move_privacy_section(lines: list[str]) -> list[str]:
    """The docstring ``lines`` with each section of ``TITLES`` turned into a Notes admonition."""
    for title in TITLES:
        lines = _move_section(lines, title)
    return lines


def _move_section(lines: list[str], title: str) -> list[str]:
    start = next((i for i in range(len(lines)) if _is_header(lines, i) and lines[i].strip().lower() == title), None)
    if start is None:
        return lines
    end = next((i for i in range(start + 2, len(lines)) if _is_header(lines, i)), len(lines))
    body = lines[start + 2 : end]
    rest = lines[:start] + lines[end:]
    heading = lines[start].strip()
    admonition = ["", f".. admonition:: {heading}", ""] + [f"   {line}" if line.strip() else "" for line in body]
    notes = next((i for i in range(len(rest)) if _is_header(rest, i) and rest[i].strip().lower() == "notes"), None)
    if notes is None:
        return [*rest, "", "Notes", "-----", *admonition[1:], ""]
    notes_end = next((i for i in range(notes + 2, len(rest)) if _is_header(rest, i)), len(rest))
    return rest[:notes_end] + admonition + [""] + rest[notes_end:]


def _hook(app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    lines[:] = move_privacy_section(lines)


def setup(app: Any) -> dict[str, bool]:
    app.connect("autodoc-process-docstring", _hook, priority=100)  # before numpydoc (priority 500)
    return {"parallel_read_safe": True}

"""The documentation build's own tools: the Privacy-guarantee section mover and the link checker."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs" / "_ext"))

from check_links import broken_links
from privacy_sections import move_privacy_section


def test_privacy_section_moves_into_notes_admonition() -> None:
    doc = ["Summary.", "", "Parameters", "----------", "x : int", "    A value.", "",
           "Privacy guarantee", "-----------------", "ε-DP, exactly.", "", "Notes", "-----", "Some math."]
    out = move_privacy_section(doc)
    assert "Privacy guarantee" not in [line.strip() for line in out if not line.startswith(".. ")]
    notes = out.index("Notes")
    assert out[notes + 1] == "-----"
    admonition = out.index(".. admonition:: Privacy guarantee")
    assert admonition > notes and "   ε-DP, exactly." in out[admonition:]
    assert out[: out.index("Notes")].count("x : int") == 1  # other sections untouched


def test_privacy_section_creates_notes_when_missing() -> None:
    out = move_privacy_section(["Summary.", "", "Privacy guarantee", "-----------------", "δ = 0."])
    assert out[out.index("Notes") + 1] == "-----"
    assert "   δ = 0." in out


def test_docstring_without_the_section_is_unchanged() -> None:
    doc = ["Summary.", "", "Returns", "-------", "float"]
    assert move_privacy_section(doc) == doc


@pytest.mark.parametrize(
    ("href", "broken"),
    [("b.html", 0), ("b.html#here", 0), ("b.html#nowhere", 1), ("missing.html", 1), ("https://example.org/x", 0)],
)
def test_link_checker(tmp_path: Path, href: str, broken: int) -> None:
    (tmp_path / "index.html").write_text(f'<html><body><a href="{href}">x</a></body></html>')
    (tmp_path / "b.html").write_text('<html><body><h1 id="here">b</h1></body></html>')
    assert len(broken_links(tmp_path)) == broken

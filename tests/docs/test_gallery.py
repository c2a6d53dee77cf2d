"""The gallery (examples/, executed by the docs build) keeps at least a dozen short, titled examples."""

from __future__ import annotations

import ast
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_gallery_has_a_dozen_titled_examples() -> None:
    scripts = sorted(EXAMPLES.glob("plot_*.py"))  # sphinx-gallery executes files matching /plot_
    assert len(scripts) >= 12
    titles = []
    for script in scripts:
        doc = ast.get_docstring(ast.parse(script.read_text(encoding="utf-8"))) or ""
        title, underline, *_ = [*doc.splitlines(), "", ""]
        assert title and set(underline) == {"="} and len(underline) >= len(title), script.name
        assert len(title) <= 45, f"{script.name}: a gallery title is a short question-like label"
        titles.append(title)
    assert len(set(titles)) == len(titles)

"""The README's benchmark block is what ``benchmarks/readme_table.py`` generates from the committed results."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _module():
    spec = importlib.util.spec_from_file_location("readme_table", ROOT / "benchmarks" / "readme_table.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_block_equals_the_generated_table():
    rt = _module()
    readme = (ROOT / "README.md").read_text()
    assert rt.START in readme and rt.END in readme
    assert rt.render(readme, rt.table()) == readme, "run: python benchmarks/readme_table.py"


def test_table_has_one_line_per_result_row_and_marks_unfinished_peers(tmp_path):
    rt = _module()
    rows = [
        {"size": "64²", "n": 4096, "ours_s": 0.02, "peer_s": 0.5, "peer_finished": True, "ratio": 25.0,
         "peak_rss_mb": 170.0},
        {"size": "512²", "n": 262144, "ours_s": 4.0, "peer_s": None, "peer_finished": False, "ratio": 10.0,
         "peak_rss_mb": 260.0},
    ]
    doc = {"kernel": "k", "peer": "p", "unit": "cells", "rows": rows, "slope": 1.1, "load_avg": 0.5, "date": "d"}
    (tmp_path / "x.json").write_text(json.dumps(doc))
    lines = rt.table(tmp_path).splitlines()
    body = [line for line in lines if line.startswith("| k") or line.startswith("|  |")]
    assert len(body) == 2
    assert "| 0.5 | 25×" in body[0] and "slope 1.10" in body[0]
    assert "> 40 | ≥ 10×" in body[1]
    with pytest.raises(SystemExit, match="no <!-- bench:start -->"):
        rt.render("no markers", "x")

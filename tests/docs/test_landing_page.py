"""The landing page's snippets (docs/index.md) run as shown and do what their comments say."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest

INDEX = Path(__file__).resolve().parents[2] / "docs" / "index.md"


def _snippets() -> list[str]:
    return re.findall(r"```python\n(.*?)```", INDEX.read_text(encoding="utf-8"), flags=re.S)


def _run(code: str, where: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, object], str]:
    monkeypatch.chdir(where)
    namespace: dict[str, object] = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(INDEX), "exec"), namespace)
    return namespace, out.getvalue()


def test_landing_page_has_a_snippet_per_flow() -> None:
    names = [re.search(r"from dpcloak\.(\w+)", s).group(1) for s in _snippets()]  # type: ignore[union-attr]
    assert names == ["models", "heatmaps", "audit"]


def test_sensor_snippet_recovers_the_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ns, _ = _run(_snippets()[0], tmp_path, monkeypatch)
    estimate, sources, model = ns["estimate"], ns["sources"], ns["model"]
    assert estimate.shape == (100,) and np.all(estimate >= 0)  # type: ignore[attr-defined]
    assert ns["private"].shape == (50,)  # type: ignore[attr-defined]
    from dpcloak.domains import Line
    from dpcloak.metrics import emd

    # The recovery beats knowing nothing (the uniform map) in Earth Mover's Distance.
    assert emd(sources, estimate, Line(100)) < emd(sources, np.ones(100), Line(100))  # type: ignore[arg-type]
    assert model.shape == (50, 100)  # type: ignore[attr-defined]


def test_heatmap_snippet_writes_geojson(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ns, _ = _run(_snippets()[1], tmp_path, monkeypatch)
    collection = json.loads((tmp_path / "cells.geojson").read_text())
    shares = [f["properties"]["share"] for f in collection["features"]]
    assert collection["type"] == "FeatureCollection" and shares and min(shares) > 0
    assert abs(sum(shares) - 1.0) < 1e-9
    assert ns["result"].guarantee().epsilon == 1.0  # type: ignore[attr-defined]


def test_audit_snippet_prints_its_verdict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, printed = _run(_snippets()[2], tmp_path, monkeypatch)
    assert printed.strip() == "ACCEPT"

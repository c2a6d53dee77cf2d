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


# --- the reproduce pages (docs/_ext/reproduce_pages.py) ---------------------------------------------------------


def _figure(rows: list[dict[str, object]]) -> object:
    from matplotlib.figure import Figure

    fig = Figure()
    fig.add_subplot().plot([r["x"] for r in rows], [r["y"] for r in rows])
    return fig


def _trial(params: dict[str, object], rng: object) -> dict[str, float]:
    return {"y": 2.0 * float(params["x"])}  # type: ignore[arg-type]


def _noisy_trial(params: dict[str, object], rng: object) -> dict[str, float]:
    return {"y": 2.0 * float(params["x"]), "noise": float(rng.normal())}  # type: ignore[arg-type, attr-defined]


def _experiment(trials: int, trial: object = _trial) -> object:
    from dpcloak.experiments import Claim, Experiment, vary

    return Experiment(
        id=f"docs-test-{trials}", title="y = 2x", source="nowhere", trial=trial,  # type: ignore[arg-type]
        sweep=vary("x", [1.0, 2.0, 3.0]), quick_sweep=vary("x", [1.0, 2.0]), plot=_figure,
        claims=lambda rows: [Claim.check("y doubles x", f"{len(rows)} rows", all(r["y"] == 2 * r["x"] for r in rows)),
                             Claim("out of scope", "-", "not applicable")],
        trials=trials, quick_trials=1, notes="Costs $5 to reproduce.",
    )


@pytest.mark.parametrize(("trials", "noisy", "shown"), [
    (1, False, "**confirmed**"),  # deterministic: judged on the points computed
    (1, True, "**too small to judge (quick sweep: confirmed)**"),  # one trial per point, but seed-dependent
    (10, False, "**too small to judge (quick sweep: confirmed)**"),  # the paper's claim is over 10 trials
])
def test_reproduce_page_judges_quick_runs(tmp_path: Path, trials: int, noisy: bool, shown: str) -> None:
    from reproduce_pages import _page, _run

    experiment = _experiment(trials, _noisy_trial if noisy else _trial)
    record = _run(experiment, tmp_path / "run", quick=True)
    page = _page(experiment, record, quick=True)
    assert {p.name for p in (tmp_path / "run").iterdir()} == {"data.csv", "figure.png", "report.md", "run.json"}
    assert f"| y doubles x | 2 rows | {shown} |" in page  # measured from the run: 2 quick points × 1 trial
    assert "| out of scope | - | **not applicable** |" in page
    assert "2 of the paper sweep's 3 points × 1 of" in page
    assert "Costs \\$5" in page  # a dollar sign is text, not the start of MyST math


def test_reproduce_cache_key_follows_the_sources(tmp_path: Path) -> None:
    from reproduce_pages import source_key

    (tmp_path / "a.py").write_text("x = 1\n")
    first = source_key(tmp_path, "quick")
    assert source_key(tmp_path, "quick") == first
    assert source_key(tmp_path, "full") != first
    (tmp_path / "a.py").write_text("x = 2\n")
    assert source_key(tmp_path, "quick") != first

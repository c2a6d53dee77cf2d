"""The documentation build's own tools: the Privacy-guarantee section mover and the link checker."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs" / "_ext"))

from check_links import broken_links, external_loads
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


@pytest.mark.parametrize(
    ("head", "outside"),
    [
        ('<script src="https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js"></script>', 1),
        ('<script src="//cdn.example.org/x.js"></script>', 1),
        ('<link rel="stylesheet" href="https://fonts.googleapis.com/css?family=Lato">', 1),
        ('<style>@import "https://fonts.example.org/a.css";</style>', 1),
        ('<div style="background: url(https://example.org/bg.png)"></div>', 1),
        ('<img srcset="https://example.org/a.png 2x, _static/b.png 1x">', 1),
        ('<img src="_static/local.png"><script src="_static/local.js"></script>', 0),
        ('<link rel="stylesheet" href="_static/site.css"><a href="https://example.org/">a link</a>', 0),
        ('<img src="data:image/png;base64,AAAA">', 0),
        ('<math xmlns="http://www.w3.org/1998/Math/MathML"><mi>x</mi></math>', 0),
    ],
)
def test_external_load_checker(tmp_path: Path, head: str, outside: int) -> None:
    (tmp_path / "index.html").write_text(f"<html><head>{head}</head><body>x</body></html>")
    assert len(external_loads(tmp_path)) == outside


def test_external_load_checker_reads_stylesheets(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text("<html><body>x</body></html>")
    (tmp_path / "_static").mkdir()
    (tmp_path / "_static" / "theme.css").write_text("@font-face { src: url('fonts/a.woff2'); }")
    assert external_loads(tmp_path) == []
    (tmp_path / "_static" / "theme.css").write_text("@font-face { src: url('https://fonts.gstatic.com/a.woff2'); }")
    assert external_loads(tmp_path) == [
        "_static/theme.css: loads https://fonts.gstatic.com/a.woff2 from outside the site"]


def test_link_checker_command_fails_on_a_cdn_script(tmp_path: Path) -> None:
    import subprocess

    script = Path(__file__).resolve().parents[2] / "docs" / "_ext" / "check_links.py"
    (tmp_path / "index.html").write_text('<html><head><script src="_static/a.js"></script></head></html>')
    (tmp_path / "_static").mkdir()
    (tmp_path / "_static" / "a.js").write_text("")
    ok = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, check=False)
    assert ok.returncode == 0, ok.stderr
    (tmp_path / "index.html").write_text('<html><head><script src="https://cdn.example.org/m.js"></script></head></html>')
    bad = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, check=False)
    assert bad.returncode == 1 and "https://cdn.example.org/m.js" in bad.stderr


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


# --- the offline math renderer (docs/_ext/offline_math.py) -------------------------------------------------------


def test_math_becomes_mathml_without_latex_left() -> None:
    from offline_math import to_mathml

    mathml, leftovers = to_mathml(r"\sigma = \frac{\Delta_2}{\varepsilon}\sqrt{2\ln(1.25/\delta)}", display=False)
    assert leftovers == []
    assert mathml.startswith("<math") and "\\" not in mathml
    assert "<mfrac>" in mathml and "<msqrt>" in mathml and "&#x003C3;" in mathml  # σ


def test_aligned_display_becomes_a_table_of_rows() -> None:
    from offline_math import to_mathml

    mathml, leftovers = to_mathml(r"\begin{aligned} a &= b + c \\ d &= \arg\min_x f(x) \end{aligned}", display=True)
    assert leftovers == []
    assert mathml.count("<mtr>") == 2 and "&amp;" not in mathml and ">&<" not in mathml
    assert 'style="text-align:right"' in mathml and 'display="block"' in mathml


def test_unknown_command_is_reported_not_shipped() -> None:
    from offline_math import to_mathml

    _, leftovers = to_mathml(r"\frobnicate{x} + \alpha", display=False)
    assert leftovers == [r"\frobnicate"]


def test_letter_styles_become_unicode_mathematical_letters() -> None:
    import html
    import unicodedata

    from offline_math import to_mathml

    mathml, leftovers = to_mathml(r"\mathbb E[X] \in \mathbb{R}, \mathcal Q, \mathbf{1}", display=False)
    assert leftovers == [] and "mathvariant" not in mathml  # Chromium (MathML Core) ignores other variants
    for name in ("MATHEMATICAL DOUBLE-STRUCK CAPITAL E", "DOUBLE-STRUCK CAPITAL R", "MATHEMATICAL SCRIPT CAPITAL Q",
                 "MATHEMATICAL BOLD DIGIT ONE"):
        assert unicodedata.lookup(name) in html.unescape(mathml)


@pytest.mark.parametrize(("latex", "chars"), [(r"\Big\lVert x \Big\rVert^2", "\u2016\u2016"),
                                              (r"\Big\| x \Big\|", "\u2016\u2016"),
                                              (r"\bigl\lvert x \bigr\rvert", "||"), (r"\Big\{ 1 \Big\}", "{}")])
def test_sized_delimiters_become_characters(latex: str, chars: str) -> None:
    import html

    from offline_math import to_mathml

    mathml, leftovers = to_mathml(latex, display=False)
    assert leftovers == [] and "\\" not in mathml
    delimiters = re.findall(r"<mo [^>]*maxsize[^>]*>([^<]*)</mo>", html.unescape(mathml))
    assert "".join(delimiters) == chars


def test_a_raw_delimiter_would_be_reported() -> None:
    from offline_math import _LEFTOVER

    assert _LEFTOVER.findall('<mo maxsize="1.6em">\\|</mo><mo>\\lVert</mo>') == ["\\|", "\\lVert"]


def test_security_events_section_moves_into_notes_too() -> None:
    doc = ["Summary.", "", "Security events", "---------------", "A conflict is logged.", "",
           "Privacy guarantee", "-----------------", "ε-DP."]
    out = move_privacy_section(doc)
    assert [line for line in out if line in ("Security events", "Privacy guarantee")] == []
    assert out.count("Notes") == 1 and ".. admonition:: Security events" in out
    assert ".. admonition:: Privacy guarantee" in out and "   A conflict is logged." in out

"""Every public function and class in the API reference carries a runnable example.

The names are the ones the reference documents: the same ``documented_names()`` the Sphinx extension
``docs/_ext/apipages.py`` uses to write the pages (each package's ``__all__`` and each public module's).
A name passes when its docstring has a numpydoc "Examples" section with doctest lines that the suite's
``--doctest-modules`` run actually executes
(the object is defined in a collected ``dpcloak`` module, so ``doctest`` finds its docstring there),
or when it is listed in ``GALLERY`` and the named gallery/tutorial script really calls it (checked on
the script's syntax tree; sphinx-gallery executes the script at build time).
"""

from __future__ import annotations

import ast
import doctest
import importlib
import inspect
import sys
import types
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs" / "_ext"))

from apipages import documented_names

ROOT = Path(__file__).resolve().parents[2]

# Public names demonstrated by an executed gallery or tutorial script instead of a doctest:
# name -> script path relative to the repository root. Keep this short; a doctest is preferred.
GALLERY: dict[str, str] = {}
# The gallery sources (``sphinx_gallery_conf["examples_dirs"]`` in docs/conf.py) and the file prefix it executes.
GALLERY_DIRS = ("examples", "tutorials_src")
GALLERY_PREFIX = "plot_"

# Module paths that pytest's doctest collection skips (pyproject ``--ignore``); a docstring there never runs.
NOT_COLLECTED = ("dpcloak.service.migrations",)


DOCUMENTED = [(m, n, obj) for m, n, obj in documented_names() if inspect.isclass(obj) or inspect.isroutine(obj)]


def _is_header(lines: list[str], i: int) -> bool:
    return i + 1 < len(lines) and bool(lines[i].strip()) and set(lines[i + 1].strip()) == {"-"}


def examples_section(doc: str) -> list[str]:
    """The lines of the numpydoc "Examples" section of ``doc`` (cleaned with ``inspect.cleandoc``)."""
    lines = inspect.cleandoc(doc).splitlines()
    start = next((i for i in range(len(lines)) if _is_header(lines, i) and lines[i].strip() == "Examples"), None)
    if start is None:
        return []
    end = next((i for i in range(start + 2, len(lines)) if _is_header(lines, i)), len(lines))
    return lines[start + 2 : end]


@cache
def _module_doctests(module_name: str) -> dict[str, doctest.DocTest]:
    module = importlib.import_module(module_name)
    return {t.name: t for t in doctest.DocTestFinder().find(module, module_name)}


def collected(module_name: str) -> bool:
    """Whether pytest's ``--doctest-modules`` run over ``src/dpcloak`` collects this module's docstrings."""
    return module_name.startswith("dpcloak.") and not module_name.startswith(NOT_COLLECTED)


def executed_examples(obj: Any, is_collected: Callable[[str], bool] = collected) -> list[doctest.Example]:
    """The doctest examples of ``obj``'s own docstring that the doctest run executes (not skipped)."""
    module_name = obj.__module__
    if not is_collected(module_name):
        return []
    test = _module_doctests(module_name).get(f"{module_name}.{obj.__qualname__}")
    if test is None:
        return []
    return [ex for ex in test.examples if not ex.options.get(doctest.SKIP, False)]


def example_problem(obj: Any, is_collected: Callable[[str], bool] = collected) -> str | None:
    """Why ``obj`` lacks a runnable example in the reference, or ``None`` when it has one."""
    section = examples_section(inspect.getdoc(obj) or "")
    if not any(line.lstrip().startswith(">>>") for line in section):
        return "docstring has no numpydoc 'Examples' section with a '>>>' line"
    executed = executed_examples(obj, is_collected)
    if not executed:
        return "no doctest example of its docstring is executed by --doctest-modules"
    if not any(ex.want.strip() for ex in executed):
        return "the examples never check an output"
    return None


@cache
def called_names(script: Path) -> frozenset[str]:
    """Names the script calls, as ``name(...)`` or ``something.name(...)``."""
    tree = ast.parse(script.read_text(), filename=str(script))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name):
                names.add(node.func.id)
            elif isinstance(node.func, ast.Attribute):
                names.add(node.func.attr)
    return frozenset(names)


def test_reference_documents_public_names() -> None:
    assert len(DOCUMENTED) > 100  # the enumeration really found the packages


@pytest.mark.parametrize(("package", "name", "obj"), DOCUMENTED, ids=[f"{p}.{n}" for p, n, _ in DOCUMENTED])
def test_public_name_has_runnable_example(package: str, name: str, obj: Any) -> None:
    if name in GALLERY:
        script = Path(GALLERY[name])
        assert script.parts[0] in GALLERY_DIRS and script.name.startswith(GALLERY_PREFIX), (
            f"{script} is not a script sphinx-gallery executes ({'/'.join(GALLERY_DIRS)}, {GALLERY_PREFIX}*.py)"
        )
        assert name in called_names(ROOT / script), f"{package}.{name}: gallery script {script} never calls it"
        return
    problem = example_problem(obj)
    assert problem is None, f"{package}.{name}: {problem}"


def test_gallery_entries_are_public() -> None:
    public = {name for _, name, _ in DOCUMENTED}
    assert set(GALLERY) <= public


def test_gallery_dirs_match_the_sphinx_configuration() -> None:
    conf = (ROOT / "docs" / "conf.py").read_text()
    for folder in GALLERY_DIRS:
        assert f'"{folder}"' in conf
    assert f'"filename_pattern": r"/{GALLERY_PREFIX}"' in conf


def test_called_names_sees_calls_not_mentions(tmp_path: Path) -> None:
    script = tmp_path / "plot_demo.py"
    script.write_text("from dpcloak import heatmaps\nimport numpy as np\n"
                      "x = heatmaps.render(np.zeros((2, 2)), sigma=0.0)\nf = heatmaps.snap\n# plot_heatmaps()\n")
    names = called_names(script)
    assert {"render", "zeros"} <= names
    assert "snap" not in names and "plot_heatmaps" not in names


def test_section_parser_sees_only_the_examples_section() -> None:
    doc = ("Summary.\n\nNotes\n-----\n>>> 1\n\nExamples\n--------\nText.\n\n>>> 1 + 1\n2\n\n"
           "References\n----------\n>>> x")
    assert examples_section(doc) == ["Text.", "", ">>> 1 + 1", "2", ""]
    assert examples_section("Summary only.") == []


# Docstrings for the checker's own test, in a module of their own (so the doctest run does not collect them).
FIXTURES = '''
def no_section():
    """Summary only."""

def elsewhere():
    """Summary.

    Notes
    -----
    >>> 1 + 1
    2
    """

def skipped_only():
    """Summary.

    Examples
    --------
    >>> 1 + 1  # doctest: +SKIP
    2
    """

def no_output():
    """Summary.

    Examples
    --------
    >>> x = 1 + 1
    """

def good():
    """Summary.

    Examples
    --------
    >>> 1 + 1
    2
    """
'''


@pytest.fixture(scope="module")
def fixtures() -> Iterator[types.ModuleType]:
    module = types.ModuleType("dpcloak_docex_fixtures")
    exec(compile(FIXTURES, module.__name__, "exec"), module.__dict__)
    sys.modules[module.__name__] = module
    yield module
    del sys.modules[module.__name__]


@pytest.mark.parametrize(
    ("name", "problem"),
    [("no_section", "no numpydoc"), ("elsewhere", "no numpydoc"), ("skipped_only", "is executed"),
     ("no_output", "never check"), ("good", None)],
)
def test_example_problem_both_sides(fixtures: types.ModuleType, name: str, problem: str | None) -> None:
    found = example_problem(getattr(fixtures, name), is_collected=lambda module_name: module_name == fixtures.__name__)
    assert (found is None) if problem is None else (problem in (found or ""))


def test_examples_outside_the_doctest_run_do_not_count(fixtures: types.ModuleType) -> None:
    assert example_problem(fixtures.good) == "no doctest example of its docstring is executed by --doctest-modules"
    assert not collected("dpcloak.service.migrations.env") and collected("dpcloak.privacy.mechanisms")

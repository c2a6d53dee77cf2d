"""The API reference covers every public name once: package ``__all__`` and public modules' ``__all__``.

The public modules are enumerated here independently of ``docs/_ext/apipages.py`` (``pkgutil.walk_packages``
over the installed ``dpcloak``), so a module that the extension's own walk missed fails here.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import sys
from collections import Counter
from pathlib import Path

import dpcloak

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs" / "_ext"))

from apipages import NOT_API, documented_names, reference


def _public_module_names() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(dpcloak.__path__, "dpcloak.", onerror=lambda name: None):
        if any(part.startswith("_") for part in info.name.split(".")) or info.name.startswith(NOT_API):
            continue
        names.append(info.name)
    return names


def test_every_public_module_name_is_documented() -> None:
    shown = {(name, id(obj)) for _, name, obj in documented_names()}
    pages = {m for _, _, ps in reference() for m, _ in ps}
    missing = []
    for module_name in ["dpcloak", *_public_module_names()]:
        module = importlib.import_module(module_name)
        for n in getattr(module, "__all__", []):
            obj = getattr(module, n)
            if inspect.ismodule(obj):  # a submodule exported by name is documented by its own page
                missing += [] if obj.__name__ in pages else [obj.__name__]
            elif (n, id(obj)) not in shown:
                missing.append(f"{module_name}.{n}")
    assert missing == []


def test_module_pages_do_not_repeat_names() -> None:
    package_pages = {p for p, _, _ in reference()}
    module_entries = [(n, id(o)) for m, n, o in documented_names() if m not in package_pages]
    package_entries = {(n, id(o)) for m, n, o in documented_names() if m in package_pages}
    assert [k for k, count in Counter(module_entries).items() if count > 1] == []
    assert not set(module_entries) & package_entries
    assert len(module_entries) > 100  # the module pages really add names


def test_cli_and_private_modules_are_not_api() -> None:
    pages = {m for _, _, ps in reference() for m, _ in ps}
    assert not any(m.startswith(NOT_API) or any(p.startswith("_") for p in m.split(".")) for m in pages)
    assert {"dpcloak.errors", "dpcloak.privacy.sensitivity", "dpcloak.metrics.heatmap"} <= pages


def test_index_gives_every_page_a_one_line_summary() -> None:
    from apipages import index_page

    packages = reference()
    text = index_page(packages)
    rows = dict(re.findall(r"   \* - :doc:`([\w.]+) <[\w.]+>`\n     - (.+)", text))
    pages = [m for _, _, ps in packages for m, _ in ps]
    assert sorted(rows) == sorted(pages)
    for page in pages:  # the module docstring's first paragraph, read here without the extension
        first = " ".join((importlib.import_module(page).__doc__ or "").strip().split("\n\n")[0].split())
        assert rows[page] == first and first, page


def test_page_titles_are_short_dotted_names() -> None:
    from apipages import _page

    text = _page("dpcloak.privacy.fisher.information", ["FisherNoise"], [], package=False)
    lines = text.splitlines()
    title = lines[lines.index(".. rst-class:: api-page") + 2]
    assert title == "dpcloak.privacy.fisher.information" and set(lines[lines.index(title) + 1]) == {"="}
    template = Path(__file__).resolve().parents[2] / "docs" / "_templates" / "autosummary" / "class.rst"
    assert template.read_text().splitlines()[0] == "{{ objname | escape | underline }}"


def test_summaries_do_not_stop_at_abbreviations() -> None:
    from apipages import extend_summary_abbreviations
    from docutils.frontend import get_default_settings
    from docutils.parsers.rst import Parser
    from sphinx.ext.autosummary import extract_summary

    from dpcloak.privacy import GaussianMechanism
    from dpcloak.privacy.fisher import cramer_rao_bound

    settings = get_default_settings(Parser)
    doc = inspect.getdoc(GaussianMechanism).splitlines()  # type: ignore[union-attr]
    extend_summary_abbreviations()
    summary = extract_summary(doc, settings)
    assert summary.startswith("Add i.i.d.") and "noise to each coordinate" in summary
    assert extract_summary(inspect.getdoc(cramer_rao_bound).splitlines(), settings) != "Farokhi & Sandberg, Prop."  # type: ignore[union-attr]
    extend_summary_abbreviations()  # idempotent
    from sphinx.ext import autosummary

    assert autosummary.WELL_KNOWN_ABBREVIATIONS.count("i.i.d.") == 1

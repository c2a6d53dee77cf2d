"""Write the API reference: one page per public package, and one per public module under it.

A package page lists every name in the package's ``__all__``. Under it, each public module (a submodule
whose dotted path has no part starting with ``_``) gets a page listing the names in the *module's*
``__all__`` that no package page already shows (a name re-exported by a package appears once, on the
package page). ``documented_names()`` is the single list of what the reference shows; the docs
test ``tests/docs/test_public_examples.py`` checks that same list for runnable examples.

The pages are generated at build time (``config-inited``), so a public name added to an ``__all__``
appears in the reference without anyone editing the docs, and a name removed disappears.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import shutil
import types
from pathlib import Path
from typing import Any

PACKAGES = (
    ("dpcloak", "Errors and shared types"),
    ("dpcloak.domains", "Domains"),
    ("dpcloak.models", "Forward models"),
    ("dpcloak.privacy", "Privacy"),
    ("dpcloak.privacy.fisher", "Optimal bounded noise"),
    ("dpcloak.recovery", "Recovery"),
    ("dpcloak.metrics", "Metrics"),
    ("dpcloak.heatmaps", "Private heatmaps"),
    ("dpcloak.audit", "Auditing"),
    ("dpcloak.experiments", "Experiments"),
    ("dpcloak.geo", "Geography"),
    ("dpcloak.sensors", "Sensor networks"),
    ("dpcloak.service", "The deployed system"),
)

# Not Python API: the command line (its reference is ``python -m dpcloak --help``; it is a thin shell over
# the library), the ``python -m dpcloak`` entry point, and the Alembic migration scripts of the service.
NOT_API = ("dpcloak.cli", "dpcloak.__main__", "dpcloak.service.migrations")


def _exported(module_name: str) -> list[str]:
    try:
        module = importlib.import_module(module_name)
    except ImportError:  # an optional extra is missing in this checkout
        return []
    return sorted(getattr(module, "__all__", []))


def public_modules(package: str) -> list[str]:
    """The public modules documented under ``package``: submodules, recursively, that are not private
    (no ``_`` part), not a documented package of their own, and not in ``NOT_API``."""
    packages = {name for name, _ in PACKAGES}
    found = []
    for info in pkgutil.iter_modules(importlib.import_module(package).__path__, package + "."):
        name = info.name
        if name.rsplit(".", 1)[1].startswith("_") or name.startswith(NOT_API) or name in packages:
            continue
        found.append(name)
        if info.ispkg:
            found += public_modules(name)
    return sorted(found)


def _key(obj: Any, name: str) -> tuple[str, int]:
    return (name, id(obj))


def reference() -> list[tuple[str, str, list[tuple[str, list[str]]]]]:
    """Each documented package with its title and its pages: ``[(module, names), ...]``.

    The package's own page comes first and lists its whole ``__all__``. Then come its public modules'
    pages, each listing the names of the module's ``__all__`` that no package page and no earlier module
    page shows (an object re-exported under the same name is shown once); a module with none gets no page.
    """
    packages = []
    for package, title in PACKAGES:
        try:
            module = importlib.import_module(package)
        except ImportError:
            continue
        packages.append((package, title, module))
    seen = {_key(getattr(module, n), n) for _, _, module in packages for n in _exported(module.__name__)}
    out = []
    for package, title, _module in packages:
        own = importlib.import_module(package)
        pages = [(package, [n for n in _exported(package) if not inspect.ismodule(getattr(own, n))])]
        for module_name in public_modules(package):
            names = _exported(module_name)
            module = importlib.import_module(module_name)
            fresh = [n for n in names if _key(getattr(module, n), n) not in seen]
            seen.update(_key(getattr(module, n), n) for n in names)
            if fresh:
                pages.append((module_name, fresh))
        out.append((package, title, pages))
    return out


def documented_names() -> list[tuple[str, str, Any]]:
    """Every name the reference shows, once: ``(module whose page shows it, name, object)``."""
    return [
        (module_name, name, getattr(importlib.import_module(module_name), name))
        for _package, _title, pages in reference()
        for module_name, names in pages
        for name in names
    ]


def _kind(obj: Any) -> str:
    if inspect.isclass(obj):
        return "class"
    if inspect.isroutine(obj):
        return "function"
    return "data" if _autodocumentable(obj) else "other"


def _autodocumentable(obj: Any) -> bool:
    """Data that autodoc renders well: builtin values and dpcloak's own objects. Instances of third-party
    classes (autodoc would show their class's docstring) and typing aliases are listed without autodoc."""
    kind = type(obj)
    if isinstance(obj, types.GenericAlias) or kind.__module__ == "typing":
        return False
    return kind.__module__ == "builtins" or kind.__module__.startswith("dpcloak")


def summary(module_name: str) -> str:
    """The first paragraph of the module's docstring, on one line: its one-line summary in the reference."""
    doc = inspect.getdoc(importlib.import_module(module_name)) or ""
    return " ".join(doc.strip().split("\n\n")[0].split())


def _summary_table(rows: list[tuple[str, str]]) -> list[str]:
    """A two-column table of ``(page, summary)``: a link to each API page, and what is on it."""
    lines = [".. list-table::", "   :widths: 35 65", "   :class: api-summary", ""]
    for page, text in rows:
        lines += [f"   * - :doc:`{page} <{page}>`", f"     - {text}"]
    return [*lines, ""]


def _page(module_name: str, names: list[str], children: list[str], *, package: bool) -> str:
    # Short titles (the dotted name, no markup) so that page titles, sidebar entries and previous/next
    # links fit; the class lets the stylesheet size the heading for the longest dotted names.
    lines = [".. rst-class:: api-page", "", module_name, "=" * len(module_name), ""]
    if package:
        lines += [f".. automodule:: {module_name}", "   :no-members:", ""]
    else:
        # The module docstring stays in the source (it is often plain-text mathematics, not reST); the page
        # shows its summary, names the module and lists its public names. A package name that shadows the
        # module (a function ``bpdn`` in ``dpcloak.recovery`` and the module ``dpcloak.recovery.bpdn``) keeps
        # the index entry.
        lines += [f".. py:module:: {module_name}"]
        if _shadowed(module_name):
            lines += ["   :no-index:"]
        lines += ["", summary(module_name), ""]
        lines += [f"Public names of the module ``{module_name}`` that its package does not re-export.", ""]
    lines += [f".. currentmodule:: {module_name}", ""]
    module = importlib.import_module(module_name)
    for kind in ("class", "function", "data"):
        group = [n for n in names if _kind(getattr(module, n)) == kind]
        if not group:
            continue
        heading = {"class": "Classes", "function": "Functions", "data": "Constants"}[kind]
        lines += [heading, "-" * len(heading), "", ".. autosummary::", "   :toctree: generated"]
        lines += ["   :nosignatures:", ""]
        lines += [f"   {n}" for n in group] + [""]
    other = [n for n in names if _kind(getattr(module, n)) == "other"]
    if other:
        lines += ["Types and objects", "-----------------", ""]
        for n in other:
            obj = getattr(module, n)
            what = f"``{obj!r}``" if isinstance(obj, types.GenericAlias) or type(obj).__module__ == "typing" else (
                f"a ``{type(obj).__module__}.{type(obj).__qualname__}``")
            lines += [f".. py:data:: {n}", "", f"   {what}", ""]
    if children:
        lines += ["Modules", "-------", "", *_summary_table([(c, summary(c)) for c in children])]
        lines += [".. toctree::", "   :hidden:", ""]
        lines += [f"   {child.rsplit('.', 1)[1]} <{child}>" for child in children] + [""]
    return "\n".join(lines)


def index_page(packages: list[tuple[str, str, list[tuple[str, list[str]]]]]) -> str:
    """``api/index.rst``: each package under a short heading, with its modules, each with a one-line summary."""
    lines = ["API reference", "=============", ""]
    lines += ["Every public name: each package's ``__all__``, then each public module's ``__all__``. Each package",
              "and module below links to its page, which lists its classes, functions and constants, each with a",
              "one-line summary; ``from dpcloak.<package> import <name>`` works for every name on a package page.", ""]
    for _package, title, pages in packages:
        lines += [title, "-" * len(title), "", *_summary_table([(m, summary(m)) for m, _ in pages])]
    lines += [".. toctree::", "   :hidden:", ""]
    lines += [f"   {package} <{package}>" for package, _, _ in packages]
    return "\n".join(lines) + "\n"


def _shadowed(module_name: str) -> bool:
    parent, _, name = module_name.rpartition(".")
    return not inspect.ismodule(getattr(importlib.import_module(parent), name, None))


def _write(page: Path, text: str) -> None:
    if not page.exists() or page.read_text() != text:
        page.write_text(text)


def write_pages(app: Any, config: Any) -> None:
    """Sphinx hook (``config-inited``, before sources are found): write ``api/<module>.rst``, ``api/index.rst``."""
    out = Path(app.srcdir) / "api"
    out.mkdir(exist_ok=True)
    shutil.rmtree(out / "generated", ignore_errors=True)  # autosummary rewrites the stubs; none may go stale
    written = {"index.rst"}
    packages = reference()
    for package, _title, pages in packages:
        (_, names), *modules = pages
        _write(out / f"{package}.rst", _page(package, names, [m for m, _ in modules], package=True))
        written |= {f"{m}.rst" for m, _ in pages}
        for module_name, module_names in modules:
            _write(out / f"{module_name}.rst", _page(module_name, module_names, [], package=False))
    _write(out / "index.rst", index_page(packages))
    for stale in out.glob("*.rst"):
        if stale.name not in written:
            stale.unlink()


def third_party_docstring(app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    """A method a dpcloak class inherits from a third-party base (e.g. ``FastAPI.__init__`` on
    ``CollectorApp``) is listed with a pointer to its origin, not with the base's own docstring (not
    written in this project's reStructuredText and not ours to document)."""
    module = getattr(obj, "__module__", None) or ""
    if what == "method" and name.startswith("dpcloak.") and module and module.split(".")[0] != "dpcloak":
        lines[:] = [f"Inherited from ``{module}.{getattr(obj, '__qualname__', name.rsplit('.', 1)[-1])}``."]


# Abbreviations that end no sentence in dpcloak's docstrings; autosummary's one-line summaries cut at the
# first ". " not after one of its own few ("Add i.i.d." was GaussianMechanism's summary).
ABBREVIATIONS = ("i.i.d.", "Prop.", "Cor.", "Thm.", "Fig.", "Eq.", "cf.", "resp.")


def extend_summary_abbreviations() -> None:
    """Teach autosummary's summary extraction the abbreviations above (it reads a module-level tuple)."""
    from sphinx.ext import autosummary

    known = autosummary.WELL_KNOWN_ABBREVIATIONS
    autosummary.WELL_KNOWN_ABBREVIATIONS = known + tuple(a for a in ABBREVIATIONS if a not in known)


def setup(app: Any) -> dict[str, bool]:
    extend_summary_abbreviations()
    app.connect("config-inited", write_pages)
    app.connect("autodoc-process-docstring", third_party_docstring, priority=50)  # before numpydoc (500)
    return {"parallel_read_safe": True}

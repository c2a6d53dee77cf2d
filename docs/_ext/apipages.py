"""Write one API reference page per public package, listing every name in its ``__all__``.

The pages are generated at build time (``config-inited``), so a public name added to a package's
``__all__`` appears in the reference without anyone editing the docs, and a name removed disappears.
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path
from typing import Any

PACKAGES = (
    ("dpcloak.domains", "Domains: where sources live"),
    ("dpcloak.models", "Forward models"),
    ("dpcloak.privacy", "Privacy: sensitivity, mechanisms, privatizers, accounting"),
    ("dpcloak.privacy.fisher", "Optimal bounded noise (Fisher information)"),
    ("dpcloak.recovery", "Recovery"),
    ("dpcloak.metrics", "Metrics"),
    ("dpcloak.heatmaps", "Private heatmaps"),
    ("dpcloak.audit", "Auditing privacy claims"),
    ("dpcloak.experiments", "Experiments and reproductions"),
    ("dpcloak.geo", "Geography"),
    ("dpcloak.sensors", "Sensor networks"),
    ("dpcloak.service", "The deployed system"),
)


def public_packages() -> list[tuple[str, str, list[str]]]:
    """The documented packages that exist in this checkout, with their sorted public names."""
    found = []
    for name, title in PACKAGES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        found.append((name, title, sorted(getattr(module, "__all__", []))))
    return found


def _kind(module_name: str, name: str) -> str:
    obj: Any = getattr(importlib.import_module(module_name), name)
    return "class" if inspect.isclass(obj) else "function" if callable(obj) else "data"


def write_pages(app: Any, config: Any) -> None:
    """Sphinx hook (``config-inited``, before sources are found): write ``api/<package>.rst``, ``api/index.rst``."""
    out = Path(app.srcdir) / "api"
    out.mkdir(exist_ok=True)
    index = ["API reference", "=============", "", "Every public name of each package, from its ``__all__``."]
    index += ["", ".. toctree::", "   :maxdepth: 1", ""]
    for name, title, names in public_packages():
        index.append(f"   {name}")
        lines = [title, "=" * len(title), "", f".. automodule:: {name}", "   :no-members:", ""]
        lines += [f".. currentmodule:: {name}", ""]
        for kind in ("class", "function", "data"):
            group = [n for n in names if _kind(name, n) == kind]
            if not group:
                continue
            heading = {"class": "Classes", "function": "Functions", "data": "Constants"}[kind]
            lines += [heading, "-" * len(heading), "", ".. autosummary::", "   :toctree: generated"]
            lines += ["   :nosignatures:", ""]
            lines += [f"   {n}" for n in group] + [""]
        text = "\n".join(lines)
        page = out / f"{name}.rst"
        if not page.exists() or page.read_text() != text:
            page.write_text(text)
    (out / "index.rst").write_text("\n".join(index) + "\n")


def setup(app: Any) -> dict[str, bool]:
    app.connect("config-inited", write_pages)
    return {"parallel_read_safe": True}

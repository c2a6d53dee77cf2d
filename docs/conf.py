"""Sphinx configuration of the dpcloak documentation site (built by ``.ci/run`` with warnings as errors)."""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE / "_ext"))
os.environ.setdefault("MPLBACKEND", "Agg")
# numpydoc re-parses raw docstrings for signatures and warns about the custom sections; the rendered text
# keeps them (the privacy_sections extension moves them into Notes before numpydoc formats the docstring).
warnings.filterwarnings("ignore", message="Unknown section (Privacy Guarantee|Security Events)", category=UserWarning)

from dpcloak import __version__  # noqa: E402

project = "dpcloak"
author = "dpcloak developers"
copyright = "2026, dpcloak developers"
version = release = __version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "myst_parser",
    "sphinx_copybutton",
    "apipages",
    "privacy_sections",
    "reproduce_pages",
    "offline_math",
]
# The site works offline: mathematics is MathML written at build time (offline_math), not MathJax from a CDN.
html_math_renderer = "mathml"

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
_GENERATED = [f"{folder}/*.{ext}" for folder in ("gallery", "tutorials") for ext in ("ipynb", "py", "md5", "zip")]
exclude_patterns = ["_build", "_cache", *_GENERATED]
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

# Object pages are titled by the object's name (the page shows its full path): sidebar entries and
# previous/next links stay short (docs/_templates/autosummary).
templates_path = ["_templates"]
autosummary_generate = True
autodoc_default_options = {"members": True, "inherited-members": False, "show-inheritance": True}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()

intersphinx_mapping: dict[str, tuple[str, None]] = {}

sphinx_gallery_conf = {
    "examples_dirs": [str(HERE.parent / "examples"), str(HERE.parent / "tutorials_src")],
    "gallery_dirs": ["gallery", "tutorials"],
    "filename_pattern": r"/plot_",
    "abort_on_example_error": True,
    "download_all_examples": False,
    "remove_config_comments": True,
    "matplotlib_animations": False,
    "within_subsection_order": "FileNameSortKey",
    # Its timing pages load jQuery and DataTables from CDNs; the site loads nothing from outside itself.
    "write_computation_times": False,
}

html_theme = "pydata_sphinx_theme"
html_title = f"dpcloak {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    # The navigation bar holds this many top-level pages on one line; the rest are under "More".
    "header_links_before_dropdown": 6,
    # The search as an icon (Ctrl+K still opens it), so the header stays one row at 1400 px.
    "navbar_persistent": ["search-button"],
}
html_static_path = ["_static"]
html_css_files = ["dpcloak.css"]
nitpicky = False

"""Check the built HTML site: every internal link resolves, and nothing is loaded from outside it.

Each relative ``href``/``src`` must name a file that exists, and each ``#fragment`` an ``id`` on the
target page. External links are not followed (the build machine has no network), nor the theme's
template fragments under ``_static``. The site must also work offline (an air-gapped network): no page
nor stylesheet may load a script, stylesheet, font, image or frame from another host (an ``http(s)://``
or protocol-relative ``//`` address in a ``src``, a ``<link href>`` or a CSS ``url()``/``@import``).
Plain ``<a href>`` links to other sites are fine: following one is the reader's choice.
Run as ``python docs/_ext/check_links.py docs/_build/html``.
"""

from __future__ import annotations

import functools
import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()
        self.loads: list[str] = []  # what the browser fetches on its own when showing the page

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for key, value in attrs:
            if value is None:
                continue
            if key == "id":
                self.ids.add(value)
            elif key in ("href", "src") and tag in ("a", "img", "link", "script"):
                self.links.append(value)
            if (key == "src" or (key == "href" and tag == "link")) and tag != "a":
                self.loads.append(value)
            elif key == "srcset" or (key == "data" and tag == "object"):
                self.loads += [part.split()[0] for part in value.split(",") if part.split()]
            elif key == "style":
                self.loads += _css_urls(value)

    def handle_data(self, data: str) -> None:
        if self.lasttag == "style":
            self.loads += _css_urls(data)


_CSS_URL = re.compile(r"""url\(\s*['"]?([^'")\s]+)|@import\s+['"]([^'"]+)""", re.I)


def _css_urls(css: str) -> list[str]:
    return [a or b for a, b in _CSS_URL.findall(css)]


def _external(address: str) -> bool:
    parts = urlsplit(address.strip())
    return bool(parts.netloc) or parts.scheme.lower() in ("http", "https", "ftp")


def external_loads(root: Path) -> list[str]:
    """Every resource a page or stylesheet under ``root`` would fetch from another host, as readable lines."""
    problems = []
    for page in sorted(root.rglob("*.html")):
        parser = _parse(page)
        problems += [f"{page.relative_to(root)}: loads {url} from outside the site" for url in parser.loads
                     if _external(url)]
    for sheet in sorted(root.rglob("*.css")):
        urls = _css_urls(sheet.read_text(encoding="utf-8", errors="replace"))
        problems += [f"{sheet.relative_to(root)}: loads {url} from outside the site" for url in urls if _external(url)]
    return problems


@functools.cache  # each page is parsed once for both checks (MathML makes pages tag-heavy)
def _parse(page: Path) -> _Links:
    parser = _Links()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


def broken_links(root: Path) -> list[str]:
    """Every internal link under ``root`` whose file or fragment does not exist, as readable lines."""
    parsed = {page: _parse(page) for page in root.rglob("*.html") if "_static" not in page.relative_to(root).parts}
    problems = []
    for page, links in parsed.items():
        for link in links.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("mailto:", "javascript:", "data:")):
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                problems.append(f"{page.relative_to(root)}: missing file {link}")
            elif parts.fragment and target.suffix == ".html":
                ids = parsed[target].ids if target in parsed else _parse(target).ids
                if parts.fragment not in ids:
                    problems.append(f"{page.relative_to(root)}: missing anchor {link}")
    return problems


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/_build/html").resolve()
    if not (root / "index.html").exists():
        sys.stderr.write(f"no built site at {root} (index.html missing)\n")
        return 2
    problems = broken_links(root)
    outside = external_loads(root)
    for line in problems + outside:
        sys.stderr.write(line + "\n")
    sys.stdout.write(f"internal links: {len(problems)} broken; loaded from outside the site: {len(outside)}\n")
    return 1 if problems or outside else 0


if __name__ == "__main__":
    raise SystemExit(main())

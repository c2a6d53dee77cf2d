"""Check every internal link of the built HTML site.

Each relative ``href``/``src`` must name a file that exists, and each ``#fragment`` an ``id`` on the
target page. External links are not followed (the build machine has no network), nor the theme's
template fragments under ``_static``. Run as ``python docs/_ext/check_links.py docs/_build/html``.
"""

from __future__ import annotations

import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for key, value in attrs:
            if value is None:
                continue
            if key == "id":
                self.ids.add(value)
            elif key in ("href", "src") and tag in ("a", "img", "link", "script"):
                self.links.append(value)


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
    for line in problems:
        sys.stderr.write(line + "\n")
    sys.stdout.write(f"internal links: {len(problems)} broken\n")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Render the site's mathematics to MathML at build time, so pages need no script (no MathJax, no CDN).

Sphinx hands every ``math`` and ``math_block`` node to the HTML math renderer this extension registers
(``html_math_renderer = "mathml"`` in ``conf.py``). The LaTeX is converted by ``latex2mathml`` and written
into the page as ``<math>``, which browsers render natively (MathML Core). Constructs the converter does
not know are rewritten first (``aligned``/``split`` become ``array``; a few operator names); anything
still unconverted (a ``\\command`` left in the output) is a build warning, so a ``-W`` build fails rather
than ship raw LaTeX. A section title with math shows the same MathML in the page outline.
"""

from __future__ import annotations

import html
import re
import unicodedata
from typing import Any

from docutils import nodes
from latex2mathml.converter import convert
from sphinx.util import logging

logger = logging.getLogger(__name__)

# Operator names latex2mathml leaves as raw commands, as \operatorname{...}.
_OPERATORS = ("arg", "sgn", "diag", "rank", "Var", "Cov", "supp", "polylog")
# Multi-line environments it does not lay out, as an array with alternating right/left columns.
_ALIGN_ENVS = ("aligned", "align", "align*", "split", "gather", "gathered", "eqnarray")
_LEFTOVER = re.compile(r">\s*(\\[A-Za-z]+|\\[^A-Za-z\s<])")
# Delimiters after a size command (\Big\lVert, \bigl\{) are left as LaTeX by latex2mathml: their characters.
_DELIMITERS = {"\\lVert": "\u2016", "\\rVert": "\u2016", "\\Vert": "\u2016", "\\|": "\u2016", "\\lvert": "|",
               "\\rvert": "|", "\\vert": "|", "\\{": "{", "\\}": "}", "\\lbrace": "{", "\\rbrace": "}",
               "\\langle": "\u27e8", "\\rangle": "\u27e9", "\\lfloor": "\u230a", "\\rfloor": "\u230b",
               "\\lceil": "\u2308", "\\rceil": "\u2309"}
_SIZED_DELIMITER = re.compile(r"(<mo[^>]*>)(\\[A-Za-z]+|\\[|{}])(</mo>)")
# MathML Full attributes and values that MathML Core (what Chromium renders) ignores, in Core terms.
_CORE_FIXES = (
    (re.compile(r'width="negativethinmathspace"'), 'width="-0.167em"'),
    (re.compile(r'columnalign="(left|right|center)"'), r'columnalign="\1" style="text-align:\1"'),
)


# MathML Core supports mathvariant="normal" only; other variants become Unicode's mathematical letters.
_VARIANTS = {"double-struck": "DOUBLE-STRUCK", "script": "SCRIPT", "fraktur": "FRAKTUR", "bold": "BOLD",
             "italic": "ITALIC", "bold-italic": "BOLD ITALIC", "sans-serif": "SANS-SERIF",
             "bold-sans-serif": "SANS-SERIF BOLD", "monospace": "MONOSPACE", "bold-script": "BOLD SCRIPT",
             "bold-fraktur": "BOLD FRAKTUR"}
# Letters Unicode placed in Letterlike Symbols before the Mathematical Alphanumeric block existed.
_LEGACY = {"FRAKTUR": "BLACK-LETTER", "ITALIC SMALL H": "PLANCK CONSTANT"}
_VARIANT_ELEMENT = re.compile(r'<(mi|mn|mo|mtext)([^>]*?) mathvariant="([a-z-]+)"([^>]*)>([^<]*)</\1>')


def _styled(char: str, variant: str) -> str | None:
    style = _VARIANTS[variant]
    if char.isdigit():
        kind, letter = "DIGIT", unicodedata.name(char).split()[-1]
    elif char.isascii() and char.isalpha():
        kind, letter = ("CAPITAL" if char.isupper() else "SMALL"), char.upper()
    else:
        return None
    for name in (f"MATHEMATICAL {style} {kind} {letter}", f"{style} {kind} {letter}",
                 f"{_LEGACY.get(style, style)} {kind} {letter}", _LEGACY.get(f"{style} {kind} {letter}", "")):
        try:
            return unicodedata.lookup(name)
        except KeyError:
            continue
    return None


def _core_variant(match: re.Match[str]) -> str:
    tag, before, variant, after, text = match.groups()
    if variant == "normal" or variant not in _VARIANTS:
        return match.group(0)
    chars = [_styled(c, variant) for c in html.unescape(text)]
    if any(c is None for c in chars):
        return match.group(0)
    return f"<{tag}{before}{after}>{html.escape(''.join(c or '' for c in chars), quote=False)}</{tag}>"


def _columns(body: str) -> int:
    rows = re.split(r"\\\\", body)
    return max(row.count("&") for row in rows) + 1


def _rewrite(latex: str) -> str:
    """LaTeX that latex2mathml converts completely: alignment environments as arrays, known operators."""
    text = latex.strip()
    for env in _ALIGN_ENVS:
        pattern = re.compile(r"\\begin\{" + re.escape(env) + r"\}(.*?)\\end\{" + re.escape(env) + r"\}", re.S)
        text = pattern.sub(lambda m: _array(m.group(1)), text)
    if r"\\" in text and r"\begin{" not in text:  # bare multi-line display: one row per line
        text = _array(text)
    for name in _OPERATORS:
        text = re.sub(r"\\" + name + r"(?![A-Za-z])", r"\\operatorname{" + name + "}", text)
    return text


def _array(body: str) -> str:
    spec = "".join("r" if i % 2 == 0 else "l" for i in range(_columns(body)))
    return r"\begin{array}{" + spec + "}" + body + r"\end{array}"


def to_mathml(latex: str, *, display: bool) -> tuple[str, list[str]]:
    """The MathML of ``latex`` and the LaTeX commands the converter left unconverted (empty when complete)."""
    out = convert(_rewrite(latex), display="block" if display else "inline")
    out = _SIZED_DELIMITER.sub(lambda m: m.group(1) + _DELIMITERS.get(m.group(2), m.group(2)) + m.group(3), out)
    leftovers = sorted(set(_LEFTOVER.findall(out)))
    for pattern, replacement in _CORE_FIXES:
        out = pattern.sub(replacement, out)
    return _VARIANT_ELEMENT.sub(_core_variant, out), leftovers


def _render(translator: Any, node: nodes.Element, *, display: bool) -> str:
    latex = node.astext()
    try:
        mathml, leftovers = to_mathml(latex, display=display)
    except Exception as exc:  # the converter's own parse errors have no common base class
        logger.warning("math not converted to MathML (%s): %s", exc, latex, location=node)
        return f"<code>{translator.encode(latex)}</code>"
    if leftovers:
        logger.warning("math has LaTeX MathML cannot show (%s): %s", ", ".join(leftovers), latex, location=node)
    return mathml


def visit_math(translator: Any, node: nodes.math) -> None:
    translator.body.append(translator.starttag(node, "span", "", CLASS="math"))
    translator.body.append(_render(translator, node, display=False) + "</span>")
    raise nodes.SkipNode


def visit_math_block(translator: Any, node: nodes.math_block) -> None:
    translator.body.append(translator.starttag(node, "div", CLASS="math"))
    if node.get("number"):
        from sphinx.util.math import get_node_equation_number

        translator.body.append(f'<span class="eqno">({get_node_equation_number(translator, node)})')
        translator.add_permalink_ref(node, "Link to this equation")
        translator.body.append("</span>")
    translator.body.append(_render(translator, node, display=True) + "</div>\n")
    raise nodes.SkipNode


def setup(app: Any) -> dict[str, bool]:
    app.add_html_math_renderer("mathml", (visit_math, None), (visit_math_block, None))
    return {"parallel_read_safe": True}

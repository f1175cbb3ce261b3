"""The period report as a PDF (matplotlib's ``PdfPages``): the sections as text pages, then one page per figure.
Text is embedded as TrueType (``pdf.fonttype: 42``), so it can be selected, searched and extracted."""

from __future__ import annotations

import io
import re
import textwrap
from typing import TYPE_CHECKING, Any

from privacy.report.sections import Section, Table, sections

if TYPE_CHECKING:
    from matplotlib.figure import Figure

A4 = (8.27, 11.69)  # inches
FONT_PT = 7.0
LINE_PT = FONT_PT * 1.4
MARGIN_IN = 0.6
WIDTH_CHARS = 118  # a 7 pt monospace line across the page between the margins


_NUMBER = re.compile(r"^-?[\d.]+$")


def _table(table: Table) -> list[str]:
    """A table as fixed-width lines: numbers right-aligned, words left-aligned."""
    if not table.rows:
        return [f"  {table.title}: (none)"]
    columns = range(len(table.header))
    widths = [max(len(table.header[i]), *(len(r[i]) for r in table.rows)) for i in columns]
    numeric = [i > 0 and all(_NUMBER.match(r[i]) for r in table.rows) for i in columns]

    def line(cells: list[str]) -> str:
        return "  " + "  ".join(c.rjust(widths[i]) if numeric[i] else c.ljust(widths[i])
                                for i, c in enumerate(cells)).rstrip()

    return [f"  {table.title}", line(table.header), "  " + "-" * (sum(widths) + 2 * (len(widths) - 1))] + [
        line(r) for r in table.rows]


def _lines(section: Section) -> list[tuple[str, bool]]:
    out: list[tuple[str, bool]] = [(section.title, True)]
    for fact in section.facts:
        out += [(text, False) for text in textwrap.wrap(f"- {fact}", WIDTH_CHARS, subsequent_indent="  ")]
    for table in section.tables:
        out.append(("", False))
        out += [(text[:WIDTH_CHARS], False) for text in _table(table)]
    out.append(("", False))
    return out


def _text_pages(report: dict[str, Any]) -> list[Figure]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    per_page = int((A4[1] - 2 * MARGIN_IN) * 72 / LINE_PT) - 2
    lines: list[tuple[str, bool]] = [("Privacy audit report", True), ("", False)]
    for section in sections(report):
        lines += _lines(section)
    pages: list[Figure] = []
    for start in range(0, len(lines), per_page):
        fig = Figure(figsize=A4)
        FigureCanvasAgg(fig)
        top = 1 - MARGIN_IN / A4[1]
        step = LINE_PT / 72 / A4[1]
        for i, (text, bold) in enumerate(lines[start:start + per_page]):
            if text:
                fig.text(MARGIN_IN / A4[0], top - i * step, text, family="monospace", size=FONT_PT + (1 if bold else 0),
                         weight="bold" if bold else "normal", va="top")
        fig.text(0.5, MARGIN_IN / 2 / A4[1], f"page {len(pages) + 1}", ha="center", size=FONT_PT, color="#777")
        pages.append(fig)
    return pages


def to_pdf(report: dict[str, Any]) -> bytes:
    import matplotlib
    from matplotlib.backends.backend_pdf import PdfPages

    from privacy.report.figures import FIGURES

    out = io.BytesIO()
    with matplotlib.rc_context({"pdf.fonttype": 42}), PdfPages(out, metadata={
            "Title": f"Privacy audit report: {report['owner']}", "Creator": "ecgw privacy-report"}) as pdf:
        for page in _text_pages(report):
            pdf.savefig(page)
        for draw in FIGURES.values():
            pdf.savefig(draw(report, A4))
    return out.getvalue()

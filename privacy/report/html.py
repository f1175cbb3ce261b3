"""The period report as one self-contained HTML page: the sections' facts and tables, and each figure inline as
SVG (``privacy.report.figures``, drawn only here, when a page is asked for)."""

from __future__ import annotations

import html
from typing import Any

from privacy.report.sections import Section, sections

_STYLE = ("body{font-family:sans-serif;max-width:64rem;margin:2rem auto;color:#222}"
          "table{border-collapse:collapse;margin:.5rem 0 1.5rem}td,th{border:1px solid #bbb;padding:.2rem .5rem}"
          "td{text-align:right;font-variant-numeric:tabular-nums}td:first-child{text-align:left}"
          "figure{margin:1rem 0}svg{max-width:100%;height:auto}")


def _section(section: Section, figures: dict[str, str]) -> str:
    e = html.escape
    out = [f"<section><h2>{e(section.title)}</h2>"]
    if section.facts:
        out.append("<ul>" + "".join(f"<li>{e(f)}</li>" for f in section.facts) + "</ul>")
    for table in section.tables:
        out.append(f"<h3>{e(table.title)}</h3>")
        if not table.rows:
            out.append("<p>(none)</p>")
            continue
        out.append("<table><thead><tr>" + "".join(f"<th>{e(h)}</th>" for h in table.header) + "</tr></thead><tbody>")
        out += ["<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in table.rows]
        out.append("</tbody></table>")
    if section.figure is not None and section.figure in figures:
        out.append(f"<figure>{figures[section.figure]}</figure>")
    out.append("</section>")
    return "".join(out)


def to_html(report: dict[str, Any]) -> str:
    from privacy.report.figures import FIGURES, SIZE, svg

    figures = {name: svg(draw(report, SIZE)) for name, draw in FIGURES.items()}
    body = "".join(_section(s, figures) for s in sections(report))
    return ("<!doctype html><html><head><meta charset='utf-8'><title>Privacy audit report</title>"
            f"<style>{_STYLE}</style></head><body><h1>Privacy audit report</h1>{body}</body></html>")

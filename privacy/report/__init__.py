"""The period report an auditor reads (``ecgw privacy-report --owner … --since … --until …``): one report object
per owner and period (``build``, from the audit's tables and the metering store: ``reads``, over a ``period.Scope``),
worded once as sections (``sections``) and rendered as JSON, Markdown (``markdown``), HTML (``html``) or PDF
(``pdf``), the last two with figures (``figures``, matplotlib, loaded only when they render).
"""

from __future__ import annotations

import json
from typing import Any

from privacy.report.build import build_report
from privacy.report.period import Scope

FORMATS = ("json", "md", "html", "pdf")


def render(report: dict[str, Any], fmt: str) -> bytes:
    """The report in ``fmt`` (one of ``FORMATS``), as the bytes to write."""
    if fmt == "json":
        return (json.dumps(report, indent=2, ensure_ascii=False) + "\n").encode()
    if fmt == "md":
        from privacy.report.markdown import to_markdown

        return to_markdown(report).encode()
    if fmt == "html":
        from privacy.report.html import to_html

        return to_html(report).encode()
    if fmt == "pdf":
        from privacy.report.pdf import to_pdf

        return to_pdf(report)
    raise ValueError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")


__all__ = ["FORMATS", "Scope", "build_report", "render"]

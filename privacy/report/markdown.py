"""The period report as Markdown: each section's facts as a list, its tables as Markdown tables."""

from __future__ import annotations

from typing import Any

from privacy.report.sections import sections


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(report: dict[str, Any]) -> str:
    lines = ["# Privacy audit report", ""]
    for section in sections(report):
        lines += [f"## {section.title}", ""]
        lines += [f"- {fact}" for fact in section.facts]
        if section.facts:
            lines.append("")
        for table in section.tables:
            lines += [f"**{table.title}**", ""]
            if not table.rows:
                lines += ["(none)", ""]
                continue
            lines.append("| " + " | ".join(_cell(h) for h in table.header) + " |")
            lines.append("|" + "---|" * len(table.header))
            lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in table.rows]
            lines.append("")
    return "\n".join(lines)

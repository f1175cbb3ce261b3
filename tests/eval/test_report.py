from __future__ import annotations

from pathlib import Path

from eval.metrics import PolicySummary, TokenTotals
from eval.report import (
    COST,
    EXPOSURE,
    beats_interpolation,
    completion_plot,
    html_table,
    markdown_table,
    write_report,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def summary(policy: str, completion: float, pass_k: float, tokens: tuple[float, float, float], cost: float,
            pflops: float | None, exposure: float | None, **kw: object) -> PolicySummary:
    return PolicySummary(policy=policy, tasks=12, runs=3, completion=completion, pass_k=pass_k,
                         tokens=TokenTotals(*tokens), cost_usd=cost, edge_pflops=pflops,
                         privacy_exposure=exposure, **kw)  # type: ignore[arg-type]


SUMMARIES = [
    summary("edge-only", 40.09, 9.38, (0, 0, 0), 0.0, 121.41, 0.0, flops_formula="2·N_active·T"),
    summary("cloud-only", 71.81, 49.22, (5.46, 22.92, 1.02), 34.69, 0.0, 77.91, errors=2),
    summary("step-routing", 55.58, 19.53, (2.63, 7.67, 0.31), 13.06, 23.48, 41.94,
            judge_privacy_exposure=43.5),
    summary("sketch", 46.32, 14.06, (0.07, 0.0, 0.03), 0.58, 148.45, None),
]


def test_markdown_table_has_the_numbers() -> None:
    text = markdown_table(SUMMARIES)
    lines = text.splitlines()
    assert lines[0] == ("| Policy | Completion | Pass^3 | Cloud Tok. R/C/O (M) | Cloud Cost ($) | Edge PFLOPs "
                        "| Privacy Exp. |")
    assert lines[2] == "| edge-only | 40.09 | 9.38 | 0.00/0.00/0.00 | 0.00 | 121.41 | 0.00 |"
    assert lines[3] == "| cloud-only | 71.81 | 49.22 | 5.46/22.92/1.02 | 34.69 | 0.00 | 77.91 |"
    assert lines[4] == "| step-routing | 55.58 | 19.53 | 2.63/7.67/0.31 | 13.06 | 23.48 | 41.94 |"
    assert lines[5] == "| sketch | 46.32 | 14.06 | 0.07/0.00/0.03 | 0.58 | 148.45 | — |"
    assert "Edge FLOPs formula: 2·N_active·T." in text
    assert "step-routing 43.50" in text and "cloud-only 2" in text


def test_small_values_do_not_print_as_zero() -> None:
    small = summary("tiny", 50.0, 50.0, (0.000412, 0.0, 0.0000315), 0.00123, 0.0, 12.5)
    assert markdown_table([small]).splitlines()[2] == (
        "| tiny | 50.00 | 50.00 | 4.1e-04/0.00/3.1e-05 | 1.2e-03 | 0.00 | 12.50 |")


def test_html_table_escapes_and_has_rows() -> None:
    page = html_table(SUMMARIES + [summary("<x>", 1, 0, (0, 0, 0), 0, None, None)], title="A & B")
    assert "<title>A &amp; B</title>" in page
    assert "<td>cloud-only</td><td>71.81</td><td>49.22</td><td>5.46/22.92/1.02</td><td>34.69</td>" in page
    assert "<td>&lt;x&gt;</td>" in page and "<x>" not in page


def test_interpolation_line_joins_edge_and_cloud_points() -> None:
    figure = completion_plot(SUMMARIES, COST)
    ax = figure.axes[0]
    dashed = [line for line in ax.get_lines() if line.get_linestyle() == "--"]
    assert len(dashed) == 1
    assert list(dashed[0].get_xdata()) == [0.0, 34.69]
    assert list(dashed[0].get_ydata()) == [40.09, 71.81]
    assert len(ax.collections) == 4  # one point per policy
    exposure_ax = completion_plot(SUMMARIES, EXPOSURE).axes[0]
    assert len(exposure_ax.collections) == 3  # sketch has no exposure figure
    [line] = [ln for ln in exposure_ax.get_lines() if ln.get_linestyle() == "--"]
    assert list(line.get_xdata()) == [0.0, 77.91]


def test_no_line_without_both_endpoints() -> None:
    ax = completion_plot(SUMMARIES[1:], COST).axes[0]
    assert not [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]


def test_beats_interpolation() -> None:
    step = SUMMARIES[2]
    # line at cost 13.06: 40.09 + 31.72 · 13.06 / 34.69 ≈ 52.03 < 55.58
    assert beats_interpolation(step, SUMMARIES, COST) is True
    # line at exposure 41.94: 40.09 + 31.72 · 41.94 / 77.91 ≈ 57.17 > 55.58
    assert beats_interpolation(step, SUMMARIES, EXPOSURE) is False
    assert beats_interpolation(SUMMARIES[3], SUMMARIES, EXPOSURE) is None


def test_write_report_produces_files(tmp_path: Path) -> None:
    files = write_report(tmp_path / "out", SUMMARIES, title="suite")
    for path in (files.cost_plot, files.exposure_plot):
        data = path.read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 5000
    md = files.markdown.read_text(encoding="utf-8")
    assert md.startswith("# suite\n") and "| cloud-only | 71.81 | 49.22 | 5.46/22.92/1.02 | 34.69 |" in md
    assert "<td>55.58</td>" in files.html.read_text(encoding="utf-8")

"""The size report's answer section: the SLO's own percentile in its headings and legends, an interval said as one,
a percentile on too few requests drawn apart, and no "0 (None)" tokens."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.load.points import point_label
from bench.report import sizing as report
from bench.report.load import points_table
from bench.results.schema import LoadRequests, SaturationProbe, SaturationSummary, SizingLine, SizingRecord
from bench.results.store import Results
from tests.sizing.test_sizing import open_point
from tests.sizing.test_steady import with_scheduled


def _results(tmp_path: Path, stopped: str | None, first_failure: float | None) -> tuple[Results, list]:
    few = with_scheduled([100.0 * (i + 1) for i in range(7)], rate=5.0)
    few.requests = LoadRequests(sent=7, ok=7, errors={})
    many = with_scheduled([100.0 * (i + 1) for i in range(50)], rate=10.0)
    saturation = SaturationSummary(
        rate=5.0,
        texts_per_s=40.0,
        point=point_label(few),
        first_failure=first_failure,
        probes=[SaturationProbe(5.0, True, point_label(few)), SaturationProbe(10.0, False, point_label(many))],
        lower_bound=stopped if first_failure is None else None,
    )
    sizing = SizingRecord(
        endpoint="srv",
        op=few.op,
        length=few.length,
        slo_p99_ms=2000.0,
        max_error_rate=0.001,
        saturation=saturation,
        lines=[SizingLine("saturation rate (goodput, offered)", "5–10 requests/s", "…", [point_label(few)])],
        telemetry="no GPU telemetry: none here",
        slo_percentile=95.0,
        stopped=stopped,
    )
    results = Results(tmp_path / "results.jsonl", header=None)  # type: ignore[arg-type]
    for record in (few, many, sizing):
        results.add(record)
    return results, [few, many]


def test_a_p95_answer_names_p95_and_an_interval_is_not_called_a_lower_bound(tmp_path, monkeypatch):
    figures: list = []
    monkeypatch.setattr(report, "save_figure", lambda fig, path: figures.append(fig) or path)
    results, _ = _results(tmp_path, "the 300 s budget (--max-time) was spent", first_failure=10.0)
    md, _html = report.sizing_sections(results, tmp_path)
    text = "\n".join(md)
    assert "Goodput: texts/s against p95, with the SLO" in text and "against p99" not in text
    assert "Stopped early (the 300 s budget (--max-time) was spent): the saturation rate lies between" in text
    assert "lower bound" not in text
    legend = [t.get_text() for t in figures[0].axes[0].get_legend().get_texts()]
    assert "open-loop measurement, too few requests for a p95" in legend  # the 7-request probe
    assert not any("p99" in label for label in legend)


def test_a_best_so_far_without_a_failure_is_a_lower_bound(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "save_figure", lambda fig, path: path)
    results, _ = _results(tmp_path, "stopped by SIGINT", first_failure=None)
    md, _html = report.sizing_sections(results, tmp_path)
    assert "Best so far, a lower bound: stopped by SIGINT" in "\n".join(md)


@pytest.mark.parametrize("source", [None, "x-compute-tokens"])
def test_tokens_without_a_source_show_a_dash(source):
    point = open_point(5.0)
    point.throughput.tokens_source = source
    point.throughput.tokens_per_s = 0.0 if source is None else 100.0
    _header, (row,) = points_table([point])
    assert "(None)" not in " ".join(row)
    assert ("-" in row) if source is None else ("100 (x-compute-tokens)" in row)


def test_what_a_tighter_answer_needs_is_in_the_report(tmp_path, monkeypatch):
    """The record's `tighter` (requests and seconds a probe at the undecided rates) was said on the terminal only."""
    monkeypatch.setattr(report, "save_figure", lambda fig, path: path)
    results, _ = _results(tmp_path, None, first_failure=10.0)
    assert results.sizing[0].saturation is not None
    results.sizing[0].saturation.tighter = "a tighter answer needs a verdict between 5 and 10 requests/s — …"
    md, html = report.sizing_sections(results, tmp_path)
    assert "a tighter answer needs a verdict between 5 and 10 requests/s" in "\n".join(md)
    assert any("a tighter answer needs" in fragment for fragment in html)

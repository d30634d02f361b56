"""A target's configuration in the quality report reads as text: `2×depth` as written, not `2\\u00d7depth`."""

from bench.report.quality_html import render_html
from bench.report.quality_markdown import render_markdown
from tests.report.test_quality_frontier import results_file, target


def test_the_configuration_keeps_its_characters(tmp_path):
    mapping = {"mapping": "chunks requested: 2×depth, doubled while short"}  # Open WebUI's own description
    results = results_file(tmp_path, [target("bm25", config=mapping)], {"bm25": 0.5})
    for text in (render_markdown(results, [], tmp_path), render_html(results, [])):
        assert "2×depth" in text and "u00d7" not in text

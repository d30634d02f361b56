"""The loaded-vs-idle table's background column."""

from dataclasses import replace

from bench.report.quality_under_load import _stream
from tests.gate.helpers import load_point


def test_a_streams_achieved_rate_is_shown_to_its_figures():
    """A stream asked for 5.238 requests/s that achieved them reads 5.238 req/s, not 5."""
    point = replace(load_point(batch=1, texts_per_s=5.238), rate=5.238)
    assert _stream([point], 5.238).startswith("5.238 req/s ok")
    assert _stream([replace(load_point(batch=1, texts_per_s=1234.6), rate=1234.6)], 1234.6).startswith("1235 req/s")

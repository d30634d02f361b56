"""benchmarks/peers_table.py: docs/peers.md's tables from measured rows."""

from __future__ import annotations

import pytest

from benchmarks.peers_table import BEGIN, END, Row, figure, markdown_table, replace_measured, signed_share


def test_table_has_load_and_command_columns_and_escapes_pipes():
    table = markdown_table(("tool", "requests/s"), [Row(("wrk", "1,000"), "1.0 2.0 3.0", "a | b")])
    header, rule, row = table.splitlines()
    assert header == "| tool | requests/s | load avg | command |"
    assert rule.count("---") == 4
    assert row == "| wrk | 1,000 | 1.0 2.0 3.0 | `a \\| b` |"


def test_a_row_of_the_wrong_width_is_refused():
    with pytest.raises(ValueError, match="cells"):
        markdown_table(("a", "b"), [Row(("1",), "0", "x")])


def test_figures_and_shares():
    assert figure(12345.6) == "12,346"
    assert figure(None) == "—"
    assert figure(1.234, 2, " ms") == "1.23 ms"
    assert signed_share(-0.034) == "-3.4%"
    assert signed_share(None) == "no answer"


def test_replace_measured_keeps_the_prose_and_the_markers():
    page = f"intro\n{BEGIN}\nold\n{END}\nclosing\n"
    new = replace_measured(page, "new table")
    assert new == f"intro\n{BEGIN}\nnew table\n{END}\nclosing\n"
    with pytest.raises(ValueError, match="no"):
        replace_measured("no markers here", "x")


def test_size_cases_are_parsed_from_the_command_line():
    from benchmarks.peers_sections import parse_cases

    fixed, heavy = parse_cases("50:0:1:95:250,148:1.5:4:99:600")
    assert (fixed.service_ms, fixed.cv, fixed.slots, fixed.percentile, fixed.slo_ms) == (50.0, 0.0, 1, 95.0, 250.0)
    assert (heavy.cv, heavy.slots, heavy.percentile) == (1.5, 4, 99.0)
    with pytest.raises(ValueError):
        parse_cases("50:0:1:95")

"""The hop split of a metered app query (bench/targets/hops.py) on counters given here; the real servers'
split is tested in tests/targets/remote/test_time_by_hop.py."""

from __future__ import annotations

import pytest

from bench.core.errors import UserError
from bench.endpoints.meter import Usage
from bench.targets.hops import APP_PART, HOPS_OVERLAP, Nesting, hop_parts


def busy(seconds: float, calls: int = 1) -> Usage:
    return Usage(calls=calls, seconds=seconds * calls, busy_seconds=seconds)


def test_each_called_route_is_a_part_and_the_rest_is_the_app():
    parts, warnings = hop_parts(100.0, {"embedding": busy(0.030), "rerank": busy(0.050), "llm": Usage()}, Nesting())
    assert warnings == []
    assert parts == pytest.approx({"embedding_ms": 30.0, "rerank_ms": 50.0, APP_PART: 20.0})  # llm: no call, no part
    assert sum(parts.values()) == pytest.approx(100.0)


def test_a_nested_route_leaves_the_proxy_its_own_share():
    """app → meter/litellm → LiteLLM → meter/embedding → TEI: LiteLLM's calls took 40 ms, 30 of them TEI's."""
    spent = {"litellm": busy(0.040), "embedding": busy(0.030)}
    parts, warnings = hop_parts(50.0, spent, Nesting.parse("litellm>embedding", "t"))
    assert warnings == []
    assert parts == pytest.approx({"litellm_ms": 10.0, "embedding_ms": 30.0, APP_PART: 10.0})
    # Without the nesting the two hops count TEI's time twice: 70 ms of a 50 ms query is called overlap.
    parts, warnings = hop_parts(50.0, spent, Nesting())
    assert warnings == [HOPS_OVERLAP] and parts[APP_PART] == 0.0


def test_hops_summing_past_the_query_are_overlap_not_a_negative_app_share():
    parts, warnings = hop_parts(100.0, {"llm": busy(0.080), "embedding": busy(0.060)}, Nesting())
    assert warnings == [HOPS_OVERLAP]
    assert parts == pytest.approx({"llm_ms": 80.0, "embedding_ms": 60.0, APP_PART: 0.0})
    # Within the tolerance it is timing noise: no warning, the app's share is zero, not negative.
    parts, warnings = hop_parts(100.0, {"llm": busy(0.102)}, Nesting())
    assert warnings == [] and parts[APP_PART] == 0.0


@pytest.mark.parametrize("text", ["litellm", "a>", ">b", "a>a", "a>b,c"])
def test_a_malformed_nesting_is_one_line(text):
    with pytest.raises(UserError, match="expected OUTER>INNER"):
        Nesting.parse(text, "openwebui@http://h")

"""The hop split of a metered app query (bench/targets/hops.py) on counters given here; the real servers'
split is tested in tests/targets/remote/test_time_by_hop.py."""

from __future__ import annotations

import pytest

from bench.core.errors import UserError
from bench.endpoints.meter import Meter, MeterReading, Usage
from bench.targets.base import QueryResult
from bench.targets.hops import (
    APP_PART,
    HOPS_NEST_MISMATCH,
    HOPS_OVERLAP,
    METER_RESTARTED,
    MeteredQueries,
    Nesting,
    hop_parts,
)


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


def test_a_reversed_nesting_gives_no_split_rather_than_all_time_to_one_hop():
    """LiteLLM (40 ms) holds TEI's calls (30 ms); `embedding>litellm` says the reverse: the inner route busier than
    its outer one cannot be nested in it, so the query has no split and says why."""
    spent = {"litellm": busy(0.040), "embedding": busy(0.030)}
    parts, warnings = hop_parts(50.0, spent, Nesting.parse("embedding>litellm", "t"))
    assert (parts, warnings) == ({}, [HOPS_NEST_MISMATCH])


def test_a_nesting_naming_a_route_the_meter_lacks_is_refused_before_any_query():
    routes = {"litellm": "http://127.0.0.1:9/", "embedding": "http://127.0.0.1:9/"}
    with Meter(routes) as meter:
        metered = MeteredQueries(meter.url, Nesting.parse("litellm>embeding", "t"), "openwebui@http://h")
        try:
            with pytest.raises(UserError, match=r"no route 'embeding' \(its routes: embedding, litellm\)"):
                metered.check()
            MeteredQueries(meter.url, Nesting.parse("litellm>embedding", "t"), "t").check()  # the right one passes
        finally:
            metered.close()


class Readings:
    """A meter client that answers the given readings in turn."""

    url = "http://meter"

    def __init__(self, *readings: MeterReading):
        self.readings = list(readings)

    def reading(self) -> MeterReading:
        return self.readings.pop(0)


def one_query() -> QueryResult:
    return QueryResult("q1", [], latency_s=0.1)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (MeterReading("a", {"llm": busy(0.5, calls=7)}), MeterReading("a", {"llm": busy(0.02, calls=1)})),
        (MeterReading("a", {"llm": busy(0.01, calls=1)}), MeterReading("b", {"llm": busy(0.02, calls=3)})),
        (MeterReading("a", {"llm": busy(0.01, calls=1)}), MeterReading("a", {})),
    ],
    ids=["counters-backwards", "another-instance", "route-gone"],
)
def test_a_meter_restarted_mid_query_gives_no_cost_and_no_split_not_negatives(before, after):
    metered = MeteredQueries.__new__(MeteredQueries)
    metered.client, metered.nesting = Readings(before, after), Nesting()  # type: ignore[assignment]
    result = metered.run(one_query)
    assert result.warnings == [METER_RESTARTED]
    assert result.cost == {} and result.parts_ms == {}

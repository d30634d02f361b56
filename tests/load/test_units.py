"""Schedules, histogram merging, the TEI /metrics parser and the response-header split."""

from __future__ import annotations

import numpy as np
import pytest

from bench.errors import UserError
from bench.load import histograms
from bench.load.client import Response
from bench.load.schedule import Arrival, open_schedule, parse_arrival, share, split_count
from bench.load.server_view import delta, parse_snapshot
from bench.load.worker import SharePlan, _Recorder, status_class


@pytest.mark.parametrize("arrival,cv", [(Arrival("constant"), 0.0), (Arrival("poisson"), 1.0), (Arrival("gamma", 2.0), 2.0)])
def test_arrivals_have_the_rate_and_variability_asked_for(arrival, cv):
    offsets = open_schedule(arrival, 1000.0, 20.0, None, seed=1)
    gaps = np.diff(offsets)
    assert len(offsets) == pytest.approx(20_000, rel=0.03)
    assert gaps.mean() == pytest.approx(0.001, rel=0.03)
    assert gaps.std() / gaps.mean() == pytest.approx(cv, abs=0.06)
    assert offsets[0] == 0.0 and offsets[-1] < 20.0


def test_count_schedule_and_shares_partition_it():
    offsets = open_schedule(Arrival("poisson"), 50.0, None, 101, seed=3)
    assert len(offsets) == 101 and np.all(np.diff(offsets) >= 0)
    for arrival in (Arrival("constant"), Arrival("poisson"), Arrival("gamma", 2.0)):
        parts = [share(offsets, w, 3, arrival, seed=5) for w in range(3)]
        assert sorted(np.concatenate(parts).tolist()) == offsets.tolist()
    assert share(offsets, 1, 3).tolist() == offsets[1::3].tolist()  # constant: round-robin, phase-shifted


def test_a_poisson_stream_splits_into_poisson_streams():
    """Thinning keeps each share Poisson (gaps' CV 1 at rate/W); round-robin would give Erlang-2 gaps (CV 0.71)."""
    offsets = open_schedule(Arrival("poisson"), 1000.0, 40.0, None, seed=11)
    for w in range(2):
        gaps = np.diff(share(offsets, w, 2, Arrival("poisson"), seed=0))
        assert gaps.mean() == pytest.approx(0.002, rel=0.03)
        assert gaps.std() / gaps.mean() == pytest.approx(1.0, abs=0.03)
    assert split_count(10, 3) == [4, 3, 3] and sum(split_count(7, 7)) == 7


@pytest.mark.parametrize("text", ["gamma", "gamma:0", "gamma:x", "uniform", "poisson:2"])
def test_bad_arrivals_are_one_line_errors(text):
    with pytest.raises(UserError, match="--arrival"):
        parse_arrival(text)


def test_histograms_merge_exactly_across_workers():
    rng = np.random.default_rng(0)
    values = rng.integers(100, 2_000_000, 20_000)
    whole = histograms.from_values(values)
    parts = [histograms.encode(histograms.from_values(values[i::3])) for i in range(3)]
    merged = histograms.merge(parts)
    assert merged.get_total_count() == whole.get_total_count()
    for q in (50, 90, 99, 99.9, 100):
        assert merged.get_value_at_percentile(q) == whole.get_value_at_percentile(q)
    block = histograms.summary_ms(merged)
    assert block["p99"] == pytest.approx(np.percentile(values, 99) / 1000, rel=0.002)
    assert histograms.summary_ms(histograms.new_histogram()) is None


TEI_METRICS = """# TYPE te_request_count counter
te_request_count{method="single"} 10
te_request_count{method="batch"} 4
# TYPE te_request_success counter
te_request_success{method="single"} 9
# TYPE te_request_failure counter
te_request_failure{err="overloaded"} 1
# TYPE te_request_duration histogram
te_request_duration_bucket{le="0.005"} 3
te_request_duration_bucket{le="0.05"} 12
te_request_duration_bucket{le="+Inf"} 13
te_request_duration_sum 0.25
te_request_duration_count 13
# TYPE te_batch_next_size histogram
te_batch_next_size_bucket{le="1"} 5
te_batch_next_size_bucket{le="+Inf"} 8
te_batch_next_size_sum 20
te_batch_next_size_count 8
# TYPE te_queue_size gauge
te_queue_size 2
# TYPE process_cpu_seconds counter
process_cpu_seconds_total 5
"""


def test_tei_metrics_deltas(shared_dir):
    contract = (shared_dir / "contracts" / "README.md").read_text()
    for name in ("te_request_count", "te_request_success", "te_request_failure", "te_request_duration", "te_batch_next_size", "te_queue_size"):
        assert name in contract  # the families parsed here are the ones TEI documents
    before = parse_snapshot(TEI_METRICS)
    after_text = (TEI_METRICS.replace('method="single"} 10', 'method="single"} 25').replace('err="overloaded"} 1', 'err="overloaded"} 4')
                  .replace('le="0.05"} 12', 'le="0.05"} 20').replace('le="+Inf"} 13', 'le="+Inf"} 22')
                  .replace("te_request_duration_sum 0.25", "te_request_duration_sum 0.70")
                  .replace("te_request_duration_count 13", "te_request_duration_count 22").replace("te_queue_size 2", "te_queue_size 0"))
    d = delta(before, parse_snapshot(after_text))
    assert d["counters"]['te_request_count{method="single"}'] == 15
    assert d["counters"]['te_request_count{method="batch"}'] == 0
    assert d["counters"]['te_request_failure{err="overloaded"}'] == 3
    assert not any(k.startswith("process_") for k in d["counters"])  # only TEI's te_* families
    duration = d["histograms"]["te_request_duration"]
    assert duration["count"] == 9 and duration["sum"] == pytest.approx(0.45) and duration["mean"] == pytest.approx(0.05)
    assert duration["buckets"] == {"0.005": 0, "0.05": 8, "+Inf": 9}
    assert d["gauges"]["te_queue_size"] == 0
    # A restarted server (counter went down) counts from zero.
    restarted = delta(parse_snapshot(after_text), before)
    assert restarted["counters"]['te_request_count{method="single"}'] == 10


def test_tei_timing_headers_become_the_server_split():
    plan = SharePlan(worker=0, mode="open", target=None, requests=[b""], inputs=[4], tokens=[40], start_at=0.0,
                     warmup_s=0.0, duration_s=1.0)
    recorder = _Recorder(plan)
    headers = [(b"x-queue-time", b"7"), (b"x-tokenization-time", b"1"), (b"x-inference-time", b"12"), (b"x-compute-tokens", b"33")]
    recorder.finish(0, due=1.0, sent=1.002, outcome=Response(200, headers, b"[]", 1.025))
    recorder.finish(0, due=1.1, sent=1.1, outcome=Response(200, [], b"[]", 1.11))  # no headers: tokens estimated
    recorder.finish(0, due=1.2, sent=1.2, outcome=Response(422, [], b'{"error":"batch size 4 > maximum allowed batch size 2"}', 1.21))
    result = recorder.close()
    assert result.ok == 2 and result.errors == {"too_large": 1} and result.sent == 3
    assert result.tokens_counted == 33 and result.tokens_estimated == 40 and result.texts_ok == 8
    queue = histograms.summary_ms(histograms.decode(result.histograms["queue"]))
    assert queue["max"] == pytest.approx(7.0, rel=0.001) and queue["count"] == 1
    scheduled = histograms.summary_ms(histograms.decode(result.histograms["scheduled"]))
    assert scheduled["max"] == pytest.approx(25.0, rel=0.002)
    assert histograms.summary_ms(histograms.decode(result.histograms["dispatch_delay"]))["max"] == pytest.approx(2.0, rel=0.002)


@pytest.mark.parametrize("status,cls", [(413, "too_large"), (422, "too_large"), (429, "429"), (424, "424"),
                                        (401, "4xx"), (503, "5xx")])
def test_status_classes(status, cls):
    assert status_class(status) == cls

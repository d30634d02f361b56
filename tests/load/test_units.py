"""Schedules, histogram merging, the TEI /metrics parser and the response-header split."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from bench.core.errors import UserError
from bench.endpoints.tei_metrics import parse_snapshot
from bench.load import histograms
from bench.load.client import Response
from bench.load.recorder import Recorder, status_outcome
from bench.load.schedule import Arrival, open_schedule, parse_arrival, share, split_count
from bench.load.server_view import delta
from bench.load.share import SharePlan


@pytest.mark.parametrize(
    "arrival,cv", [(Arrival("constant"), 0.0), (Arrival("poisson"), 1.0), (Arrival("gamma", 2.0), 2.0)]
)
def test_arrivals_have_the_rate_and_variability_asked_for(arrival, cv):
    offsets = open_schedule(arrival, 1000.0, 20.0, None, seed=1)
    gaps = np.diff(offsets)
    assert len(offsets) == pytest.approx(20_000, rel=0.03)
    assert gaps.mean() == pytest.approx(0.001, rel=0.03)
    assert gaps.std() / gaps.mean() == pytest.approx(cv, abs=0.06)
    assert offsets[0] >= 0.0 and offsets[-1] < 20.0
    assert offsets[0] == 0.0 or arrival.kind != "constant"  # a constant stream starts at 0


@pytest.mark.parametrize("arrival", [Arrival("poisson"), Arrival("gamma", 2.0)])
@pytest.mark.parametrize("rate,warmup,window", [(1.71, 10.0, 68.5), (1.35, 4.0, 272.0), (15.0, 1.0, 5.0)])
def test_a_random_window_carries_the_rate_it_is_labelled_with(arrival, rate, warmup, window):
    """Issue 45: a probe labelled 1.71/s sent 96 requests in its 68.5 s window (1.40/s, 18% light) on one seeded
    draw. Each of the warm-up and the window holds exactly rate × length sends, rounded, on every seed."""
    for seed in range(200):
        offsets = open_schedule(arrival, rate, warmup + window, None, seed, measured_from=warmup)
        in_window = int(np.count_nonzero(offsets >= warmup))
        assert in_window == round(rate * window)
        assert offsets.size - in_window == round(rate * warmup)
        assert np.all(np.diff(offsets) >= 0) and offsets[-1] < warmup + window


def test_conditioned_poisson_times_are_uniform_in_the_window():
    """Given its count, a Poisson stream's times are uniform over the window: no crowding at either end."""
    offsets = np.concatenate([open_schedule(Arrival("poisson"), 5.0, 10.0, None, seed) for seed in range(400)])
    counts, _ = np.histogram(offsets, bins=10, range=(0.0, 10.0))
    assert counts.sum() == 400 * 50
    assert np.all(np.abs(counts - 2000) < 5 * np.sqrt(2000))  # 5 sd of each bin's binomial count


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
    assert block.p99 == pytest.approx(np.percentile(values, 99) / 1000, rel=0.002)
    assert histograms.summary_ms(histograms.new_histogram()) is None


@pytest.mark.parametrize("spread", [(1, 2), (0, 5_000), (100, 2_000_000), (1, 5_000_000_000)])
def test_values_fold_into_the_counts_hdrs_own_record_value_gives(spread):
    """from_values counts every value at once (numpy); one `record_value` a value (HDR's own, clamped to the range
    as recorded) must give the same counts, total, min, max and encoding, bucket edges and out-of-range included."""
    rng = np.random.default_rng(spread[1])
    values = np.concatenate([rng.integers(*spread, 5_000), [2047, 2048, 4095, 4096, 1 << 31]])
    folded = histograms.from_values(values)
    one_by_one = histograms.new_histogram()
    for value in values.tolist():
        one_by_one.record_value(min(max(value, histograms.LOWEST_US), histograms.HIGHEST_US))
    assert np.array_equal(np.ctypeslib.as_array(folded.counts), np.ctypeslib.as_array(one_by_one.counts))
    assert (folded.total_count, folded.min_value, folded.max_value) == (
        one_by_one.total_count,
        one_by_one.min_value,
        one_by_one.max_value,
    )
    assert histograms.encode(folded) == histograms.encode(one_by_one)


@pytest.mark.parametrize("spread", [(1, 2), (100, 2_000_000), (1, 3_600_000_000)])
def test_summary_and_cdf_equal_hdrhistograms_own_readers(spread):
    """summary_ms and cdf_ms read the counts array with numpy; HdrHistogram_py's own (slow) readers must agree
    exactly, on a histogram recorded here and on one decoded from its encoding (shorter counts array)."""
    rng = np.random.default_rng(spread[1])
    values = rng.integers(*spread, 2_000)
    recorded = histograms.from_values(values)
    for histogram in (recorded, histograms.decode(histograms.encode(recorded))):
        block = histograms.summary_ms(histogram)
        expected = [histogram.get_value_at_percentile(q) / 1000.0 for q in (50.0, 90.0, 99.0, 99.9)]
        assert [block.p50, block.p90, block.p99, block.p999] == expected
        assert block.mean == histogram.get_mean_value() / 1000.0
        assert block.max == histogram.get_max_value() / 1000.0 and block.count == len(values)
        total, seen, cdf = histogram.get_total_count(), 0, []
        for item in histogram.get_recorded_iterator():
            seen += item.count_added_in_this_iter_step
            cdf.append((histogram.get_highest_equivalent_value(item.value_iterated_to) / 1000.0, seen / total))
        assert histograms.cdf_ms(histogram) == cdf


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
    for name in (
        "te_request_count",
        "te_request_success",
        "te_request_failure",
        "te_request_duration",
        "te_batch_next_size",
        "te_queue_size",
    ):
        assert name in contract  # the families parsed here are the ones TEI documents
    before = parse_snapshot(TEI_METRICS)
    after_text = (
        TEI_METRICS.replace('method="single"} 10', 'method="single"} 25')
        .replace('err="overloaded"} 1', 'err="overloaded"} 4')
        .replace('le="0.05"} 12', 'le="0.05"} 20')
        .replace('le="+Inf"} 13', 'le="+Inf"} 22')
        .replace("te_request_duration_sum 0.25", "te_request_duration_sum 0.70")
        .replace("te_request_duration_count 13", "te_request_duration_count 22")
        .replace("te_queue_size 2", "te_queue_size 0")
    )
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
    plan = SharePlan(
        worker=0,
        mode="open",
        target=None,
        requests=[b""],
        inputs=[4],
        tokens=[40],
        start_at=0.0,
        warmup_s=0.0,
        duration_s=1.0,
    )
    recorder = Recorder(plan)
    headers = [
        (b"x-queue-time", b"7"),
        (b"x-tokenization-time", b"1"),
        (b"x-inference-time", b"12"),
        (b"x-compute-tokens", b"33"),
    ]
    recorder.finish(0, due=1.0, sent=1.002, outcome=Response(200, headers, b"[]", 1.025))
    recorder.finish(0, due=1.1, sent=1.1, outcome=Response(200, [], b"[]", 1.11))  # no headers: tokens estimated
    recorder.finish(
        0,
        due=1.2,
        sent=1.2,
        outcome=Response(422, [], b'{"error":"batch size 4 > maximum allowed batch size 2"}', 1.21),
    )
    result = recorder.close()
    assert result.ok == 2 and result.errors == {"too_large": 1} and result.sent == 3
    assert result.tokens_counted == 33 and result.tokens_estimated == 40 and result.texts_ok == 8
    queue = histograms.summary_ms(histograms.decode(result.histograms["queue"]))
    assert queue.max == pytest.approx(7.0, rel=0.001) and queue.count == 1
    scheduled = histograms.summary_ms(histograms.decode(result.histograms["scheduled"]))
    assert scheduled.max == pytest.approx(25.0, rel=0.002)
    assert histograms.summary_ms(histograms.decode(result.histograms["dispatch_delay"])).max == pytest.approx(
        2.0, rel=0.002
    )


@pytest.mark.parametrize(
    "status,cls", [(413, "too_large"), (422, "too_large"), (429, "429"), (424, "424"), (401, "4xx"), (503, "5xx")]
)
def test_status_classes(status, cls):
    assert status_outcome(status) == cls


def _share(cpu_s: float, wall_s: float, handled: int, idle_cpu_s: float = 0.0, lag_ms: float = 0.0):
    from bench.load.share import ShareResult

    lag = histograms.encode(histograms.from_values(np.full(100, int(lag_ms * 1000)))) if lag_ms else None
    return ShareResult(worker=0, cpu_s=cpu_s, wall_s=wall_s, handled=handled, idle_cpu_s=idle_cpu_s, loop_lag=lag)


def test_a_busy_machine_does_not_make_the_client_saturated():
    """Descheduled by other jobs (loop lag 40 ms) while using 20% of a core: the machine is busy, the client is
    not at its ceiling; the lag is reported, the point stays gated."""
    from bench.load.merge import client_view

    view = client_view([_share(cpu_s=0.2, wall_s=1.0, handled=1000, lag_ms=40.0)])
    assert view.saturated is False and view.loop_lag_p99_ms == pytest.approx(40.0, rel=0.01)
    assert view.cpu_per_request_us == pytest.approx(200.0)  # 0.2 s of CPU for 1,000 requests
    assert view.ceiling_requests_per_s == pytest.approx(5000.0)  # what a whole core would carry
    assert view.utilization == pytest.approx(0.2)  # 1,000 requests/s of a 5,000 ceiling


def test_a_client_at_its_ceiling_is_saturated_and_waiting_is_not_work():
    from bench.load.merge import client_view

    assert client_view([_share(cpu_s=0.95, wall_s=1.0, handled=50_000)]).saturated is True
    # An open loop that yields 0.9 s of CPU waiting for its intended send times: 5% of a core is work.
    view = client_view([_share(cpu_s=0.95, wall_s=1.0, handled=500, idle_cpu_s=0.9)])
    assert view.saturated is False and view.utilization == pytest.approx(0.05)
    # Two workers: the busiest one decides; the ceiling is the sum of theirs.
    two = client_view([_share(cpu_s=0.1, wall_s=1.0, handled=1000), _share(cpu_s=0.92, wall_s=1.0, handled=1000)])
    assert two.saturated is True and two.ceiling_requests_per_s == pytest.approx(10_000 + 1_000 / 0.92, rel=1e-3)


def test_the_measured_window_runs_to_the_intended_end_or_the_last_request_whichever_is_later():
    from bench.load.merge import measured_window
    from bench.load.points import PointConfig
    from bench.load.share import ShareResult

    def shares(*ends):
        return [ShareResult(worker=i, first_measured=100.0, last_end=end) for i, end in enumerate(ends)]

    closed = PointConfig(op="embed", duration_s=4.0)
    assert measured_window(closed, shares(102.0, 101.0)) == pytest.approx(4.0)  # the last good answer at 2 s: still 4 s
    assert measured_window(closed, shares(130.5, None)) == pytest.approx(30.5)  # a timeout 30 s after a send at 0.5 s
    assert measured_window(closed, shares(None)) == pytest.approx(4.0)  # nothing measured: the intended window
    burst = PointConfig(op="embed", loop="burst", burst=10, duration_s=4.0)
    assert measured_window(burst, shares(100.7)) == pytest.approx(0.7)  # a burst: until it drained
    counted = PointConfig(op="embed", duration_s=None, requests=100)
    assert measured_window(counted, shares(103.0, 103.5)) == pytest.approx(3.5)
    # an open loop whose window the driver ended after 1.5 of 4 s (`size` on a failure certain): 1.5 s, not 4
    open_loop = PointConfig(op="embed", loop="open", rate=50.0, duration_s=4.0)
    cut = [replace(share, scheduled_s=1.5) for share in shares(101.2, 101.6)]
    assert measured_window(open_loop, cut) == pytest.approx(1.6)  # its last answer came after the cut
    assert measured_window(open_loop, [replace(share, scheduled_s=4.0) for share in shares(101.2)]) == 4.0


@pytest.mark.parametrize(
    "requests, status, says",
    [
        ({"sent": 0, "ok": 0, "errors": {}, "unsent": 0}, "failed", "nothing measured"),
        ({"sent": 10, "ok": 0, "errors": {"429": 10}, "unsent": 0}, "failed", "no request succeeded: 10 sent (429 10)"),
        (
            {"sent": 801, "ok": 349, "errors": {"timeout": 452}, "unsent": 0},
            "errors",
            "error rate 56.43% > 0.10% (timeout 452)",
        ),
        ({"sent": 10_000, "ok": 9_995, "errors": {"5xx": 5}, "unsent": 0}, "ok", None),
        ({"sent": 100, "ok": 100, "errors": {}, "unsent": 5}, "errors", "unsent 5"),
    ],
)
def test_points_are_judged_by_what_they_measured(requests, status, says):
    from bench.load.points import judge
    from bench.results.schema import LoadRequests

    got, problem = judge(LoadRequests(**requests), 0.001)
    assert got == status and (problem is None if says is None else says in problem)


def test_load_and_identity_measure_a_length_with_one_counter():
    """Without a tokenizer both count words (not identity's old 1.3 x words + 2); with one, the model's tokens."""
    from bench.datasets.texts import Tokenizer, word_counts
    from bench.load.workload import token_counter
    from tests.harness.models import minilm_path

    texts = ["one two  three", "numpy.array(x)\treturns an\narray", ""]
    count, source = token_counter(None)
    assert source == "words" and count(texts) == word_counts(texts).tolist() == [3, 4, 0]
    count, source = token_counter(minilm_path())
    tokens = count(texts)
    assert source == "tokenizer" and tokens == Tokenizer(minilm_path()).lengths(texts).tolist()
    assert tokens[2] == 2 and tokens[0] == 5  # [CLS] one two three [SEP]: special tokens counted


def test_a_pools_stop_time_ends_an_open_share_and_what_was_never_scheduled_is_not_unsent():
    """The driver stops a share planned for a minute: every request due before the stop is sent and counted, none
    after it, and none is `unsent` (an in-process call: no server)."""
    import threading
    from concurrent.futures import ThreadPoolExecutor
    from time import perf_counter

    from bench.load import stop_time, worker

    offsets = open_schedule(Arrival("poisson"), 200.0, 60.0, None, seed=2)
    start = perf_counter() + 0.05
    plan = SharePlan(0, "open", None, [], [1], [1], start, 0.0, 60.0, offsets=offsets, call=lambda index: None)
    stop = stop_time.StopTime()
    stop_time.install_stop(stop)
    try:
        with ThreadPoolExecutor(1) as pool:
            share = pool.submit(worker.run_share, plan)
            threading.Event().wait(0.3)  # let it send for a while
            stop.set(perf_counter())
            result = share.result(timeout=30)
    finally:
        stop_time.install_stop(None)
    due_before_stop = int(np.count_nonzero(start + offsets < stop.get()))
    assert 0 < due_before_stop < len(offsets)
    assert result.sent == result.ok == due_before_stop and result.unsent == 0


def test_a_workload_is_cut_to_a_length_once():
    """Every point of a sweep or a sizing run asks for the same length: the cut (hundreds of token counts, seconds
    on a busy machine, made while the point waits to start) is made once and the same texts come back."""
    from bench.load.workload import Workload

    counted: list[int] = []

    def tokens(texts: list[str]) -> list[int]:
        return [len(t.split()) + 2 for t in texts]  # two special tokens, as a tokenizer counts them

    def count(texts: list[str]) -> list[int]:
        counted.append(len(texts))
        return tokens(texts)

    texts = [" ".join(f"w{i}_{j}" for j in range(40)) for i in range(16)]
    workload = Workload(texts, texts[:4], "inline", count, "tokenizer")
    first = workload.with_length(16)
    calls = len(counted)
    assert calls > 0 and max(tokens(first.texts)) <= 16
    assert workload.with_length(16).texts == first.texts and len(counted) == calls
    assert workload.with_length(8).texts != first.texts and len(counted) > calls


def test_the_load_client_cuts_an_answer_at_its_cap_and_counts_it_a_bad_response():
    """Issue 33: valid vectors then endless whitespace. The load engine's own HTTP client (httptools) stops at the
    share's cap, fails that request as `bad_response` naming the cap, and drops the connection."""
    import asyncio

    from bench.core.http import MIB, BodyCap
    from bench.load.client import AnswerTooLarge, Pool, encode_request, target_of
    from bench.load.recorder import Outcome, error_class

    sent = [0]

    async def endless(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000\r\n\r\n[[0.5, 0.25]]")
        blank = b" " * (256 * 1024)
        try:
            while sent[0] < 256 * MIB:
                writer.write(blank)
                await writer.drain()
                sent[0] += len(blank)
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def run() -> BaseException:
        server = await asyncio.start_server(endless, "127.0.0.1", 0)
        target = target_of(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/embed")
        pool = Pool(target, timeout_s=30.0, cap=BodyCap(MIB, "an embedding answer of 1 text"))
        try:
            await pool.request(encode_request(target, "POST", b"{}", {}))
        except Exception as exc:  # the failure is what is under test
            return exc
        finally:
            pool.close()
            server.close()
        raise AssertionError("an endless answer was read as a whole")

    failure = asyncio.run(run())
    assert isinstance(failure, AnswerTooLarge) and error_class(failure) == Outcome.BAD_RESPONSE
    assert "answered more than 1.0 MiB, the cap for an embedding answer of 1 text" in str(failure)
    assert sent[0] < 64 * MIB  # cut near the cap (plus socket buffers), not read to the server's 256 MiB

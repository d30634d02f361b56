"""Sizing logic over load points from a model server whose saturation rate is known analytically."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

from bench.load.points import error_rate, point_label
from bench.results.schema import (
    CeilingPoint,
    ClientView,
    Latencies,
    LatencySummary,
    LoadPointRecord,
    LoadRequests,
    Loop,
    Op,
    ServerTimes,
    Throughput,
)
from bench.results.writer import record_line
from bench.sizing.adopt import adopt_measured
from bench.sizing.closed import choose_closed, closed_sweep, slo_texts_per_s
from bench.sizing.economics import Economics
from bench.sizing.recommend import choose_burst, recommend
from bench.sizing.search import SearchRules, judge_probe, remeasured_text, saturation_search
from bench.sizing.slo import Slo, passes, sig3
from bench.sizing.tei import pow2_at_least

CAPACITY = 400.0  # texts/s the model server computes at full load
SERVICE_MS = 20.0  # one request of batch 1 on an idle server; + 2 ms per extra text


def _block(p99: float, mean: float | None = None) -> LatencySummary:
    mean = p99 / 2 if mean is None else mean
    return LatencySummary(p50=mean, p90=p99 * 0.8, p99=p99, p999=p99 * 1.2, max=p99 * 1.5, mean=mean, count=100)


def point(
    loop: str,
    batch: int,
    texts_s: float,
    service_p99: float,
    scheduled_p99: float | None = None,
    *,
    concurrency: int | None = None,
    rate: float | None = None,
    errors: dict | None = None,
    sent: int = 1000,
    unsent: int = 0,
    burst: int | None = None,
    duration: float = 5.0,
    length: int | None = 128,
) -> LoadPointRecord:
    errors = errors or {}
    ok = sent - sum(errors.values())
    return LoadPointRecord(
        endpoint="srv",
        op=Op.EMBED,
        loop=Loop(loop),
        batch=batch,
        concurrency=concurrency,
        rate=rate,
        arrival="constant" if loop == "open" else None,
        duration_s=duration,
        requests=LoadRequests(sent=sent, ok=ok, errors=errors, unsent=unsent),
        throughput=Throughput(texts_s / batch, texts_s, texts_s * 128, "tokenizer"),
        latency_ms=Latencies(
            service=_block(service_p99),
            scheduled=_block(scheduled_p99) if scheduled_p99 else None,
            dispatch_delay=_block(0.1) if loop == "open" else None,
        ),
        server_ms=ServerTimes(),
        server_metrics=None,
        client=ClientView(workers=1, cpu_percent=10.0, saturated=False),
        burst=burst,
        length=length,
    )


def service_ms(batch: int) -> float:
    return SERVICE_MS + 2.0 * (batch - 1)


def open_point(rate: float, batch: int = 8) -> LoadPointRecord:
    """M/D/1-like: scheduled p99 = service / (1 - ρ); past capacity the queue grows without bound."""
    rho = rate * batch / CAPACITY
    service = service_ms(batch)
    scheduled = service / (1 - rho) if rho < 1 else 1e6
    return point("open", batch, min(rate * batch, CAPACITY), service, scheduled, rate=rate)


def true_saturation(slo_ms: float, batch: int = 8) -> float:
    """Solve service / (1 - rate·batch/C) = SLO for the rate."""
    return (1 - service_ms(batch) / slo_ms) * CAPACITY / batch


def test_search_finds_the_analytic_saturation_rate_within_tolerance():
    slo = Slo(100.0)
    truth = true_saturation(100.0)  # 33 requests/s
    result = saturation_search(open_point, start_rate=5.0, slo=slo, rules=SearchRules(tolerance=0.05))
    assert result.rate <= truth < result.first_failure
    assert (result.first_failure - result.rate) / result.rate <= 0.05
    assert truth / result.rate - 1 <= 0.05
    rates = [p.rate for p in result.probes]
    assert rates[:5] == [5.0, 10.0, 20.0, 40.0, 30.0]  # grew ×2 until 40 failed, then bisected
    assert len(result.probes) <= 12
    assert result.point.rate == result.rate and result.point.loop == "open"


def test_search_shrinks_when_the_start_rate_already_fails():
    result = saturation_search(open_point, start_rate=400.0, slo=Slo(100.0))
    truth = true_saturation(100.0)
    assert result.rate <= truth < result.first_failure
    assert [p.rate for p in result.probes][:5] == [400.0, 200.0, 100.0, 50.0, 25.0]


def test_no_rate_meets_an_slo_below_the_service_time():
    result = saturation_search(open_point, start_rate=10.0, slo=Slo(5.0), rules=SearchRules(max_probes=8))
    assert result.rate is None and result.point is None
    assert len(result.probes) == 8 and not any(p.passed for p in result.probes)


@pytest.mark.parametrize(
    ("stall", "stop_at", "expected"),
    [
        # a signal as the 4th measurement (40/s, a new probe) is judged: 40/s joins as a failure, the interval holds
        ({}, 4, [(5.0, True, 1), (10.0, True, 1), (20.0, True, 1), (40.0, False, 1)]),
        # a signal as 20/s's re-measure (after a stalled first one) is judged: it joins 20/s's probe, which passes
        # on it (the majority rule would still take a third, which was never measured)
        ({20.0}, 4, [(5.0, True, 1), (10.0, True, 1), (20.0, True, 2)]),
    ],
)
def test_a_point_measured_before_a_signal_joins_the_probes(stall, stop_at, expected):
    """Ctrl-C between a point being measured (and written) and its probe being updated: the point still counts
    in the answer, as the probe or re-measure it was (nothing already measured is lost)."""
    taken: list[LoadPointRecord] = []

    def measure(rate: float) -> LoadPointRecord:
        p = open_point(rate)
        if rate in stall and not any(t.rate == rate for t in taken):
            p.latency_ms.scheduled = _block(5000.0)
        taken.append(p)
        return p

    def unsteady(p: LoadPointRecord) -> str | None:
        if len(taken) == stop_at:
            raise KeyboardInterrupt  # the signal lands after the measurement, before its verdict is kept
        return None

    probes: list = []
    with pytest.raises(KeyboardInterrupt):
        saturation_search(measure, start_rate=5.0, slo=Slo(100.0), probes=probes, unsteady=unsteady)
    adopt_measured(probes, taken, Slo(100.0), lambda p: None)
    assert [(p.rate, p.passed, p.measured) for p in probes] == expected
    held = [m for p in probes for m in (*p.earlier, p.point)]
    assert [id(m) for m in held] == [id(m) for m in taken]  # every measurement, once, in order
    adopt_measured(probes, taken, Slo(100.0), lambda p: None)  # adopting again changes nothing
    assert [(p.rate, p.passed, p.measured) for p in probes] == expected


def test_a_confirmation_measured_before_a_signal_confirms_the_answer():
    result = saturation_search(open_point, start_rate=5.0, slo=Slo(100.0), rules=SearchRules(confirm=False))
    again = open_point(result.rate)
    again.latency_ms.scheduled = _block(5000.0)
    probes = result.probes
    adopt_measured(probes, [m for p in probes for m in (*p.earlier, p.point)] + [again], Slo(100.0), lambda p: None)
    answer = next(p for p in probes if p.rate == result.rate)
    assert answer.confirmation is again and answer.confirmed is False and len(probes) == len(result.probes)


def test_errors_over_the_limit_fail_a_probe_even_under_the_latency_slo():
    def measure(rate: float) -> LoadPointRecord:
        p = open_point(rate)
        if rate > 12:  # a server that answers 429 past 12 requests/s, quickly
            p.requests.errors = {"429": 20}
        return p

    result = saturation_search(
        measure, start_rate=5.0, slo=Slo(100.0, max_error_rate=0.001), rules=SearchRules(tolerance=0.02)
    )
    assert 11.7 < result.rate <= 12 < result.first_failure


def test_a_failing_probe_is_measured_again_and_the_majority_of_three_decides():
    """One unlucky probe (a stall on a busy machine at 20/s) no longer caps the saturation rate; a probe that
    fails twice still fails; a rate that fails, passes, then fails again fails (the last measurement alone
    would have passed it); the recommendation and the sizing record say which probes were re-measured."""
    calls: list[float] = []
    stalls = {20.0: [1], 15.0: [1, 3]}  # the measurements (1st, 2nd, ...) at a rate that stall

    def measure(rate: float) -> LoadPointRecord:
        calls.append(rate)
        p = open_point(rate)
        if calls.count(rate) in stalls.get(rate, []):
            p.latency_ms.scheduled = _block(5000.0)
        return p

    slo = Slo(100.0)
    result = saturation_search(measure, start_rate=5.0, slo=slo, rules=SearchRules(tolerance=0.05))
    truth = true_saturation(100.0)
    assert result.rate <= truth < result.first_failure and truth / result.rate - 1 <= 0.05
    assert calls[:6] == [5.0, 10.0, 20.0, 20.0, 20.0, 40.0]  # 20/s: failed, passed, passed — then on up
    outcomes = {p.rate: (p.passed, p.measured) for p in result.probes if p.earlier}
    assert outcomes[20.0] == (True, 3) and outcomes[40.0] == (False, 2)  # really past saturation: fails twice
    assert calls.count(40.0) == 2
    flip = judge_probe(measure, 15.0, slo)  # failed, passed, failed: the majority fails it
    assert (flip.passed, flip.measured) == (False, 3) and calls[-3:] == [15.0] * 3
    line = next(x for x in recommend([], result, slo) if x.setting.startswith("saturation rate"))
    assert "re-measured after failing: 20/s (passed twice), 40/s (failed again)" in line.why
    assert "(passed, then failed)" in remeasured_text([flip])
    # the sizing record's probes say which were re-measured and how often; a probe measured once is written as before
    from bench.sizing.record import saturation_summary

    probes = saturation_summary(result, slo).probes
    assert [(p.remeasured, p.measurements) for p in probes] == [
        (p.measured > 1, p.measured if p.measured > 1 else None) for p in result.probes
    ]
    lines = [json.loads(record_line(p)) for p in probes]
    assert [line.get("measurements") for line in lines] == [p.measurements for p in probes]
    assert [line.get("remeasured") for line in lines] == [True if p.remeasured else None for p in probes]


def test_unsent_requests_count_as_errors():
    p = point("open", 8, 100, 20, 30, rate=10, sent=990, unsent=10)
    assert error_rate(p.requests) == pytest.approx(10 / 1000)


def closed_model(batch: int, concurrency: int) -> LoadPointRecord:
    """Throughput rises with concurrency until the server's capacity, latency with the queue."""
    alone = batch / (service_ms(batch) / 1000)
    texts = min(alone * concurrency, CAPACITY * (1 + 0.1 * math.log2(batch)))
    latency = concurrency * batch / texts * 1000
    return point("closed", batch, texts, latency * 1.3, concurrency=concurrency)


def test_closed_sweep_stops_when_texts_per_second_stop_rising():
    points = closed_sweep(closed_model, [1, 8], max_concurrency=64, slo=Slo(100.0))
    conc = {b: [p.concurrency for p in points if p.batch == b] for b in (1, 8)}
    # batch 1: 50 texts/s per user up to 400 -> rises to c=8, flat at 16: stops there
    assert conc[1] == [1, 2, 4, 8, 16]
    assert conc[8] == [1, 2, 4, 8]
    choice = choose_closed(points, Slo(100.0))
    assert (choice.peak.batch, choice.peak.concurrency) == (8, 4)  # 520 texts/s; c=8 adds nothing
    # Batch 8 is 30% faster closed-loop (520 vs 400 texts/s), but in the open loop (open_point) batch 1 serves more
    # texts/s at the SLO: its requests leave more of the 100 ms for queueing. The choice ranks by that.
    at_slo = {b: true_saturation(100.0, b) * b for b in (1, 8)}
    assert at_slo[1] > at_slo[8]
    assert (choice.best.batch, choice.best.concurrency) == (1, 8)  # batch 1's best texts/s under the SLO
    assert [p.batch for p, _ in choice.ranked] == [1, 8]
    tight = choose_closed(points, Slo(70.0))
    assert (tight.peak.batch, tight.peak.concurrency) == (8, 4)  # the server's throughput ignores the SLO
    assert tight.best.batch == 1 and true_saturation(70.0, 1) > true_saturation(70.0, 8) * 8


def test_batch_is_chosen_on_texts_per_second_at_the_slo_not_raw():
    """The user's endpoint: ~10 texts/s; batch 8 is 21% faster on raw texts/s with the queue kept full, but each
    of its requests takes 0.8 s of a 2 s p99 SLO, so random arrivals leave it little room: batch 1 is chosen."""
    batch1 = point("closed", 1, 8.8, 250.0, concurrency=2)  # 8.8 requests/s
    batch8 = point("closed", 8, 10.65, 1600.0, concurrency=2)  # 1.33 requests/s of 8
    slo = Slo(2000.0)
    choice = choose_closed([batch8, batch1], slo)
    assert choice.best is batch1
    queueing = math.log(100) / (2 * 2.0)  # 1.15 requests/s kept for queueing under a 2 s p99
    assert slo_texts_per_s(batch8, slo) == pytest.approx((10.65 / 8 - queueing) * 8, rel=1e-9)  # 1.44 texts/s
    assert slo_texts_per_s(batch1, slo) == pytest.approx(8.8 - queueing, rel=1e-9)  # 7.65 texts/s
    line = recommend([batch8, batch1], None, slo)[0]
    assert line.value == "1 / 2" and "batch 8: 1.44 (raw 10.7)" in line.why


def test_closed_sweep_stops_at_errors():
    def measure(batch: int, concurrency: int) -> LoadPointRecord:
        p = closed_model(batch, concurrency)
        if concurrency >= 4:
            p.requests.errors = {"429": 50}
        return p

    points = closed_sweep(measure, [1], max_concurrency=64, slo=Slo(100.0))
    assert [p.concurrency for p in points] == [1, 2, 4]
    assert choose_closed(points, Slo(100.0)).peak.concurrency == 2


def bursts() -> list[LoadPointRecord]:
    return [
        point("burst", 1, 60, 20, concurrency=0, burst=256, errors={"429": 200}, sent=256),
        point("burst", 32, 300, 200, concurrency=4, burst=256, sent=8, duration=256 / 300),
        point("burst", 32, 305, 200, concurrency=0, burst=256, sent=8, duration=256 / 305),
        point("burst", 8, 250, 50, concurrency=4, burst=256, sent=32, duration=256 / 250),
    ]


def test_burst_choice_is_the_fastest_drain_without_errors_preferring_a_cap():
    chosen = choose_burst(bursts(), Slo(100.0))
    # 305 vs 300 texts/s is within 2%: the capped one leaves room for queries
    assert (chosen.batch, chosen.concurrency) == (32, 4)


def test_recommendation_lines_name_their_points():
    slo = Slo(100.0)
    closed = closed_sweep(closed_model, [1, 8], 64, slo)
    saturation = saturation_search(open_point, start_rate=5.0, slo=slo)
    ceiling = [
        CeilingPoint(
            model="m",
            model_fingerprint="f",
            op="embed",
            device="cuda",
            device_name="NVIDIA H200",
            dtype="float16",
            batch=b,
            length=128,
            tokens_per_text=128,
            max_seq_length=256,
            texts=100,
            seconds=1,
            texts_per_s=tps,
            tokens_per_s=tps * 128,
            token_flops=1,
            achieved_tflops=1,
            peak_tflops=None,
            peak_source=None,
            peak_fraction=None,
            texts_fingerprint="x",
        )
        for b, tps in ((1, 100.0), (32, 1000.0))
    ]
    lines = recommend(closed + bursts(), saturation, slo, Economics(target_rps=100, gpu_hourly_usd=3.6), ceiling)
    by = {line.setting: line for line in lines}
    sat_label = point_label(saturation.point)
    assert by["client batch / concurrency"].value == "1 / 8"  # the most texts/s at the SLO (see the closed sweep)
    offered = by["saturation rate (goodput, offered)"]
    assert offered.evidence == [sat_label] and offered.value == f"{sig3(saturation.rate)} requests/s"
    assert "texts/s" not in offered.value + offered.why  # offered and achieved rates never share a sentence
    achieved = by["answered at the saturation rate (achieved)"]
    assert achieved.value == f"{sig3(saturation.point.throughput.texts_per_s)} texts/s"
    assert "offered" not in achieved.why
    assert by["TEI --max-client-batch-size"].value == "32"  # Open WebUI's burst batch is the larger
    assert by["Open WebUI RAG_EMBEDDING_BATCH_SIZE"].value == "32"
    assert by["Open WebUI RAG_EMBEDDING_CONCURRENT_REQUESTS"].value == "4"
    assert by["replicas for --target-rps"].value == str(math.ceil(100 / saturation.rate))
    texts_s = saturation.point.throughput.texts_per_s
    assert by["cost per 1M texts"].value == f"${sig3(3.6 / (texts_s * 3600) * 1e6)}"
    assert by["cost per 1M tokens"].value == f"${sig3(3.6 / (texts_s * 128 * 3600) * 1e6)}"
    peak = choose_closed(closed, slo).peak
    assert by["fraction of the in-process ceiling"].value == f"{sig3(peak.throughput.texts_per_s / 1000.0 * 100)}%"
    assert "over 100%" not in by["fraction of the in-process ceiling"].why
    # a server faster than the in-process reference: the fraction over 100% says why in one line
    slow_ceiling = [replace(c, texts_per_s=c.texts_per_s / 10) for c in ceiling]
    (over,) = [x for x in recommend(closed, None, slo, ceiling=slow_ceiling) if x.setting.startswith("fraction")]
    assert over.value == f"{sig3(peak.throughput.texts_per_s / 100.0 * 100)}%" and "over 100%: the server" in over.why
    # permits: the largest of users × batch, Little's law at saturation, Open WebUI's burst in flight (4 × 32)
    assert int(by["TEI --max-concurrent-requests"].value) == 512
    assert int(by["TEI --max-batch-tokens"].value) == 16384
    assert "below TEI's default" not in by["TEI --max-client-batch-size"].why  # 32: the default itself
    (small,) = [x for x in recommend(closed, saturation, slo) if x.setting == "TEI --max-client-batch-size"]
    # clients of batch 1 (Open WebUI's batch not measured): keep the default, a limit of 1 would refuse its calls
    assert small.value == "32" and "they send at most 1, below TEI's default 32: keep the default" in small.why
    openai = recommend(closed, saturation, slo, kind="openai")
    assert not [x for x in openai if x.setting.startswith("TEI --")]
    assert [x.why for x in openai if x.setting == "TEI settings"] == [
        "the endpoint is openai, not TEI: TEI's flags do not apply"
    ]
    for line in lines:
        assert line.evidence, line.setting
        assert all(isinstance(e, str) and e for e in line.evidence)


def test_recommendation_says_what_is_missing():
    slo = Slo(1.0)  # nothing meets 1 ms
    closed = closed_sweep(closed_model, [1], 4, slo)
    saturation = saturation_search(open_point, 5.0, slo, rules=SearchRules(max_probes=3))
    lines = recommend(closed, saturation, slo, Economics(target_rps=10, gpu_hourly_usd=2.0), ceiling=[])
    by = {line.setting: line for line in lines}
    assert by["batch / concurrency"].value == "none meets the SLO"
    assert by["saturation rate"].value.startswith("below ")  # no pass: under the lowest failure, never "none yet"
    assert by["replicas / cost"].value == "not determined"
    assert "no burst workload" in by["Open WebUI RAG_EMBEDDING_BATCH_SIZE / RAG_EMBEDDING_CONCURRENT_REQUESTS"].why
    assert "no embed point at length 128" in by["fraction of the in-process ceiling"].why


def test_a_closed_loop_that_answered_nothing_is_not_measured_rather_than_over_the_slo():
    """Every closed point measured nothing (or nothing succeeded): no latency was judged, so the line says what is
    missing instead of "none meets the SLO"; nothing measured at all says so too."""
    slo = Slo(1000.0)
    failed = [point("closed", 8, 0.0, 500.0, concurrency=1, errors={"timeout": 1000})]
    (line,) = [x for x in recommend(failed, None, slo) if x.setting == "batch / concurrency"]
    assert line.value == "not measured" and line.why == "no closed-loop point had a successful request"
    (none,) = [x for x in recommend([], None, slo) if x.setting == "batch / concurrency"]
    assert none.value == "not measured" and none.why == "no closed-loop point was measured"


def test_pow2():
    assert [pow2_at_least(v) for v in (0, 1, 2, 3, 512, 513)] == [1, 1, 2, 4, 512, 1024]


def test_permits_cover_an_unlimited_open_webui_burst():
    slo = Slo(100.0)
    big = point("burst", 32, 500, 300, concurrency=0, burst=4096, sent=128, duration=4096 / 500)
    lines = recommend([closed_model(8, 2), big], None, slo)
    (permits,) = [line for line in lines if line.setting == "TEI --max-concurrent-requests"]
    assert permits.value == "4096"  # all 128 requests of 32 inputs at once
    assert point_label(big) in permits.evidence and "Open WebUI" in permits.why


def test_sig3_rounds_to_what_a_figure_can_hold():
    assert [sig3(x) for x in (7.89366, 146.1, 12345.0, 20.0, 0.012345, 2.5, 0.0)] == [
        "7.89",
        "146",
        "12,300",
        "20",
        "0.0123",
        "2.5",
        "0",
    ]


def test_order_statistic_interval_of_a_percentile():
    """The distribution-free interval: X(l) ≤ ξ_q ≤ X(u) with P ≥ 95% for B(n, q) in [l, u−1]; below 368 requests
    the slowest one cannot bound a p99 from above (0.99^n > 2.5%)."""
    from scipy.stats import binom

    from bench.sizing.verdict import order_ranks, requests_to_bound

    assert requests_to_bound(99.0) == 368 and 0.99**368 <= 0.025 < 0.99**367
    for n in (40, 367):
        assert order_ranks(n, 99.0)[1] is None
    low, high = order_ranks(1000, 99.0)
    assert low is not None and high is not None and low < 990 < high <= 1000
    coverage = binom.cdf(high - 1, 1000, 0.99) - binom.cdf(low - 1, 1000, 0.99)
    assert coverage >= 0.95
    assert binom.cdf(high - 2, 1000, 0.99) - binom.cdf(low - 1, 1000, 0.99) < 0.975  # u is the smallest such


def test_a_probe_verdict_says_how_many_requests_it_rests_on():
    from array import array

    from bench.load.histograms import encode, from_values, summary_ms
    from bench.sizing.verdict import verdict

    few = open_point(10.0)
    histogram = from_values(array("d", [1000.0 * (i + 1) for i in range(40)]))
    few.histograms = {"scheduled": encode(histogram)}
    few.latency_ms.scheduled = summary_ms(histogram)
    judged = verdict(few, "scheduled", Slo(100.0))
    assert judged.requests == 40 and judged.high_ms is None
    assert judged.value_ms == pytest.approx(40.0, rel=1e-3)  # the 40th of 40: their slowest
    text = judged.text(Slo(100.0), "scheduled")
    assert "from 40 requests" in text and "too few for a p99" in text and "368 would bound it" in text
    many = open_point(10.0)
    many.histograms = {"scheduled": encode(from_values(array("d", [float(i + 1) * 10 for i in range(2000)])))}
    judged = verdict(many, "scheduled", Slo(100.0, percentile=95.0))
    assert judged.requests == 2000 and judged.low_ms < judged.value_ms < judged.high_ms
    assert judged.value_ms == pytest.approx(19.0, rel=2e-3)  # the 1900th of 2000 values of 10 µs each
    assert "from 2000 requests (95% interval" in judged.text(Slo(100.0, percentile=95.0), "scheduled")


def test_the_slo_can_be_on_any_percentile():
    """p90 = 0.8 × p99 in these points: a p90 SLO passes a probe the same latency fails at p99."""
    p = open_point(30.0)
    p99 = p.latency_ms.scheduled.p99
    assert not passes(p, Slo(p99 * 0.9), "scheduled")
    assert passes(p, Slo(p99 * 0.9, percentile=90.0), "scheduled")


def test_budget_ends_the_search_with_an_interval_when_a_rate_failed():
    """A clock that advances 10 s per measurement and a 45 s budget: the fifth measurement does not fit. A rate
    failed above the best pass, so the answer is the interval between them — not "a lower bound", which it is only
    while no rate has failed."""
    from bench.sizing.budget import Budget, BudgetSpent
    from bench.sizing.search import saturation_from

    now = [0.0]
    budget = Budget(45.0, clock=lambda: now[0])
    probes: list = []

    def measure(rate: float) -> LoadPointRecord:
        budget.require(10.0)
        now[0] += 10.0
        return open_point(rate)

    with pytest.raises(BudgetSpent):
        saturation_search(measure, start_rate=5.0, slo=Slo(100.0), probes=probes)
    spent = "the 45 s budget (--max-time) was spent"
    answer = saturation_from(probes, spent)
    assert [p.rate for p in probes] == [5.0, 10.0, 20.0, 40.0]  # 40/s failed once; its re-measure did not fit
    assert answer.rate == 20.0 and answer.first_failure == 40.0
    assert answer.lower_bound is None and answer.stopped == spent
    offered = recommend([], answer, Slo(100.0))[1]
    assert offered.value == "20–40 requests/s" and "lower bound" not in offered.why
    assert "the saturation rate lies between them" in offered.why
    assert "passed at 5, 10, 20; failed at 40 requests/s offered" in offered.why
    assert saturation_from(probes).lower_bound is None  # finished between a pass and a failure: no bound said
    below = saturation_from(probes[:3], spent)  # stopped before any rate failed: only then a lower bound
    assert below.lower_bound == spent and recommend([], below, Slo(100.0))[1].value == "≥ 20 requests/s"


def test_search_outlook_counts_down_the_measurements_expected():
    heard: list[int] = []
    saturation_search(open_point, start_rate=5.0, slo=Slo(100.0), outlook=heard.append)
    # one more growth, 5 bisections, and the answer's confirmation at the end
    assert heard[0] == math.ceil((1 + math.ceil(math.log2(1 / 0.05))) * 1.5) + 1
    assert heard[-1] <= 3 and all(n >= 1 for n in heard)


def test_capacity_change_between_probes_is_said():
    """The answer's rate, measured again at the end, fails: it does not stand (the answer is the rate that passed
    below it, 20/s the lowest failure); the achieved rate at one offered rate drops 40%."""
    from bench.sizing.search import capacity_changes

    calls: list[float] = []

    def measure(rate: float) -> LoadPointRecord:  # capacity halves after the fourth measurement
        calls.append(rate)
        return open_point(rate if len(calls) <= 4 else rate * 2)

    result = saturation_search(measure, start_rate=5.0, slo=Slo(100.0), rules=SearchRules(tolerance=0.05))
    assert result.rate == 10.0 and result.first_failure == 20.0  # 20/s passed before the change, failed after
    assert [p.confirmed for p in result.probes if p.rate == 20.0] == [False]
    assert any(
        "20 requests/s offered passed, then failed when measured again at the end" in c for c in result.capacity_changes
    )
    line = next(x for x in recommend([], result, Slo(100.0)) if x.setting == "capacity change between probes")
    assert line.value == "seen" and "measure again" in line.why
    steady = saturation_search(open_point, start_rate=5.0, slo=Slo(100.0))
    assert steady.capacity_changes == []
    before = open_point(60.0)
    after = open_point(60.0)
    after.throughput = Throughput(0.6 * before.throughput.requests_per_s, 0.0, 0.0, "tokenizer")
    from bench.sizing.search import Probe

    drop = capacity_changes([Probe(60.0, after, False, earlier=[before])])
    assert any("achieved rate fell from" in c and "(40% less)" in c for c in drop)


def test_targets_in_texts_and_tokens_per_second():
    slo = Slo(100.0)
    saturation = saturation_search(open_point, start_rate=5.0, slo=slo)
    rate, batch = saturation.rate, saturation.point.batch
    for economics, setting, per_replica in (
        (Economics(target_texts_per_s=1000.0), "replicas for --target-texts-per-s", rate * batch),
        (Economics(target_tokens_per_s=128_000.0), "replicas for --target-tokens-per-s", rate * batch * 128),
    ):
        goal = economics.target_texts_per_s or economics.target_tokens_per_s
        (line,) = [x for x in recommend([], saturation, slo, economics) if x.setting == setting]
        assert line.value == str(math.ceil(goal / per_replica)) and "offered per replica at the SLO" in line.why


def test_the_console_says_a_p99_on_too_few_answers_is_insufficient_not_no_success():
    from dataclasses import replace

    from bench.commands.size_console import _figures

    few = point("closed", 1, 9.7, 105.0, concurrency=1, sent=40)
    few = replace(few, latency_ms=replace(few.latency_ms, service=replace(_block(105.0), p99=None, count=40)))
    assert "service p99 insufficient (n=40)" in _figures(few) and "no success" not in _figures(few)
    none = replace(few, latency_ms=replace(few.latency_ms, service=None))
    assert "service p99 - (no success)" in _figures(none)


def test_the_console_names_the_slos_percentile():
    """A p95 SLO: each point's progress line gives its p95, not a p99 the SLO does not ask for."""
    from array import array

    from bench.commands.size_console import _figures
    from bench.load.histograms import encode, from_values

    probe = open_point(10.0)
    latencies = encode(from_values(array("d", [1000.0 * (i + 1) for i in range(100)])))
    probe.histograms = {"service": latencies, "scheduled": latencies}
    shown = _figures(probe, 95.0)
    assert "service p95" in shown and "scheduled p95" in shown and "p99" not in shown


def test_capacity_is_the_faster_of_the_achieved_rate_and_a_lone_requests_service_time():
    """A one-slot server of 400 ms: a lone user achieved 2.27/s (the client's gaps between requests count), two
    users 2.06/s; one request's mean service time, 400 ms, says 2.5/s — the capacity the model is built on. A
    multi-slot server's two users achieve more than one request's service time says: that rate is the capacity."""
    from dataclasses import replace

    from bench.sizing.closed import closed_capacity

    def closed(concurrency: int, requests_s: float, mean_ms: float) -> LoadPointRecord:
        p = point("closed", 1, requests_s, mean_ms, concurrency=concurrency)
        assert p.latency_ms.service is not None
        return replace(p, latency_ms=replace(p.latency_ms, service=replace(p.latency_ms.service, mean=mean_ms)))

    one_slot = [closed(1, 2.27, 400.0), closed(2, 2.06, 950.0)]
    assert closed_capacity(one_slot) == pytest.approx(2.5)
    two_slots = [closed(1, 2.27, 400.0), closed(2, 4.4, 440.0)]
    assert closed_capacity(two_slots) == pytest.approx(4.4)

"""`load --interleave`'s paired record: a point's rounds on the baseline (A) and the candidate (B) judged by
`compare`'s limits (--min-throughput-ratio, --max-p99-increase: bench.gate.config checks them, bench.gate.noise
judges) on the paired interval of each ratio (bench/gate/paired.py)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from bench.core.machine import MachineView
from bench.core.resample import CONFIDENCE
from bench.gate import paired
from bench.gate.checks import CountAs
from bench.gate.config import GateConfig
from bench.gate.interleaved import judge_rounds
from bench.gate.points import latency_p99, p99_quantity
from bench.load.points import PointConfig, machine_too_busy, point_label
from bench.results.schema import (
    InterleavedRecord,
    InterleavedRound,
    InterleavedRoundRecord,
    LatencySummary,
    LoadPointRecord,
)
from bench.results.schema.load import InterleavedVerdict

if TYPE_CHECKING:
    from bench.commands.load import LoadPlan
    from bench.commands.load_request import LoadRequest
    from bench.load.interleave import Rounds
    from bench.load.interleave_budget import RoundsRule, SoFar
    from bench.results.store import Results


def round_figures(record: LoadPointRecord, quantity: str) -> dict[str, float | None]:
    """One window's texts/s, p50 and p99 (ms) of the latency that counts; None where it has none. `at_least`: a
    window with answers but too few for a p99, its largest answer (what its p99 is taken as at least)."""
    block: LatencySummary | None = getattr(record.latency_ms, quantity)
    p50 = block.p50 if block is not None else None
    p99 = latency_p99(record.latency_ms, quantity)
    return {
        "texts_per_s": float(record.throughput.texts_per_s),
        "p50": p50,
        "p99": p99,
        "at_least": block.max if block is not None and p99 is None and block.count > 0 else None,
    }


def _ratio(a: float | None, b: float | None) -> float | None:
    return b / a if a and b is not None else None


def round_busy(a: LoadPointRecord, b: LoadPointRecord, scale_ms: float) -> tuple[MachineView | None, str | None]:
    """The host during the round (the busier window's view) and why the round is the machine's (either side's
    client lag past what a figure of `scale_ms`, the round's median request, tolerates); None: carried."""
    views = [r.machine for r in (a, b) if r.machine is not None]
    machine = max(views, key=lambda m: m.load or 0.0) if views else None
    why = machine_too_busy(a, scale_ms) or machine_too_busy(b, scale_ms)
    return machine, why


def busy_scale_ms(
    point: PointConfig,
    p50_a: float | None,
    p50_b: float | None,
    cut: list[float | None] | None,
    limits: dict[str, float | None],
) -> float:
    """The scale a round's client lag is judged on (bench/core/machine.py: 10% of it tolerated). texts/s is a
    count over a slice (a window not cut): a client late by L loses at most L of that time, so its scale is the
    slice. A gated p99 (or p50) is a latency: its scale is the round's median request (the larger side's p50),
    the smaller of the two then."""
    window_ms = 1000 * (point.duration_s or 1.0) / (len(cut) if cut else 1)
    latencies = [v for v in (p50_a, p50_b) if v is not None]
    if limits.get("p99") is None or not latencies:
        return window_ms
    return min(window_ms, max(latencies))


def paired_record(
    point: PointConfig, done: Rounds, config: GateConfig, max_time_s: float | None = None
) -> InterleavedRecord:
    """The rounds (A's i-th window, B's i-th; their slices' texts/s where cut in slices), each figure's paired
    stats and, where compare's limit is given, its verdict. `max_time_s` (a run that looked after every round):
    the anytime-valid intervals. Rounds the machine was too busy for are left out; undecided with too many of
    them, the verdict is `too busy`."""
    quantity = p99_quantity(done.a[0])
    limits = paired.limits_of(config)
    rounds = round_records(point, done, quantity, limits)
    judged = judge_rounds(rounds, limits, sequential=max_time_s is not None)
    return InterleavedRecord(
        baseline=done.a[0].endpoint,
        current=done.b[0].endpoint,
        point=point_label(point),
        latency=quantity,
        rounds=rounds,
        figures=judged.figures,
        verdict=judged.verdict,
        not_judged=paired.not_judged(judged.figures, limits),
        max_time_s=max_time_s,
        stopped=done.stopped,
        confidence=CONFIDENCE,
        false_alarm=paired.FALSE_ALARM,
        power=paired.POWER,
    )


def round_record(point: PointConfig, done: Rounds, config: GateConfig) -> InterleavedRoundRecord:
    """The latest round both sides finished, as the record written when it ends (its too-busy rule as in
    `round_records`: each round's own)."""
    complete = done.complete()
    quantity = p99_quantity(complete.a[0])
    last = round_records(point, complete, quantity, paired.limits_of(config))[-1]
    return InterleavedRoundRecord(complete.a[0].endpoint, complete.b[0].endpoint, point_label(point), quantity, last)


def round_records(
    point: PointConfig, done: Rounds, quantity: str, limits: dict[str, float | None]
) -> list[InterleavedRound]:
    """Each round's figures on both sides, its ratios, its slices' texts/s, its client lag, the host, and
    whether the machine was too busy for it (`round_busy`, on `busy_scale_ms`)."""
    a, b = done.a, done.b
    sides = [(round_figures(x, quantity), round_figures(y, quantity)) for x, y in zip(a, b, strict=True)]
    rounds = [
        InterleavedRound(
            round=i + 1,
            first=first,
            baseline_texts_per_s=fa["texts_per_s"] or 0.0,
            current_texts_per_s=fb["texts_per_s"] or 0.0,
            baseline_p50_ms=fa["p50"],
            current_p50_ms=fb["p50"],
            baseline_p99_ms=fa["p99"],
            current_p99_ms=fb["p99"],
            texts_per_s_ratio=_ratio(fa["texts_per_s"], fb["texts_per_s"]),
            p50_ratio=_ratio(fa["p50"], fb["p50"]),
            p99_ratio=_ratio(fa["p99"], fb["p99"]),
            baseline_slices_texts_per_s=slices_a,
            current_slices_texts_per_s=slices_b,
            baseline_loop_lag_p99_ms=x.client.loop_lag_p99_ms,
            current_loop_lag_p99_ms=y.client.loop_lag_p99_ms,
            current_p99_at_least_ms=fb["at_least"],
        )
        for i, ((fa, fb), first, slices_a, slices_b, x, y) in enumerate(
            zip(sides, done.firsts, done.a_slices, done.b_slices, a, b, strict=True)
        )
    ]
    for r, x, y, (fa, fb), cut in zip(rounds, a, b, sides, done.a_slices, strict=True):
        r.machine, r.too_busy = round_busy(x, y, busy_scale_ms(point, fa["p50"], fb["p50"], cut, limits))
    return rounds


def interleave_command(
    request: LoadRequest, started: float | None = None, checked: LoadPlan | None = None
) -> tuple[list[LoadPointRecord], list[InterleavedRecord]]:
    """Run the interleaved rounds; each endpoint's windows pooled per point and each point's paired record. A
    window that measured nothing raises MeasurementFailed (exit 3) once everything is written. `started`: the
    clock (time.monotonic) when the command began, where `--max-time` counts from; `checked`: the request's plan
    as the CLI or a suite checked it (else checked here)."""
    from bench.commands.load import check_load
    from bench.commands.load_console import raise_if_failed
    from bench.load.interleave import run_interleave
    from bench.load.shares import check_request_memory
    from bench.load.workload import load_workload
    from bench.report import write_report
    from bench.results.lifecycle import Output

    checked = checked or check_load(request)
    plan, config, max_time_s = checked.sweep, checked.gate, checked.max_time_s
    workload = load_workload(request.texts, request.dataset, request.tokenizer)
    check_request_memory(plan.points, workload)
    records: list[LoadPointRecord] = []
    pairs: list[InterleavedRecord] = []

    def pair(point: PointConfig, done: Rounds) -> object:
        pairs.append(paired_record(point, done, config, max_time_s))
        return pairs[-1]

    def judge(point: PointConfig, done: Rounds) -> SoFar:
        return so_far(paired_record(point, done.complete(), config, max_time_s))

    output = Output(
        request.out, request.overwrite, report=write_report, show=show, say=print, progress=True, origin=request.origin
    )
    rules = None
    if max_time_s is not None:  # the rounds' budget: the two windows (warm-ups included) guess the first round
        window_s = 2 * ((plan.base.duration_s or 0.0) + plan.base.warmup_s)
        rules = budget_rule(max_time_s, started if started is not None else time.monotonic(), window_s, config)

    def one_round(point: PointConfig, done: Rounds) -> InterleavedRoundRecord:
        return round_record(point, done, config)

    hooks = (pair, records.append, None, checked.slices, rules, judge, max_time_s, one_round)
    run_interleave(checked.specs, plan, workload, output, *hooks)
    raise_if_failed(records, request.out / "report.html")
    return records, pairs


def show(results: Results) -> None:
    """The load table, then each point's paired verdict and figures, and the points left without one."""
    from bench.commands.load_console import show_points
    from bench.load.interleave import missing_pairs

    show_points(results)
    for record in results.interleaved:
        print("\n".join(paired.describe(record)), flush=True)
    for line in missing_pairs(results):
        print(line, flush=True)


def so_far(record: InterleavedRecord) -> SoFar:
    """Where the rounds stand: decided once every gated figure passed or one failed (the anytime interval: it may
    be looked at after every round), the line saying the interval of each gated figure."""
    from bench.load.interleave_budget import SoFar

    gated = [f for f in record.figures if f.limit is not None]
    shown = gated or record.figures[:1]
    line = "; ".join(
        f"{paired.FIGURE_NAMES[f.figure]} ×{f.ratio.mean:.3f} [{f.ratio.low:.3f}, {f.ratio.high:.3f}]"
        + (f" vs ×{f.limit:g}: {f.verdict}" if f.limit is not None else "")
        for f in shown
    )
    busy = sum(r.too_busy is not None for r in record.rounds)
    line = (line or "no figure yet") + (f" ({busy} rounds too busy, left out)" if busy else "")
    decided = record.verdict in (InterleavedVerdict.PASS, InterleavedVerdict.FAIL)
    return SoFar(decided, line)


def judged_failed(pairs: list[InterleavedRecord], too_busy: str) -> bool:
    """Whether the job's paired verdicts fail it (exit 1, as compare does): a fail, a point that cannot be judged
    (a gated figure no pair measured: no pass), and too busy where `--too-busy fail` says so."""
    failing = {InterleavedVerdict.FAIL, InterleavedVerdict.CANNOT_JUDGE}
    if too_busy == CountAs.FAIL:
        failing.add(InterleavedVerdict.TOO_BUSY)
    return any(p.verdict in failing for p in pairs)


def budget_rule(max_time_s: float, started: float, window_s: float, config: GateConfig) -> Callable[[int], RoundsRule]:
    """Each point's `Budget`: its share of what is left of the job's rounds' time; the time expected said first."""
    from bench.core.progress import console
    from bench.load.interleave_budget import Budget, job_deadline, point_deadline

    def say(line: str) -> None:
        console.print(line, markup=False, highlight=False, soft_wrap=True)

    end = job_deadline(max_time_s, started)
    limits = ", ".join(f"{paired.FIGURE_NAMES[k]} ×{x:g}" for k, x in paired.limits_of(config).items() if x)
    say(
        f"--max-time {max_time_s:g}s: rounds until the anytime 95% interval clears {limits or 'no limit (none given)'} "
        f"either way, for at most {max(end - time.monotonic(), 0):.0f} s of rounds (then the records and the report)"
    )

    def rule_for(points_left: int) -> RoundsRule:
        now = time.monotonic()
        return Budget(point_deadline(end, points_left, now), say, window_s=window_s, max_time_s=max_time_s)

    return rule_for

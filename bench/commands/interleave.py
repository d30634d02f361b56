"""`load --interleave`'s paired record: a point's rounds on the baseline (A) and the candidate (B) judged by
`compare`'s limits (--min-throughput-ratio, --max-p99-increase: bench.gate.config checks them, bench.gate.noise
judges) on the paired interval of each ratio (bench/gate/paired.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bench.core.resample import CONFIDENCE
from bench.gate import paired
from bench.gate.config import GateConfig
from bench.gate.points import latency_p99, p99_quantity
from bench.load.points import PointConfig, point_label
from bench.results.schema import InterleavedRecord, InterleavedRound, LatencySummary, LoadPointRecord

if TYPE_CHECKING:
    from bench.commands.load_request import LoadRequest
    from bench.load.interleave import Rounds


def round_figures(record: LoadPointRecord, quantity: str) -> dict[str, float | None]:
    """One window's texts/s, p50 and p99 (ms) of the latency that counts; None where it has none."""
    block: LatencySummary | None = getattr(record.latency_ms, quantity)
    p50 = block.p50 if block is not None else None
    return {
        "texts_per_s": float(record.throughput.texts_per_s),
        "p50": p50,
        "p99": latency_p99(record.latency_ms, quantity),
    }


def _ratio(a: float | None, b: float | None) -> float | None:
    return b / a if a and b is not None else None


def paired_record(point: PointConfig, done: Rounds, config: GateConfig) -> InterleavedRecord:
    """The rounds (A's i-th window, B's i-th; their slices' texts/s where cut in slices), each figure's paired
    stats and, where compare's limit is given, its verdict."""
    a, b = done.a, done.b
    quantity = p99_quantity(a[0])
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
        )
        for i, ((fa, fb), first, slices_a, slices_b) in enumerate(
            zip(sides, done.firsts, done.a_slices, done.b_slices, strict=True)
        )
    ]
    limits = paired.limits_of(config)
    figures, verdict = paired.judged_figures(rounds, limits)
    return InterleavedRecord(
        baseline=a[0].endpoint,
        current=b[0].endpoint,
        point=point_label(point),
        latency=quantity,
        rounds=rounds,
        figures=figures,
        verdict=str(verdict) if verdict is not None else paired.NOT_GATED,
        not_judged=paired.not_judged(figures, limits),
        confidence=CONFIDENCE,
        false_alarm=paired.FALSE_ALARM,
        power=paired.POWER,
    )


def interleave_command(request: LoadRequest) -> tuple[list[LoadPointRecord], list[InterleavedRecord]]:
    """Run the interleaved rounds; each endpoint's windows pooled per point and each point's paired record. A
    window that measured nothing raises MeasurementFailed (exit 3) once everything is written."""
    from bench.commands.load import check_load, gate_limits
    from bench.commands.load_console import raise_if_failed, show_points
    from bench.load.interleave import missing_pairs, run_interleave
    from bench.load.interleave_slices import slices_per_window
    from bench.load.shares import check_request_memory
    from bench.load.workload import load_workload
    from bench.report import write_report
    from bench.results.lifecycle import Output
    from bench.results.store import Results

    specs, plan = check_load(request)
    config = gate_limits(request)
    workload = load_workload(request.texts, request.dataset, request.tokenizer)
    check_request_memory(plan.points, workload)
    records: list[LoadPointRecord] = []
    pairs: list[InterleavedRecord] = []

    def pair(point: PointConfig, done: Rounds) -> object:
        pairs.append(paired_record(point, done, config))
        return pairs[-1]

    def show(results: Results) -> None:
        show_points(results)
        for record in results.interleaved:
            print("\n".join(paired.describe(record)), flush=True)
        for line in missing_pairs(results):
            print(line, flush=True)

    output = Output(
        request.out, request.overwrite, report=write_report, show=show, say=print, progress=True, origin=request.origin
    )
    slices = slices_per_window(plan.base.duration_s or 0.0, request.slice, request.rate is not None)
    run_interleave(specs, plan, workload, output, pair, records.append, slices=slices)
    raise_if_failed(records, request.out / "report.html")
    return records, pairs

"""`compare RUN`: an interleaved run (`load --interleave`) gated on its own paired rounds, no baseline file: per
point, the ratio B ÷ A of each round judged by compare's limits on the paired interval (bench/gate/paired.py),
and the error rate of B's windows against A's as in a two-run compare."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from bench.core.errors import UserError
from bench.gate import anytime, paired
from bench.gate.checks import Check, CheckKind, Comparison, Status
from bench.gate.config import GateConfig
from bench.gate.inputs import locate_results
from bench.gate.load import load_figures
from bench.gate.noise import Verdict
from bench.load.points import point_label
from bench.results.schema import InterleavedRecord, LoadPointRecord
from bench.results.store import Results, read_results


def compare_interleaved(run: Path, config: GateConfig) -> Comparison:
    """Every interleaved record of every results file under `run`, one load check each; a run without any is
    one line, exit 2 (it needs a baseline)."""
    loaded = [(key, read_results(path)) for key, path in sorted(locate_results(run).items())]
    if not any(results.interleaved for _, results in loaded):
        raise UserError(
            f"compare {run}: no interleaved records (written by `ragbench load --interleave`); to compare two runs "
            "give BASELINE CURRENT"
        )
    checks: list[Check] = []
    notes: list[str] = []
    for key, results in loaded:
        checks += [interleaved_check(record, results, config, key) for record in results.interleaved]
        if not results.interleaved:
            notes.append(f"{key or run}: no interleaved records: nothing to gate without a baseline")
    pairs = {f"{r.current} ÷ {r.baseline}" for _, results in loaded for r in results.interleaved}
    return Comparison(
        f"{run} (paired: {', '.join(sorted(pairs))})", str(run), checks, notes, loaded, config.inconclusive
    )


def interleaved_check(record: InterleavedRecord, results: Results, config: GateConfig, source: str) -> Check:
    """One point's rounds judged by compare's limits (not the ones the run was measured with); the error rate of
    B's windows against A's gated as compare gates it. A cut run without a side's record: the rounds alone."""
    limits = paired.limits_of(config)
    sequential = record.max_time_s is not None  # it looked after every round: the anytime-valid intervals
    figures, verdict = paired.judged_figures(record.rounds, limits, anytime=sequential)
    busy = anytime.too_busy_to_decide(record.rounds, verdict in (None, Verdict.INCONCLUSIVE))
    name = f"{record.current} ÷ {record.baseline} {record.point}"
    sides = _sides(record, results)
    check = Check(CheckKind.LOAD, source, name, Status.PASS, "")
    if sides is not None:  # compare's figures of the pooled windows; the ratios replaced by the paired ones
        check = load_figures(*sides, name, config, source)[2]
    by_name = {f.figure: f for f in figures}
    if "texts_per_s" in by_name:
        check.figures["throughput_ratio"] = by_name["texts_per_s"].ratio.mean
    if "p99" in by_name:
        check.figures["p99_change"] = by_name["p99"].ratio.mean - 1
    check.figures |= {"interleaved": [asdict(f) for f in figures], "verdict": str(verdict or paired.NOT_GATED)}
    check.summary = f"{name}: {len(record.rounds)} rounds paired; " + "; ".join(paired.figure_line(f) for f in figures)
    missing = paired.not_judged(figures, limits)
    if missing:
        check.summary += f"; {', '.join(missing)} not judged (fewer than 2 rounds have it on both sides)"
    rise = check.figures.get("error_rate_increase")
    if rise is not None:
        check.summary += f"; error rate {rise:+.2%} (max rise {config.max_error_rate:.2%})"
    more_errors = rise is not None and rise > config.max_error_rate
    if busy and any(limits.values()) and not more_errors:
        _too_busy(check, str(busy), config)
        return check
    _judge(check, verdict, more_errors, config)
    return check


def _too_busy(check: Check, why: str, config: GateConfig) -> None:
    """A budget spent undecided on a machine too busy for the rounds: neither the endpoint's failure nor a pass;
    counted as --inconclusive says (as an inconclusive verdict is)."""
    check.status = config.inconclusive.status
    check.figures["verdict"] = anytime.TOO_BUSY
    check.inconclusive = f"{why.upper().partition(' (')[0]}, counted as {config.inconclusive} (--inconclusive)"
    check.summary += f"; {why}; counted as {config.inconclusive} (--inconclusive {config.inconclusive})"


def _judge(check: Check, verdict: Verdict | None, more_errors: bool, config: GateConfig) -> None:
    if verdict == Verdict.FAIL or more_errors:
        check.status = Status.FAIL
    elif verdict == Verdict.INCONCLUSIVE:
        check.status = config.inconclusive.status
        check.inconclusive = f"INCONCLUSIVE, counted as {config.inconclusive} (--inconclusive {config.inconclusive})"
        check.summary += f"; {check.inconclusive}"
    elif verdict is None:
        check.status = Status.INFO
        check.not_gated = "throughput and p99 not gated: no --min-throughput-ratio or --max-p99-increase"
        check.summary += f"; {check.not_gated}"


def _sides(record: InterleavedRecord, results: Results) -> tuple[LoadPointRecord, LoadPointRecord] | None:
    """The point's pooled windows on A and on B; None when a side's record is missing (a cut run)."""
    found: dict[str, LoadPointRecord] = {
        p.endpoint: p
        for p in results.load_points
        if p.endpoint in (record.baseline, record.current) and point_label(p) == record.point
    }
    if record.baseline not in found or record.current not in found:
        return None
    return found[record.baseline], found[record.current]

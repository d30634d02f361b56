"""`compare RUN`: an interleaved run (`load --interleave`) gated on its own paired rounds, no baseline file: per
point, the ratio B ÷ A of each round judged by compare's limits on the paired interval (bench/gate/paired.py),
and the error rate of B's windows against A's as in a two-run compare."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from bench.core.errors import UserError
from bench.gate import anytime, paired
from bench.gate.checks import Check, CheckKind, Comparison, Status
from bench.gate.config import GateConfig
from bench.gate.inputs import locate_results
from bench.gate.load import load_figures
from bench.gate.noise import Verdict
from bench.load.interleave_record import cut_pairs, unjudgeable
from bench.load.points import point_label
from bench.results.schema import (
    InterleavedRecord,
    InterleavedRound,
    LoadPointRecord,
    PairedFigure,
)
from bench.results.schema.load import InterleavedVerdict, PairedFigureName
from bench.results.schema.run import EndStatus
from bench.results.store import Results, read_results


def compare_interleaved(run: Path, config: GateConfig) -> Comparison:
    """Every interleaved record of every results file under `run`, one load check each; a run without any is
    one line, exit 2 (it needs a baseline)."""
    loaded = [(key, read_results(path)) for key, path in sorted(locate_results(run).items())]
    for _, results in loaded:  # a killed run's points: the rounds it wrote as they ended
        results.interleaved.extend(cut_pairs(results))
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
        elif results.end is not None and results.end.status != EndStatus.COMPLETE:  # killed: each record's `stopped`
            notes.append(f"{key or run}: the run is {results.end.status}: judged on the rounds it finished")
    pairs = {f"{r.current} ÷ {r.baseline}" for _, results in loaded for r in results.interleaved}
    return Comparison(
        f"{run} (paired: {', '.join(sorted(pairs))})", str(run), checks, notes, loaded, config.inconclusive
    )


@dataclass(frozen=True)
class Judged:
    """A point's rounds judged: each figure's paired stats, the verdict, and why where it is neither a pass nor a
    fail (cannot judge, too busy)."""

    figures: list[PairedFigure]
    verdict: InterleavedVerdict
    why: str | None = None


def judge_rounds(rounds: Sequence[InterleavedRound], limits: dict[str, float | None], sequential: bool) -> Judged:
    """The one verdict of interleaved rounds, for `load --interleave` and `compare RUN` alike: rounds a gate
    cannot judge (bench/load/interleave_record.py) first; a B that stopped answering (a round in which it answered
    nothing while A answered) fails any limit; any gated figure failed; undecided with too many rounds the
    machine's, too busy; a gated figure no pair of rounds measured, cannot judge (not a pass on the others); then
    compare's rule. B's p99 where it answered too few for one is its largest answer (`at_least_p99`).
    `sequential`: the anytime-valid intervals (a --max-time run)."""
    why = unjudgeable(rounds)
    if why is not None:
        return Judged([], InterleavedVerdict.CANNOT_JUDGE, why)
    filled, at_least = at_least_p99(rounds)
    figures, _ = paired.judged_figures(filled, limits, anytime=sequential)
    silent = silent_rounds(rounds)
    figures = [_bounded(f, silent, at_least) for f in figures]
    verdict = paired.overall([Verdict(f.verdict) for f in figures if f.verdict is not None])
    gated = any(limit is not None for limit in limits.values())
    if gated and silent:
        return Judged(figures, InterleavedVerdict.FAIL, f"B {stopped_text(silent, rounds)}")
    if verdict == Verdict.FAIL:
        return Judged(figures, InterleavedVerdict.FAIL)
    missing = paired.not_judged(figures, limits)
    busy = anytime.too_busy_to_decide(rounds, verdict in (None, Verdict.INCONCLUSIVE) or bool(missing))
    if gated and busy:
        return Judged(figures, InterleavedVerdict.TOO_BUSY, busy)
    if missing:
        names = ", ".join(paired.FIGURE_NAMES[name] for name in missing)
        return Judged(figures, InterleavedVerdict.CANNOT_JUDGE, f"{names} {NOT_JUDGED}")
    if verdict is None:
        return Judged(figures, InterleavedVerdict.NOT_GATED)
    return Judged(figures, InterleavedVerdict(str(verdict)))


def silent_rounds(rounds: Sequence[InterleavedRound]) -> list[int]:
    """The carried rounds in which B answered nothing while A answered: B stopped answering."""
    return [r.round for r in rounds if r.too_busy is None and r.current_texts_per_s == 0 < r.baseline_texts_per_s]


def stopped_text(silent: list[int], rounds: Sequence[InterleavedRound]) -> str:
    """`answered nothing in rounds 2-8 of 8 (A answered in each): it stopped answering`."""
    where = f"round {silent[0]}" if len(silent) == 1 else f"rounds {', '.join(map(str, silent))}"
    if len(silent) > 2 and silent == list(range(silent[0], silent[-1] + 1)):
        where = f"rounds {silent[0]}-{silent[-1]}"
    return f"answered nothing in {where} of {len(rounds)} (A answered in each): it stopped answering"


def at_least_p99(rounds: Sequence[InterleavedRound]) -> tuple[list[InterleavedRound], list[int]]:
    """The rounds with B's p99 taken as its largest answer where B answered too few times for a p99 and A has
    one (a B too slow to answer 100 times in the window is slow: its p99 is at least that), and those rounds."""
    taken = [
        r.round
        for r in rounds
        if r.current_p99_ms is None and r.baseline_p99_ms is not None and r.current_p99_at_least_ms is not None
    ]
    filled = [replace(r, current_p99_ms=r.current_p99_at_least_ms) if r.round in taken else r for r in rounds]
    return filled, taken


def _bounded(f: PairedFigure, silent: list[int], at_least: list[int]) -> PairedFigure:
    """texts/s of a B that stopped answering: its silent rounds said (no interval of logs stands on a ratio of 0)
    and a limit fails; p99 resting on B's largest answers: a ratio at least as said, so a fail stands and a pass
    is inconclusive."""
    if f.figure == PairedFigureName.TEXTS_PER_S and silent:
        return replace(f, silent_rounds=silent, verdict=InterleavedVerdict.FAIL if f.limit is not None else None)
    if f.figure == PairedFigureName.P99 and at_least:
        verdict = InterleavedVerdict.INCONCLUSIVE if f.verdict == InterleavedVerdict.PASS else f.verdict
        return replace(f, at_least_rounds=at_least, verdict=verdict)
    return f


NOT_JUDGED = "not judged: fewer than 2 rounds have it on both sides"


def interleaved_check(record: InterleavedRecord, results: Results, config: GateConfig, source: str) -> Check:
    """One point's rounds judged by compare's limits (not the ones the run was measured with); the error rate of
    B's windows against A's gated as compare gates it. A cut run without a side's record: the rounds alone. A
    record that cannot be judged fails, said so: a gate that saw nothing it could judge is no pass."""
    limits = paired.limits_of(config)
    judged = judge_rounds(record.rounds, limits, sequential=record.max_time_s is not None)
    name = f"{record.current} ÷ {record.baseline} {record.point}"
    sides = _sides(record, results)
    check = Check(CheckKind.LOAD, source, name, Status.PASS, "")
    if sides is not None:  # compare's figures of the pooled windows; the ratios replaced by the paired ones
        check = load_figures(*sides, name, config, source)[2]
    by_name = {f.figure: f for f in judged.figures}
    if PairedFigureName.TEXTS_PER_S in by_name:
        check.figures["throughput_ratio"] = by_name[PairedFigureName.TEXTS_PER_S].ratio.mean
    if PairedFigureName.P99 in by_name:
        check.figures["p99_change"] = by_name[PairedFigureName.P99].ratio.mean - 1
    check.figures |= {"interleaved": [asdict(f) for f in judged.figures], "verdict": str(judged.verdict)}
    check.summary = f"{name}: {len(record.rounds)} rounds paired; " + "; ".join(
        paired.figure_line(f) for f in judged.figures
    )
    if not record.figures and record.stopped:  # a killed run's rounds (cut_pairs): said with the verdict
        check.summary += f"; {record.stopped}: judged on the rounds it wrote"
    rise = check.figures.get("error_rate_increase")
    if rise is not None:
        check.summary += f"; error rate {rise:+.2%} (max rise {config.max_error_rate:.2%})"
    more_errors = rise is not None and rise > config.max_error_rate
    if judged.verdict == InterleavedVerdict.TOO_BUSY and not more_errors:
        _too_busy(check, judged.why or "", config)
        return check
    _judge(check, judged, more_errors, config)
    return check


def _too_busy(check: Check, why: str, config: GateConfig) -> None:
    """A budget spent undecided on a machine too busy for the rounds: neither the endpoint's failure nor a pass;
    counted as --inconclusive says (as an inconclusive verdict is)."""
    check.status = config.inconclusive.status
    check.inconclusive = f"{why.upper().partition(' (')[0]}, counted as {config.inconclusive} (--inconclusive)"
    check.summary += f"; {why}; counted as {config.inconclusive} (--inconclusive {config.inconclusive})"


def _judge(check: Check, judged: Judged, more_errors: bool, config: GateConfig) -> None:
    if judged.verdict == InterleavedVerdict.CANNOT_JUDGE:
        check.status = Status.FAIL
        check.summary += f"; CANNOT JUDGE: {judged.why}: no pass"
    elif judged.verdict == InterleavedVerdict.FAIL or more_errors:
        check.status = Status.FAIL
        check.summary += f"; {judged.why}" if judged.why else ""
    elif judged.verdict == InterleavedVerdict.INCONCLUSIVE:
        check.status = config.inconclusive.status
        check.inconclusive = f"INCONCLUSIVE, counted as {config.inconclusive} (--inconclusive {config.inconclusive})"
        check.summary += f"; {check.inconclusive}"
    elif judged.verdict == InterleavedVerdict.NOT_GATED:
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

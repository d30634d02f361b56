"""Load checks: per matching sweep point, its error rate, throughput ratio and p99 change against the baseline.

The error rate is always gated (any rise fails by default); throughput and p99 are gated with their flags,
by the repeats' intervals (bench.gate.noise) where both sides were repeated or the runner's noise is
calibrated, else one run against one run.
"""

from __future__ import annotations

from bench.gate import noise
from bench.gate.checks import Check, CheckKind, Status
from bench.gate.config import GateConfig
from bench.gate.figures import as_number, fmt_change, fmt_num
from bench.gate.noise import Figure, Verdict
from bench.gate.points import checked_points, p99_quantity, point_p99
from bench.load.points import BEHIND, PointKey, error_rate, point_too_busy
from bench.results.schema import LoadPointRecord
from bench.results.store import Results


def compare_load(base: Results, cur: Results, config: GateConfig, source: str = "") -> tuple[list[Check], list[str]]:
    """Per matching sweep point: the error rate, always gated (strict by default: any rise fails), and the
    throughput ratio and p99 change, gated with their flags unless the load client saturated. A current
    point that measured nothing, or where nothing succeeded, fails whatever the rest says."""
    notes: list[str] = []
    current = checked_points(cur)
    matched: set[PointKey] = set()
    checks: list[Check] = []
    single = 0  # gated points with a figure not judged on intervals: one run against one run, noise ignored
    alone_figures: set[Figure] = set()  # which figures those were
    uncalibrated: list[str] = []  # --calibration given, but this point not in two of its runs
    loose: list[str] = []  # calibrated over fewer than noise.MIN_RUNS runs: said in every output
    where = f"{source}: " if source else ""
    for key, b in checked_points(base, config.match).items():
        label = key.label
        c = current.get(key)
        if c is None:
            checks.append(
                Check(CheckKind.LOAD, source, label, Status.FAIL, f"{label}: not measured in the current run")
            )
            continue
        matched.add(key)
        ratio, change, check = load_figures(b, c, label, config, source)
        checks.append(check)
        floors = config.calibration.floors.get((source, key), {})
        if config.calibration.runs and not floors:
            uncalibrated.append(label)
        fewest = min((floor.runs for floor in floors.values()), default=noise.MIN_RUNS)
        if fewest < noise.MIN_RUNS:
            loose.append(f"{label} ({fewest} runs)")
        judged = _noise_verdicts(check, b, c, config, f"{source}/{label}", floors)
        alone = [f for f in _gated_figures(config) if f not in (judged or {})]
        single += bool(alone)
        alone_figures.update(alone)
        _judge_load(check, b, c, ratio, change, config, judged or {})
    partial = alone_figures != set(_gated_figures(config))  # some figures of those points were judged on intervals
    which = f" for {' and '.join(sorted(alone_figures))}" if partial else ""
    notes += _load_notes(where, single, uncalibrated, loose, config.calibration.origin, which)
    notes += [
        f"{where}load point {key.label} is new in the current run: nothing to compare it with"
        for key in current.keys() - matched
    ]
    return checks, notes


def _gated_figures(config: GateConfig) -> list[Figure]:
    limits = {Figure.THROUGHPUT: config.min_throughput_ratio, Figure.P99: config.max_p99_increase}
    return [figure for figure, limit in limits.items() if limit is not None]


def _load_notes(
    where: str, single: int, uncalibrated: list[str], loose: list[str], origin: str, which: str
) -> list[str]:
    """What the load checks of a results file could not see: noise ignored (`which`: for which figures, where
    the others were judged on intervals), points uncalibrated or loosely so."""
    notes = []
    if single:
        notes.append(
            f"{where}{single} load point(s) gated on one run against one run{which}: the gate "
            "ignores noise (measure both runs with `ragbench load --repeat N` to gate on intervals; docs/ci.md)"
        )
    if uncalibrated:
        notes.append(
            f"{where}no calibration for load point(s) {', '.join(uncalibrated)}: "
            f"not measured in two {origin}, so gated without the runner's noise between runs"
        )
    if loose:
        notes.append(
            f"{where}load point(s) {', '.join(loose)} calibrated over fewer than "
            f"{noise.MIN_RUNS} distinct A/A runs: the runner's noise between runs is loosely estimated "
            "(give five or more --calibration runs)"
        )
    return notes


def _not_gated(b: LoadPointRecord, c: LoadPointRecord, ratio: float | None, config: GateConfig) -> str:
    """Why throughput and p99 of a point pair are not gated (empty: they are)."""
    saturated = [(run, p.client.utilization) for run, p in (("baseline", b), ("current", c)) if p.client.saturated]
    if saturated:
        return "the load client saturated in the " + " and ".join(
            run + (f" run ({use:.0%} of its ceiling)" if as_number(use) is not None else " run")
            for run, use in saturated
        )
    busy = [(run, why) for run, p in (("baseline", b), ("current", c)) if (why := point_too_busy(p))]
    if busy:  # the machine's window, not the endpoint's: neither a pass nor a failure of it
        return "; ".join(f"the {run} run: {why}" for run, why in busy)
    if config.min_throughput_ratio is None and config.max_p99_increase is None:
        return "no --min-throughput-ratio or --max-p99-increase"
    if ratio is None and config.min_throughput_ratio is not None and c.requests.ok:
        return "no baseline throughput to compare with"
    return ""


def _noise_verdicts(
    check: Check,
    b: LoadPointRecord,
    c: LoadPointRecord,
    config: GateConfig,
    name: str,
    floors: dict[Figure, noise.NoiseFloor],
) -> dict[Figure, Verdict] | None:
    """The interval verdict of each gated figure (throughput, p99) when both points were repeated or the
    runner's noise is calibrated, said in the check's summary and figures; None otherwise (one run against one
    run)."""
    p99 = config.max_p99_increase
    limits = {Figure.THROUGHPUT: config.min_throughput_ratio, Figure.P99: 1 + p99.value if p99 is not None else None}
    verdicts = noise.point_verdicts(b, c, p99_quantity(c), limits, config.seed, name, floors, config.bootstrap)
    if verdicts:
        check.figures["noise"] = [v.to_dict() for v in verdicts]
        check.summary += "; " + "; ".join(v.message() for v in verdicts)
        check.likely_regression = "; ".join(v.likely_text() for v in verdicts if v.likely_regression)
    return None if verdicts is None else {v.figure: v.verdict for v in verdicts}


def _judge_load(
    check: Check,
    b: LoadPointRecord,
    c: LoadPointRecord,
    ratio: float | None,
    change: float | None,
    config: GateConfig,
    judged: dict[Figure, Verdict],
) -> None:
    """The status of a matched point's check: the error rate always, throughput and p99 where gated (by their
    intervals where `judged` has a verdict, else one run against one run); a current point with no success fails
    whatever the rest says."""
    reason = _not_gated(b, c, ratio, config)
    slower = (
        not reason
        and ratio is not None
        and config.min_throughput_ratio is not None
        and judged.get(Figure.THROUGHPUT, Verdict.FAIL if ratio < config.min_throughput_ratio else Verdict.PASS)
        == Verdict.FAIL
    )
    later = (
        not reason
        and change is not None
        and config.max_p99_increase is not None
        and judged.get(Figure.P99, Verdict.FAIL if change > config.max_p99_increase.value else Verdict.PASS)
        == Verdict.FAIL
    )
    more_errors = check.figures["error_rate_increase"] > config.max_error_rate
    if not c.requests.ok:
        check.status = Status.FAIL
        check.summary += "; the current point " + (
            "measured nothing" if not c.requests.sent else "had no successful request"
        )
    elif slower or later or more_errors:
        check.status = Status.FAIL
    elif reason:
        check.status = Status.INFO
        check.not_gated = f"throughput and p99 not gated: {reason}"
        check.summary += f"; {check.not_gated} (the error rate is, and passed)"
    elif Verdict.INCONCLUSIVE in judged.values():
        policy = config.inconclusive
        check.status = policy.status
        check.inconclusive = f"INCONCLUSIVE, counted as {policy} (--inconclusive {policy})"
        likely = f"; likely regression: {check.likely_regression}" if check.likely_regression else ""
        check.summary += f"; {check.inconclusive}{likely}"
    else:
        check.status = Status.PASS
    if not check.inconclusive:  # failed, passed or not gated: nothing likely to say beside it
        check.likely_regression = ""


def load_figures(
    b: LoadPointRecord, c: LoadPointRecord, label: str, config: GateConfig, source: str
) -> tuple[float | None, float | None, Check]:
    b_tput, c_tput = as_number(b.throughput.texts_per_s), as_number(c.throughput.texts_per_s)
    ratio = c_tput / b_tput if b_tput and c_tput is not None else None
    b_p99, c_p99 = point_p99(b), point_p99(c)
    change = c_p99 / b_p99 - 1 if b_p99 and c_p99 is not None else None
    limits = []
    if config.min_throughput_ratio is not None:
        limits.append(f"min ratio {config.min_throughput_ratio:g}")
    if config.max_p99_increase is not None:
        limits.append(f"max p99 +{config.max_p99_increase}")
    limits.append(f"max error-rate rise {config.max_error_rate:.2%}")
    # A p99 of too few answers, or an open loop that fell behind its schedule: said, so a missing or low figure reads.
    for run, p in (("baseline", b), ("current", c)):
        block = getattr(p.latency_ms, p99_quantity(p))
        if block is not None and block.p99 is None:
            limits.append(f"{run} p99 insufficient ({block.count} answers), not gated")
        if p.status == BEHIND:
            limits.append(f"{run} point behind its schedule")
    b_errors, c_errors = _errors(b), _errors(c)
    b_rate, c_rate = error_rate(b.requests), error_rate(c.requests)
    summary = (
        f"{label}: texts/s {fmt_num(b_tput)} → {fmt_num(c_tput)} (×{fmt_num(ratio, 3)}), "
        f"p99 {fmt_num(b_p99)} → {fmt_num(c_p99)} ms ({fmt_change(change)}), "
        f"errors {b_errors} → {c_errors} ({b_rate:.2%} → {c_rate:.2%} of requests); {', '.join(limits)}"
    )
    figures = {
        "endpoint": c.endpoint,
        "loop": c.loop,
        "baseline_texts_per_s": b_tput,
        "current_texts_per_s": c_tput,
        "throughput_ratio": ratio,
        "baseline_p99_ms": b_p99,
        "current_p99_ms": c_p99,
        "p99_change": change,
        "baseline_errors": b_errors,
        "current_errors": c_errors,
        "baseline_error_rate": b_rate,
        "current_error_rate": c_rate,
        "error_rate_increase": c_rate - b_rate,
        "max_error_rate": config.max_error_rate,
        "client_saturated": b.client.saturated or c.client.saturated,
        "machine_too_busy": [
            f"{run}: {why}" for run, p in (("baseline", b), ("current", c)) if (why := point_too_busy(p))
        ],
    }
    return ratio, change, Check(CheckKind.LOAD, source, label, Status.PASS, summary, figures)


def _errors(point: LoadPointRecord) -> int:
    return sum(point.requests.errors.values())

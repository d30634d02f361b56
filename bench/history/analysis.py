"""A history analysed: every series' change points, the newest run's place in its segment, and the limits it breaks.

The newest run starts a change point when the change point that opens its segment is one the history without it
did not have (none within NEAR runs of it, past the same limits): the run that tipped the evidence, as a CI step
would see it. A change found earlier has already failed the run that tipped it; one wild run alone opens no
segment (the detector works on ranks), so it does not fail the gate either.

Since one run at the end never makes a change point, the newest run is also tested on its own against the runs
since the last change point before it (bench/history/newest.py): out of line and past a limit, it fails as
"out of line", a change or an outlier that more runs will tell apart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from bench.core.values import Allowance
from bench.history.changepoints import DEFAULT_SETTINGS, SCORE_RESOLUTION, ChangePoint, DetectorSettings, detect
from bench.history.newest import OutOfLine, bound_text, describe, out_of_line, runs_to_decide
from bench.history.report_json import ChangeJson, HistoryJson, OutOfLineJson, SeriesJson
from bench.history.series import Gate, History, Scale, Series

RATIO_GATES_LOWER_WORSE = (Gate.THROUGHPUT, Gate.INGEST)  # --min-throughput-ratio
RATIO_GATES_HIGHER_WORSE = (Gate.P99, Gate.QUERY_P99)  # --max-p99-ratio
NEAR = 3  # runs: a change point this close to one of the history without the newest run is that one
# the share of --alpha the out-of-line bound takes; the change points a newest run tips take the rest (measured
# well under it: benchmarks/bench_history_newest.py), so that an unchanged series fails at most ~alpha of its runs
OUT_OF_LINE_SHARE = 0.8


@dataclass(frozen=True)
class Limits:
    """compare's limits, applied to the change point the newest run starts."""

    max_drop: dict[str, Allowance] = field(default_factory=dict)  # trec name (or `*`) -> largest allowed drop
    min_throughput_ratio: float | None = None  # load texts/s and served targets' ingest texts/s: after / before
    max_p99_ratio: float | None = None  # load p99 and served targets' query p99: after / before

    def breaches(self, series: Series, change: ChangePoint) -> list[str]:
        """The limits `change` is past, in words (empty: none, or the figure is not gated)."""
        if series.gate == Gate.QUALITY and series.measure is not None:
            allowance = self.max_drop.get(series.measure) or self.max_drop.get("*")
            drop = change.before - change.after
            if allowance is not None and drop > allowance.limit(change.before):
                return [f"{series.figure} dropped {drop:.4f} > --max-drop {allowance}"]
            return []
        return self.ratio_breaches(series, change.size)

    def ratio_breaches(self, series: Series, size: float) -> list[str]:
        """The ratio limits a change of `size` (after / before) is past, in words."""
        if series.gate in RATIO_GATES_LOWER_WORSE and self.min_throughput_ratio is not None:
            if size < self.min_throughput_ratio:
                return [f"{series.figure} ×{size:.3f} < --min-throughput-ratio {self.min_throughput_ratio:g}"]
        elif series.gate in RATIO_GATES_HIGHER_WORSE and self.max_p99_ratio is not None:  # noqa: SIM102
            if size > self.max_p99_ratio:
                return [f"{series.figure} ×{size:.3f} > --max-p99-ratio {self.max_p99_ratio:g}"]
        return []

    def ratio_limit(self, series: Series) -> float | None:
        """The after/before ratio a speed or latency figure is gated at (None: not gated)."""
        if series.gate in RATIO_GATES_LOWER_WORSE:
            return self.min_throughput_ratio
        return self.max_p99_ratio if series.gate in RATIO_GATES_HIGHER_WORSE else None

    def gates(self, series: Series) -> bool:
        """Whether a limit applies to the series' figure."""
        if series.gate == Gate.QUALITY:
            return series.measure is not None and bool(self.max_drop.get(series.measure) or self.max_drop.get("*"))
        if series.gate in RATIO_GATES_LOWER_WORSE:
            return self.min_throughput_ratio is not None
        return series.gate in RATIO_GATES_HIGHER_WORSE and self.max_p99_ratio is not None


@dataclass
class SeriesReport:
    series: Series
    changes: list[ChangePoint]
    segment_runs: int  # runs in the newest segment: the newest run is the last of them
    newest_change: ChangePoint | None = None  # the change point the newest run starts (None: none)
    breaches: list[str] = field(default_factory=list)  # the limits newest_change (or out_of_line) is past
    out_of_line: OutOfLine | None = None  # the newest run against the runs since the change point before it
    undecided: str = ""  # past the limit, within the bound: how many runs at the limit's step would decide

    @property
    def failed(self) -> bool:
        return bool(self.breaches)


@dataclass
class HistoryReport:
    history: History
    series: list[SeriesReport]
    limits: Limits
    settings: DetectorSettings

    @property
    def failed(self) -> list[SeriesReport]:
        return [s for s in self.series if s.failed]

    def changes(self) -> list[tuple[SeriesReport, ChangePoint]]:
        """Every change point, the largest first."""
        found = [(s, c) for s in self.series for c in s.changes]
        return sorted(found, key=lambda sc: -magnitude(sc[0].series, sc[1]))

    def to_dict(self) -> HistoryJson:
        runs = self.history.runs
        return {
            "verdict": "fail" if self.failed else "pass",
            "runs": [{"index": r.index, "path": str(r.path), "created": r.created, "labels": r.labels} for r in runs],
            "notes": self.history.notes,
            "detector": {
                "alpha": self.settings.alpha,
                "permutations": self.settings.permutations,
                "bootstrap": self.settings.bootstrap,
                "seed": self.settings.seed,
                "score_resolution": SCORE_RESOLUTION,
            },
            "limits": {
                "max_drop": {k: str(v) for k, v in self.limits.max_drop.items()},
                "min_throughput_ratio": self.limits.min_throughput_ratio,
                "max_p99_ratio": self.limits.max_p99_ratio,
            },
            "series": [_series_dict(s, self.history) for s in self.series],
        }


def magnitude(series: Series, change: ChangePoint) -> float:
    """How large a change is, comparable across figures: |log ratio|, or a difference relative to its mean before."""
    if series.scale == Scale.RATIO:
        return abs(math.log(change.size)) if change.size > 0 else math.inf
    return abs(change.size) / abs(change.before) if change.before else abs(change.size)


def analyse(history: History, limits: Limits, settings: DetectorSettings = DEFAULT_SETTINGS) -> HistoryReport:
    reports = [_analyse_series(series, history, limits, settings) for series in history.series]
    return HistoryReport(history, reports, limits, settings)


def _analyse_series(series: Series, history: History, limits: Limits, settings: DetectorSettings) -> SeriesReport:
    changes = detect(series, settings)
    start = changes[-1].position if changes else 0
    report = SeriesReport(series, changes, len(series.observations) - start)
    newest = len(history.runs) - 1
    if newest in series.invalid and limits.gates(series):
        report.breaches = [f"{series.figure} of the newest run is {series.invalid[newest]}: not a figure to gate"]
        return report
    if newest in series.busy and limits.gates(series):  # neither a pass nor a failure of the endpoint
        report.undecided = f"not judged: {series.busy[newest]} (the newest run, left out of its series)"
        return report
    if not series.observations or series.observations[-1].run != newest:
        return report  # the newest run did not measure this configuration
    if changes and (breaches := _newest_change_breaches(series, changes[-1], limits, settings)):
        report.newest_change, report.breaches = changes[-1], breaches
        return report
    report.out_of_line = _newest_out_of_line(series, changes, settings)
    found = report.out_of_line
    if found is None:
        return report
    breaches = limits.ratio_breaches(series, found.size)
    if found.past_bound:  # past the bound (not noise) and past the limit (a change worth failing): both
        report.breaches = [f"{b}: {describe(found)}" for b in breaches]
    elif breaches:
        report.undecided = _undecided(found, limits.ratio_limit(series), settings.alpha)
    return report


def _undecided(found: OutOfLine, limit: float | None, alpha: float) -> str:
    """A newest run past its limit but within the runs' noise, in words, with the runs that would decide."""
    step = abs(1 - limit) if limit is not None else 0.0
    runs = runs_to_decide(found, step, alpha) if step > 0 else None
    if runs is not None:
        decide = f"{runs} run(s) at ×{limit:g} would tell such a step from none (80% power, one-sided α={alpha:g})"
    else:
        decide = f"no number of runs would tell a ×{limit:g} step from none beside {len(found.reference_runs)} runs"
    return f"INCONCLUSIVE, counted as pass: past the limit but within the noise ({bound_text(found)}); {decide}"


def _newest_change_breaches(series: Series, last: ChangePoint, limits: Limits, settings: DetectorSettings) -> list[str]:
    """The limits the change point the newest run starts is past (empty: none, or an earlier run tipped it)."""
    breaches = limits.breaches(series, last)
    if not breaches:
        return []
    earlier = detect(replace(series, observations=series.observations[:-1]), settings)
    if any(abs(c.position - last.position) <= NEAR and limits.breaches(series, c) for c in earlier):
        return []  # found, and past the limit, before the newest run: it failed the run that tipped it
    return breaches


def _newest_out_of_line(series: Series, changes: list[ChangePoint], settings: DetectorSettings) -> OutOfLine | None:
    """The newest run against the runs before it since their last change point (a change point at the newest run
    itself opens no segment of its own to compare with)."""
    last = len(series.observations) - 1
    opened = [c.position for c in changes if c.position < last]
    lower_is_worse = series.gate in RATIO_GATES_LOWER_WORSE
    if not lower_is_worse and series.gate not in RATIO_GATES_HIGHER_WORSE:
        return None
    reference = slice(opened[-1] if opened else 0, last)
    return out_of_line(series, reference, lower_is_worse, settings.alpha * OUT_OF_LINE_SHARE)


def _change_dict(change: ChangePoint, history: History) -> ChangeJson:
    run = history.runs[change.run]
    return {
        "position": change.position,
        "run": change.run,
        "run_name": run.name,
        "labels": run.labels,
        "size": change.size,
        "ci_low": change.low,
        "ci_high": change.high,
        "p_value": change.p_value,
        "before": change.before,
        "after": change.after,
        "test": change.test,
    }


def _series_dict(report: SeriesReport, history: History) -> SeriesJson:
    s = report.series
    return {
        "job": s.job,
        "configuration": s.configuration,
        "figure": s.figure,
        "gate": s.gate.value,
        "scale": s.scale.value,
        "higher_is_better": s.higher_is_better,
        "measure": s.measure,
        "queries": len(s.qids),
        "runs": [o.run for o in s.observations],
        "values": s.values,
        "intervals": [[o.low, o.high] for o in s.observations],
        "change_points": [_change_dict(c, history) for c in report.changes],
        "newest_segment_runs": report.segment_runs,
        "newest_change": _change_dict(report.newest_change, history) if report.newest_change else None,
        "breaches": report.breaches,
        "undecided": report.undecided or None,
        "out_of_line": _out_of_line_dict(report.out_of_line, history),
    }


def _out_of_line_dict(found: OutOfLine | None, history: History) -> OutOfLineJson | None:
    if found is None:
        return None
    return {
        "reference_runs": [history.runs[r].name for r in found.reference_runs],
        "median": found.centre,
        "bound": found.bound,
        "spread": found.spread,
        "level": found.alpha,
        "value": found.value,
        "size": found.size,
        "p_value": found.p_value,
        "past_bound": found.past_bound,
    }

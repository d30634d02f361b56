"""`compare`: gate a current run against a baseline, check by check, for a CI pipeline.

Quality moves a little from run to run, so a quality check fails only when the drop exceeds its
allowance AND the paired randomization test on the queries both runs judged finds it significant,
Holm-corrected across the family of a results file: its *gated* checks (the measures with a `--max-drop`,
or those `--primary` names, on targets of both runs; a check outside it is reported, not gated). A drop past
its allowance that is significant alone but not across the family is inconclusive (`--inconclusive`). Every
check carries its figures (effect, bootstrap interval, p, the smallest drop its queries could detect) so a
person can see why it passed or failed and what a pass could not see.

Inputs are results files or folders. A folder holding `results.jsonl` is one results file; any other
folder is searched for `*/results.jsonl` (what `ragbench run` writes) and files are paired by their
path inside the folder.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench.core.errors import InputError, UserError
from bench.core.values import Allowance, parse_allowance
from bench.gate import calibration_runs, noise
from bench.load import histograms
from bench.load.points import BEHIND, PointKey, error_rate, point_label
from bench.quality.metrics import parse_measure
from bench.quality.significance import (
    bootstrap_cis,
    detectable_drop,
    holm,
    randomization_tests,
    seeded_generator,
)
from bench.quality.under_load import not_under_load
from bench.results.outdir import RESULTS_FILE
from bench.results.schema import LatencySummary, LoadPointRecord, Loop, TargetRecord
from bench.results.store import Results, read_results

PASS, FAIL, INFO = "pass", "fail", "info"  # info: reported, never gated
POWER = 0.8  # a quality check states the smallest drop it finds with this probability


def parse_max_drops(items: list[str]) -> dict[str, Allowance]:
    """`MEASURE=AMOUNT` per measure (label or trec_eval name) or a bare `AMOUNT` for every measure (key `*`)."""
    drops: dict[str, Allowance] = {}
    for item in items:
        measure, sep, amount = item.rpartition("=")
        key = parse_measure(measure).trec_name if sep else "*"
        drops[key] = parse_allowance(amount, "--max-drop")
    return drops


def parse_matches(items: list[str]) -> dict[str, str]:
    """`BASE_NAME=CUR_NAME`: the baseline's target or endpoint BASE_NAME is the current run's CUR_NAME."""
    matches: dict[str, str] = {}
    for item in items:
        base, sep, cur = item.partition("=")
        if not sep or not base.strip() or not cur.strip():
            raise UserError(f"--match {item!r}: expected BASE_NAME=CUR_NAME")
        matches[base.strip()] = cur.strip()
    return matches


def parse_primary(items: list[str]) -> tuple[tuple[str | None, str], ...]:
    """`MEASURE` or `TARGET:MEASURE` (label or trec_eval name): the gated quality checks, Holm's family."""
    found: list[tuple[str | None, str]] = []
    for item in items:
        target, sep, measure = item.rpartition(":")
        if sep and not target.strip():
            raise UserError(f"--primary {item!r}: expected MEASURE or TARGET:MEASURE")
        found.append((target.strip() or None, parse_measure(measure.strip()).trec_name))
    return tuple(found)


def parse_inconclusive(text: str, flag: str) -> str:
    """What an inconclusive gate (a load interval straddling its limit, a quality drop significant only
    before the family's correction) counts as: pass or fail."""
    if text not in noise.POLICIES:
        raise UserError(f"{flag} {text!r}: expected pass or fail")
    return text


@dataclass(frozen=True)
class Calibration:
    """This runner's noise between runs, per load point and gated figure, from A/A runs (`--calibration RUN`):
    the same sweep of the same build measured several times on the runner that gates."""

    runs: tuple[str, ...] = ()  # the calibration runs' paths, as given
    floors: dict[tuple[str, PointKey], dict[str, noise.NoiseFloor]] = field(default_factory=dict)  # (source, point)
    read: tuple[tuple[str, calibration_runs.RunFiles], ...] = field(default=(), repr=False)  # (argument, files)


@dataclass
class GateConfig:
    max_drop: dict[str, Allowance] = field(default_factory=dict)  # trec name (or `*`) -> allowance; default 0
    alpha: float = 0.05
    significance: bool = True
    max_p99_increase: Allowance | None = None  # load; None: p99 reported, not gated
    min_throughput_ratio: float | None = None  # load; None: throughput reported, not gated
    max_error_rate: float = 0.0  # load: largest allowed rise of a point's error rate (a fraction); 0: any rise fails
    min_ingest_ratio: float | None = None  # quality cost: current/baseline ingest texts/s; None: reported, not gated
    max_query_p99_increase: Allowance | None = None  # quality cost: per-query p99; None: reported, not gated
    match: dict[str, str] = field(default_factory=dict)
    seed: int = 0
    permutations: int = 10_000
    bootstrap: int = 10_000
    inconclusive: str = "pass"  # what an inconclusive load or quality gate counts as
    primary: tuple[tuple[str | None, str], ...] = ()  # (target or None: every target, trec name): the family
    calibration: Calibration = field(default_factory=Calibration)  # load: the runner's noise between runs

    def allowance(self, measure: str) -> Allowance:
        return self.max_drop.get(measure) or self.max_drop.get("*") or Allowance(0.0)

    def not_gated(self, base_name: str, cur_name: str, measure: str) -> str:
        """Why a quality check is outside the gated family (empty: it is in it). Without `--primary` the family
        is every measure with a `--max-drop` (every measure when none names one: the default allowance 0)."""
        if self.primary:
            if any(m == measure and t in (None, base_name, cur_name) for t, m in self.primary):
                return ""
            return "not a --primary check (only those are gated and corrected for together)"
        named = set(self.max_drop) - {"*"}
        if "*" in self.max_drop or not named or measure in named:
            return ""
        return "no --max-drop for this measure (only measures with one are gated and corrected for together)"


@dataclass
class Check:
    kind: str  # quality | cost | identity | load
    source: str  # the results file's path inside the compared folders ("" for a single file)
    name: str  # what is checked, e.g. "prod nDCG@10"
    status: str  # pass | fail | info
    summary: str  # one line with the figures
    figures: dict[str, Any] = field(default_factory=dict)
    not_gated: str = ""  # with status info: why what it reports was not gated (said in every output)
    inconclusive: str = ""  # a load gate's interval straddled its limit: why, and what it counted as (every output)

    @property
    def title(self) -> str:
        return f"{self.kind}: {self.source + ' ' if self.source else ''}{self.name}"


@dataclass
class Comparison:
    baseline: str
    current: str
    checks: list[Check]
    notes: list[str]  # said loudly: a changed dataset, a missing target or results file
    runs: list[tuple[str, Results]] = field(default_factory=list, repr=False)  # the current results, by source
    inconclusive_policy: str = "pass"  # what an inconclusive load gate counts as (compare --inconclusive)

    @property
    def regressions(self) -> list[Check]:
        return [c for c in self.checks if c.status == FAIL]

    @property
    def passed(self) -> bool:
        return not self.regressions

    def to_dict(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline,
            "current": self.current,
            "verdict": "pass" if self.passed else "fail",
            "inconclusive": {
                "checks": sum(1 for c in self.checks if c.inconclusive),
                "counted_as": self.inconclusive_policy,
            },
            "notes": self.notes,
            "checks": [asdict(c) for c in self.checks],
        }


def locate_results(path: Path) -> dict[str, Path]:
    """Results files under `path`, keyed by their folder relative to `path` ("" for `path` itself)."""
    if path.is_file():
        return {"": path}
    if not path.is_dir():
        raise InputError(path, "no such results file or folder")
    if (path / RESULTS_FILE).is_file():
        return {"": path / RESULTS_FILE}
    found = sorted(path.rglob(RESULTS_FILE))
    if not found:
        raise InputError(path, f"no {RESULTS_FILE} in this folder or below it")
    return {f.parent.relative_to(path).as_posix(): f for f in found}


def load_calibration(paths: list[Path]) -> Calibration:
    """The noise floor of every load point the A/A runs at `paths` measured (folders pair their results files
    by path, as compare does); a point needs a figure in two runs at least. A run given twice (or a copy of
    one) is refused at its argument: check_calibration then checks them against the runs compared."""
    if not paths:
        return Calibration()
    if len(paths) < 2:
        raise UserError("--calibration: give two A/A runs at least (five or more: few runs estimate the noise loosely)")
    figures: dict[tuple[str, PointKey], dict[str, list[float]]] = {}
    repeats: dict[tuple[str, PointKey], int] = {}
    read: list[tuple[str, calibration_runs.RunFiles]] = []
    for path in paths:
        files: calibration_runs.RunFiles = {}
        for source, file in locate_results(path).items():
            results = files[source] = read_results(file)
            if not results.load_points:
                raise InputError(file, "--calibration: no load_point records (calibrate with `ragbench load` runs)")
            for key, point in checked_points(results).items():
                for figure in noise.FIGURES:
                    value = noise.run_figure(point, figure, p99_quantity(point))
                    if value is not None:
                        figures.setdefault((source, key), {}).setdefault(figure, []).append(value)
                repeats[(source, key)] = max(len(point.repeats), 1)
        read.append((f"--calibration {path}", files))
    calibration_runs.check_distinct(read)
    floors = {
        where: {f: floor for f, found in by_figure.items() if (floor := noise.noise_floor(found, repeats[where]))}
        for where, by_figure in figures.items()
    }
    return Calibration(tuple(str(p) for p in paths), floors, tuple(read))


def check_calibration(calibration: Calibration, baseline: Path, current: Path | None, match: dict[str, str]) -> None:
    """Refuse a calibration run that is the baseline or the current run (`current`: None where it is not
    measured yet), or a run of another sweep than the baseline's: one line naming its argument, exit 2."""
    if not calibration.read:
        return

    def files(path: Path) -> calibration_runs.RunFiles:
        return {source: read_results(file) for source, file in locate_results(path).items()}

    compared = (f"the current run ({current})", files(current)) if current is not None else None
    calibration_runs.check_against(calibration.read, (f"the baseline ({baseline})", files(baseline)), compared, match)


def compare_paths(baseline: Path, current: Path, config: GateConfig) -> Comparison:
    """Compare every results file of `current` with its counterpart in `baseline`."""
    base_files, cur_files = locate_results(baseline), locate_results(current)
    checks: list[Check] = []
    notes: list[str] = []
    if len(base_files) == 1 and len(cur_files) == 1:  # two single files pair whatever their paths
        (base_key, base_file), (cur_key, cur_file) = *base_files.items(), *cur_files.items()
        pairs = [(base_key if base_key == cur_key else "", base_file, cur_file)]
    else:
        pairs = [(key, base_files[key], cur_files[key]) for key in sorted(base_files) if key in cur_files]
        for key in sorted(set(base_files) - set(cur_files)):
            checks.append(
                Check(
                    "run", key, RESULTS_FILE, FAIL, f"{key}/{RESULTS_FILE} is in the baseline, not in the current run"
                )
            )
        for key in sorted(set(cur_files) - set(base_files)):
            notes.append(f"{key}/{RESULTS_FILE} is new in the current run: nothing to compare it with")
    loaded = [(key, read_results(b), read_results(c)) for key, b, c in pairs]
    _check_measures_named(config, [r for _, b, c in loaded for r in (b, c)])
    for key, base, cur in loaded:
        more_checks, more_notes = compare_results(base, cur, config, key)
        checks += more_checks
        notes += more_notes
    runs = [(key, cur) for key, _, cur in loaded]
    return Comparison(str(baseline), str(current), checks, notes, runs, config.inconclusive)


def _check_measures_named(config: GateConfig, results: list[Results]) -> None:
    known = {m for r in results for m in r.header.measures}
    primary = {m for _, m in config.primary}
    for flag, named in (("--max-drop", set(config.max_drop) - {"*"}), ("--primary", primary)):
        unknown = sorted(named - known)
        if unknown and any(r.header.measures for r in results):
            raise UserError(
                f"{flag} names {', '.join(unknown)}, which no compared run measured "
                f"(measured: {', '.join(sorted(known))})"
            )
    targets = {r.target for result in results for r in result.metrics}
    strangers = sorted({t for t, _ in config.primary if t is not None} - targets)
    if strangers:  # a misspelt target would leave nothing gated: a silent pass
        raise UserError(
            f"--primary names target {', '.join(strangers)}, which no compared run has "
            f"(targets: {', '.join(sorted(targets))})"
        )
    unused = sorted(set(config.max_drop) - {"*"} - primary) if primary else []
    if unused:  # an allowance that would gate nothing: the user meant it to gate something
        raise UserError(
            f"--max-drop names {', '.join(unused)}, which is not a --primary measure: only --primary checks "
            "are gated (add it to --primary, or drop its --max-drop)"
        )


def compare_results(base: Results, cur: Results, config: GateConfig, source: str = "") -> tuple[list[Check], list[str]]:
    """Every check between two results files."""
    notes: list[str] = []
    where = f"{source}: " if source else ""
    if base.header.command != cur.header.command and {base.header.command, cur.header.command} != {"quality", "demo"}:
        raise UserError(
            f"{where}baseline is a {base.header.command!r} run, current a {cur.header.command!r} run: "
            "nothing to compare"
        )
    for label, results in (("baseline", base), ("current", cur)):
        if results.end is None or results.end.status != "complete":
            status = results.end.status if results.end else "cut off (no end record)"
            notes.append(f"{where}the {label} run is {status}: only what it finished is compared")
    checks: list[Check] = []
    for compare_kind in (compare_quality, compare_cost, compare_identity, compare_load):
        more_checks, more_notes = compare_kind(base, cur, config, source)
        checks += more_checks
        notes += more_notes
    return checks, notes


def compare_quality(base: Results, cur: Results, config: GateConfig, source: str = "") -> tuple[list[Check], list[str]]:
    """Per target name and measure: the paired randomization test on the queries both runs judged."""
    run = _QualityRuns(base, cur, config, source)
    measures = [m for m in base.header.measures if m in cur.header.measures]
    notes = _quality_notes(run, measures)
    base_targets = list(dict.fromkeys(r.target for r in base.metrics))
    matched = {config.match.get(b, b) for b in base_targets}
    for name in sorted({r.target for r in cur.metrics} - matched):
        notes.append(f"{run.where}target {name} is new in the current run: nothing to compare it with")
    checks: list[Check] = []
    tested: list[Check] = []  # checks with a p-value, for Holm
    unloaded = not_under_load(base), not_under_load(cur)
    for base_name in base_targets:
        cur_name = config.match.get(base_name, base_name)
        if base_name in unloaded[0] or cur_name in unloaded[1]:
            checks += [_not_under_load(run, base_name, cur_name, m, unloaded) for m in measures]
            continue
        by_queries = _judged_queries(run, base_name, cur_name, measures, checks, notes)
        for qids, group in by_queries.items():
            judged = _tested(run, base_name, cur_name, group, qids)
            checks += judged
            tested += judged
    _judge_quality(tested, config)
    return checks, notes


@dataclass
class _QualityRuns:
    """The two quality runs compared, with what every check of them reads."""

    base: Results
    cur: Results
    config: GateConfig
    source: str

    def __post_init__(self) -> None:
        self.where = f"{self.source}: " if self.source else ""
        self.labels = {**self.base.header.measure_labels, **self.cur.header.measure_labels}
        self.base_scores = {(r.target, r.measure): r.per_query for r in self.base.metrics}
        self.cur_scores = {(r.target, r.measure): r.per_query for r in self.cur.metrics}

    def name(self, base_name: str, cur_name: str, measure: str) -> str:
        shown = cur_name if cur_name == base_name else f"{base_name}→{cur_name}"
        return f"{shown} {self.labels.get(measure, measure)}"


def _quality_notes(run: _QualityRuns, measures: list[str]) -> list[str]:
    """What changed between the runs beside the scores: the dataset, the measures, where relevance comes from."""
    where, notes = run.where, []
    bdata, cdata = run.base.header.dataset, run.cur.header.dataset
    if bdata.get("fingerprint") != cdata.get("fingerprint"):
        notes.append(
            f"{where}DATASET CHANGED: baseline {bdata.get('name')} (fingerprint {bdata.get('fingerprint')}, "
            f"{bdata.get('documents')} documents, {bdata.get('queries')} queries), current {cdata.get('name')} "
            f"(fingerprint {cdata.get('fingerprint')}, {cdata.get('documents')} documents, "
            f"{cdata.get('queries')} queries): scores are compared on the queries both judged, over different data"
        )
    for m in sorted(set(run.base.header.measures) ^ set(run.cur.header.measures)):
        notes.append(f"{where}measure {m} is in only one run: not compared")
    for m in measures:
        was, now = run.base.header.measure_relevance.get(m), run.cur.header.measure_relevance.get(m)
        if was and now and was != now:
            notes.append(f"{where}RELEVANCE CHANGED for {m}: judged by {was} in the baseline, by {now} now")
    return notes


def _not_under_load(
    run: _QualityRuns, base_name: str, cur_name: str, measure: str, unloaded: tuple[dict[str, str], dict[str, str]]
) -> Check:
    """A `quality --background` run whose stream failed is not a loaded measurement: never gated as one. The
    current run's fails its check (what it is named was not measured), the baseline's alone leaves it ungated."""
    name = run.name(base_name, cur_name, measure)
    if cur_name in unloaded[1]:
        return Check("quality", run.source, name, FAIL, f"{name}: not measured under load ({unloaded[1][cur_name]})")
    why = f"the baseline's {base_name} is not measured under load ({unloaded[0][base_name]})"
    return Check("quality", run.source, name, INFO, f"{name}: not gated: {why}", not_gated=why)


def _judged_queries(
    run: _QualityRuns,
    base_name: str,
    cur_name: str,
    measures: list[str],
    checks: list[Check],
    notes: list[str],
) -> dict[tuple[str, ...], list[str]]:
    """The queries both runs judged, per measure (measures judged on the same queries share draws); a measure
    with none fails its check (appended to `checks`), one judged on different queries gets a note."""
    by_queries: dict[tuple[str, ...], list[str]] = {}
    for measure in measures:
        name = run.name(base_name, cur_name, measure)
        b, c = run.base_scores.get((base_name, measure)), run.cur_scores.get((cur_name, measure))
        if b is None:
            continue
        if c is None:
            summary = f"{name}: no scores in the current run (target failed or missing)"
            checks.append(Check("quality", run.source, name, FAIL, summary))
            continue
        qids = tuple(sorted(set(b) & set(c)))
        if len(qids) != len(b) or len(qids) != len(c):
            notes.append(
                f"{run.where}{name}: {len(b) - len(qids)} baseline and {len(c) - len(qids)} current "
                f"queries are judged in one run only; compared on the {len(qids)} both judged"
            )
        if not qids:
            checks.append(Check("quality", run.source, name, FAIL, f"{name}: no query judged in both runs"))
            continue
        by_queries.setdefault(qids, []).append(measure)
    return by_queries


def _tested(run: _QualityRuns, base_name: str, cur_name: str, group: list[str], qids: tuple[str, ...]) -> list[Check]:
    """One check per measure of `group` with its effect, bootstrap interval and randomization p (not yet judged)."""
    config = run.config
    vb = _score_matrix(run.base, run.base_scores, base_name, group, qids)
    vc = _score_matrix(run.cur, run.cur_scores, cur_name, group, qids)
    diffs = vc - vb
    # Seeded by the pair's names: a check's figures do not depend on which other targets ran.
    rng = seeded_generator(config.seed, base_name, cur_name)
    lows, highs = bootstrap_cis(diffs, config.bootstrap, rng)
    pvalues = randomization_tests(diffs, config.permutations, rng)
    checks = []
    for j, measure in enumerate(group):
        allowance, baseline_mean = config.allowance(measure), float(vb[:, j].mean())
        figures = {
            "target": cur_name,
            "baseline_target": base_name,
            "measure": measure,
            "label": run.labels.get(measure, measure),
            "n": len(qids),
            "baseline": baseline_mean,
            "current": float(vc[:, j].mean()),
            "effect": float(diffs[:, j].mean()),
            "ci_low": float(lows[j]),
            "ci_high": float(highs[j]),
            "ci_level": 0.95,
            "ci_adjusted": False,  # the check's own interval; the verdict is on the family's adjusted p
            "sd_diff": float(diffs[:, j].std(ddof=1)) if len(qids) > 1 else None,
            "p": float(pvalues[j]),
            "max_drop": str(allowance),
            "limit": allowance.limit(baseline_mean),
            "alpha": config.alpha,
        }
        name = run.name(base_name, cur_name, measure)
        not_gated = config.not_gated(base_name, cur_name, measure)
        checks.append(Check("quality", run.source, name, INFO if not_gated else PASS, "", figures, not_gated))
    return checks


def _judge_quality(tested: list[Check], config: GateConfig) -> None:
    """Holm over the family (the gated checks); a gated check fails when its drop is past the allowance and
    significant after the correction, and is inconclusive when that drop is significant only alone (its own
    p at most alpha, or its interval excluding 0). A check outside the family is reported, not gated."""
    family = [c for c in tested if not c.not_gated]
    for check, p_holm in zip(family, holm([c.figures["p"] for c in family])):
        f = check.figures
        f["p_holm"] = p_holm
        f["significant"] = p_holm <= config.alpha
        dropped = -f["effect"] > f["limit"]
        alone = f["p"] <= config.alpha or f["ci_high"] < 0
        if dropped and (f["significant"] or not config.significance):
            check.status = FAIL
        elif dropped and alone:  # a drop the family's correction can neither show nor rule out: never a pass
            check.status = FAIL if config.inconclusive == FAIL else PASS
            check.inconclusive = (
                f"INCONCLUSIVE, counted as {config.inconclusive} (--inconclusive {config.inconclusive})"
            )
    for check in tested:
        f = check.figures
        if check.not_gated:
            f["p_holm"] = f["significant"] = None  # outside the family: no corrected p, no verdict
        f["family"] = len(family)
        # The level a check is tested at when the rest of its family is unchanged: Holm's first step, alpha/m.
        f["mde_alpha"] = config.alpha / len(family) if not check.not_gated else config.alpha
        f["power"] = POWER
        f["mde"] = detectable_drop(f["sd_diff"], f["n"], f["mde_alpha"], POWER)
        check.summary = _quality_summary(check, config)


def _quality_summary(check: Check, config: GateConfig) -> str:
    f = check.figures
    head = (
        f"{check.name}: {f['baseline']:.4f} → {f['current']:.4f}, effect {f['effect']:+.4f} "
        f"[{f['ci_low']:+.4f}, {f['ci_high']:+.4f}] (95%, unadjusted), p {fmt_p(f['p'])}"
    )
    mde = "–" if f["mde"] is None else f"{f['mde']:.4f}"
    power = f"n {f['n']}, detects a drop ≥ {mde} ({POWER:.0%} power at alpha {f['mde_alpha']:.3g})"
    if check.not_gated:
        return f"{head}, {power}; not gated: {check.not_gated}"
    gate = f"max drop {f['max_drop']}" + (
        f", alpha {config.alpha:g} (Holm over {f['family']} gated check{'s' if f['family'] != 1 else ''})"
        if config.significance
        else ", significance off"
    )
    summary = f"{head} (Holm {fmt_p(f['p_holm'])}), {power}; {gate}"
    if check.inconclusive:
        summary += (
            f"; {check.inconclusive}: the drop is past its allowance and significant alone, not after Holm "
            f"over the {f['family']} gated checks (fewer with --primary, or more queries, would decide it)"
        )
    return summary


def checked_points(results: Results, match: dict[str, str] | None = None) -> dict[PointKey, LoadPointRecord]:
    """Every load point of a results file by its `PointKey` (endpoints renamed by `match`), each checked: a
    figure compare cannot judge, or the same point twice (which one counts cannot be told: appending a
    record must not hide a regression), is an input error naming the file and line."""
    points: dict[PointKey, LoadPointRecord] = {}
    for point in results.load_points:
        _check_point(point, results)
        key = PointKey.of(point, (match or {}).get(point.endpoint, point.endpoint))
        if key in points:
            raise InputError(
                results.path,
                f"load_point {point_label(point, point.endpoint)} again (first on line "
                f"{results.line(points[key])}): a results file measures each point once",
                results.line(point),
            )
        points[key] = point
    return points


def _check_point(point: LoadPointRecord, results: Results) -> None:
    """What the reader's types leave to check: counts and figures compare can judge (a hand-edited file)."""

    def bad(what: str) -> InputError:
        label = point_label(point, point.endpoint)
        return InputError(results.path, f"load_point record {label}: {what}", results.line(point))

    if point.loop == Loop.OPEN and as_number(point.rate) is None:
        raise bad(f"loop {point.loop!r} without a rate")
    requests = point.requests
    if min(requests.sent, requests.ok, requests.unsent, *requests.errors.values()) < 0:
        raise bad("requests.sent, ok, unsent and every errors count must be whole numbers >= 0")
    if requests.ok > requests.sent:
        raise bad(f"requests.ok {requests.ok} > sent {requests.sent}")
    texts_per_s = as_number(point.throughput.texts_per_s)
    if texts_per_s is None or texts_per_s < 0:
        raise bad(f"throughput.texts_per_s is {figure_text(point.throughput.texts_per_s)}, not a finite number >= 0")
    if as_number(point.duration_s) is None or point.duration_s < 0:
        raise bad(f"duration_s is {figure_text(point.duration_s)}, not a finite number >= 0")
    block = getattr(point.latency_ms, p99_quantity(point))
    p99 = block.p99 if block is not None else None
    p99_ms = as_number(p99)
    # No success: no latency; too few answers: a null p99 (insufficient, histograms.MIN_SAMPLES), not gated.
    insufficient = p99 is None and block is not None and block.count < histograms.MIN_SAMPLES["p99"]
    if (requests.ok or block is not None) and not insufficient and (p99_ms is None or p99_ms < 0):
        raise bad(f"latency_ms.{p99_quantity(point)}.p99 is {figure_text(p99)}, not a finite number >= 0")


def p99_quantity(point: LoadPointRecord) -> str:
    """The latency that counts: from the intended send time in the open loop (a stalled server cannot hide
    behind a slowed client), send to last byte otherwise."""
    return "scheduled" if point.loop == Loop.OPEN else "service"


def point_p99(point: LoadPointRecord) -> float | None:
    block: LatencySummary | None = getattr(point.latency_ms, p99_quantity(point))
    return as_number(block.p99) if block is not None else None


def compare_load(base: Results, cur: Results, config: GateConfig, source: str = "") -> tuple[list[Check], list[str]]:
    """Per matching sweep point: the error rate, always gated (strict by default: any rise fails), and the
    throughput ratio and p99 change, gated with their flags unless the load client saturated. A current
    point that measured nothing, or where nothing succeeded, fails whatever the rest says."""
    notes: list[str] = []
    current = checked_points(cur)
    matched: set[PointKey] = set()
    checks: list[Check] = []
    single = 0  # gated points without repeats on both sides: one run against one run, noise ignored
    uncalibrated: list[str] = []  # --calibration given, but this point not in two of its runs
    loose: list[str] = []  # calibrated over fewer than noise.MIN_RUNS runs: said in every output
    for key, b in checked_points(base, config.match).items():
        label = key.label
        c = current.get(key)
        if c is None:
            checks.append(Check("load", source, label, FAIL, f"{label}: not measured in the current run"))
            continue
        matched.add(key)
        ratio, change, check = _load_figures(b, c, label, config, source)
        checks.append(check)
        floors = config.calibration.floors.get((source, key), {})
        if config.calibration.runs and not floors:
            uncalibrated.append(label)
        fewest = min((floor.runs for floor in floors.values()), default=noise.MIN_RUNS)
        if fewest < noise.MIN_RUNS:
            loose.append(f"{label} ({fewest} runs)")
        judged = _noise_verdicts(check, b, c, config, f"{source}/{label}", floors)
        single += judged is None and (config.min_throughput_ratio is not None or config.max_p99_increase is not None)
        _judge_load(check, b, c, ratio, change, config, judged or {})
    if single:
        notes.append(
            f"{source + ': ' if source else ''}{single} load point(s) gated on one run against one run: the gate "
            "ignores noise (measure both runs with `ragbench load --repeat N` to gate on intervals; docs/ci.md)"
        )
    if uncalibrated:
        notes.append(
            f"{source + ': ' if source else ''}no calibration for load point(s) {', '.join(uncalibrated)}: "
            "not measured in two --calibration runs (the same sweep, on this runner), so gated without the "
            "runner's noise between runs"
        )
    if loose:
        notes.append(
            f"{source + ': ' if source else ''}load point(s) {', '.join(loose)} calibrated over fewer than "
            f"{noise.MIN_RUNS} distinct A/A runs: the runner's noise between runs is loosely estimated "
            "(give five or more --calibration runs)"
        )
    for key in current.keys() - matched:
        notes.append(
            f"{source + ': ' if source else ''}load point {key.label} is new in the "
            "current run: nothing to compare it with"
        )
    return checks, notes


def _not_gated(b: LoadPointRecord, c: LoadPointRecord, ratio: float | None, config: GateConfig) -> str:
    """Why throughput and p99 of a point pair are not gated (empty: they are)."""
    saturated = [(run, p.client.utilization) for run, p in (("baseline", b), ("current", c)) if p.client.saturated]
    if saturated:
        return "the load client saturated in the " + " and ".join(
            run + (f" run ({use:.0%} of its ceiling)" if as_number(use) is not None else " run")
            for run, use in saturated
        )
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
    floors: dict[str, noise.NoiseFloor],
) -> dict[str, str] | None:
    """The interval verdict of each gated figure (throughput, p99) when both points were repeated or the
    runner's noise is calibrated, said in the check's summary and figures; None otherwise (one run against one
    run)."""
    p99 = config.max_p99_increase
    limits = {"throughput": config.min_throughput_ratio, "p99": 1 + p99.value if p99 is not None else None}
    verdicts = noise.point_verdicts(b, c, p99_quantity(c), limits, config.seed, name, floors, config.bootstrap)
    if verdicts:
        check.figures["noise"] = [v.to_dict() for v in verdicts]
        check.summary += "; " + "; ".join(v.message() for v in verdicts)
    return None if verdicts is None else {v.figure: v.verdict for v in verdicts}


def _judge_load(
    check: Check,
    b: LoadPointRecord,
    c: LoadPointRecord,
    ratio: float | None,
    change: float | None,
    config: GateConfig,
    judged: dict[str, str],
) -> None:
    """The status of a matched point's check: the error rate always, throughput and p99 where gated (by their
    intervals where `judged` has a verdict, else one run against one run); a current point with no success fails
    whatever the rest says."""
    reason = _not_gated(b, c, ratio, config)
    slower = (
        not reason
        and ratio is not None
        and config.min_throughput_ratio is not None
        and judged.get("throughput", FAIL if ratio < config.min_throughput_ratio else PASS) == FAIL
    )
    later = (
        not reason
        and change is not None
        and config.max_p99_increase is not None
        and judged.get("p99", FAIL if change > config.max_p99_increase.value else PASS) == FAIL
    )
    more_errors = check.figures["error_rate_increase"] > config.max_error_rate
    if not c.requests.ok:
        check.status = FAIL
        check.summary += "; the current point " + (
            "measured nothing" if not c.requests.sent else "had no successful request"
        )
    elif slower or later or more_errors:
        check.status = FAIL
    elif reason:
        check.status = INFO
        check.not_gated = f"throughput and p99 not gated: {reason}"
        check.summary += f"; {check.not_gated} (the error rate is, and passed)"
    elif noise.INCONCLUSIVE in judged.values():
        policy = config.inconclusive
        check.status = FAIL if policy == FAIL else PASS
        check.inconclusive = f"INCONCLUSIVE, counted as {policy} (--inconclusive {policy})"
        check.summary += f"; {check.inconclusive}"
    else:
        check.status = PASS


def _load_figures(
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
        f"{label}: texts/s {_num(b_tput)} → {_num(c_tput)} (×{_num(ratio, 3)}), "
        f"p99 {_num(b_p99)} → {_num(c_p99)} ms ({'–' if change is None else f'{change:+.1%}'}), "
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
    }
    return ratio, change, Check("load", source, label, PASS, summary, figures)


# (figure, threshold key, +1 when higher is better): how far past its threshold a pair is
IDENTITY_FIGURES = {
    "identity_embed_pair": (
        "embed",
        [
            ("cosine_min", "min_cosine", 1),
            ("cosine_mean", "mean_cosine", 1),
            ("max_norm_diff", "max_norm_diff", -1),
            ("top10_overlap", "min_top10_overlap", 1),
        ],
    ),
    "identity_rerank_pair": (
        "rerank",
        [("max_score_diff", "max_score_diff", -1), ("kendall_tau_mean", "min_kendall_tau", 1)],
    ),
}


def compare_identity(
    base: Results, cur: Results, config: GateConfig, source: str = ""
) -> tuple[list[Check], list[str]]:
    """Per pair of endpoints: a verdict that flipped to fail, or a failing pair whose figures got worse past
    their thresholds, is a regression; per endpoint, batch invariance or top_n honoured lost."""
    checks: list[Check] = []
    notes: list[str] = []
    where = f"{source}: " if source else ""
    for kind, (label, figures) in IDENTITY_FIGURES.items():
        current = {(p.a, p.b): p for p in cur.of(kind)}
        seen: set[tuple[str, str]] = set()
        for b in base.of(kind):
            a_name, b_name = config.match.get(b.a, b.a), config.match.get(b.b, b.b)
            key = (a_name, b_name) if (a_name, b_name) in current else (b_name, a_name)
            name = f"{label} {a_name} vs {b_name}"
            c = current.get(key)
            if c is None:
                checks.append(Check("identity", source, name, FAIL, f"{name}: not measured in the current run"))
                continue
            seen.add(key)
            checks.append(_identity_pair(b, c, name, figures, source))
        for key in current.keys() - seen:
            notes.append(f"{where}identity pair {label} {key[0]} vs {key[1]} is new in the current run")
    current_endpoints = {e.name: e for e in cur.of("identity_endpoint")}
    for b in base.of("identity_endpoint"):
        c = current_endpoints.get(config.match.get(b.name, b.name))
        if c is None:
            continue  # its pairs say it is missing
        for attr, good, what in (
            ("batch_verdict", "pass", "batch invariance"),
            ("top_n_honoured", True, "top_n honoured"),
        ):
            was, now = getattr(b, attr), getattr(c, attr)
            if was is None and now is None:
                continue
            status = FAIL if was == good and now != good else PASS
            checks.append(
                Check(
                    "identity",
                    source,
                    f"{c.name} {what}",
                    status,
                    f"{c.name} {what}: {was} → {now}",
                    {"endpoint": c.name, "baseline": was, "current": now},
                )
            )
    return checks, notes


def _identity_pair(b: Any, c: Any, name: str, figures: list[tuple[str, str, int]], source: str) -> Check:
    thresholds = c.thresholds if isinstance(c.thresholds, dict) else {}
    parts, worse = [], []
    for figure, limit_key, sign in figures:
        was, now, limit = (
            as_number(getattr(b, figure)),
            as_number(getattr(c, figure)),
            as_number(thresholds.get(limit_key)),
        )
        parts.append(
            f"{figure} {_g(was)} → {_g(now)}"
            + (f" ({'≥' if sign > 0 else '≤'} {_g(limit)})" if limit is not None else "")
        )
        if now is None or limit is None:
            continue
        if sign * (now - limit) < 0 and (
            was is None or sign * (now - was) < 0
        ):  # past its threshold and worse than before
            worse.append(figure)
    flipped = b.verdict == "pass" and c.verdict != "pass"
    if flipped or (c.verdict != "pass" and worse):
        status = FAIL
    elif c.verdict != "pass":
        status = INFO  # failing in both runs and no worse: not a regression (identity's own exit code says it fails)
    else:
        status = PASS
    not_gated = "failing in both runs and no worse: not a regression (identity's own exit code says it fails)"
    verdict = f"verdict {b.verdict} → {c.verdict}" + (
        f" ({'; '.join(map(str, c.failures))})" if c.verdict != "pass" else ""
    )
    note = f"; worse past threshold: {', '.join(worse)}" if worse and not flipped else ""
    return Check(
        "identity",
        source,
        name,
        status,
        f"{name}: {verdict}; {', '.join(parts)}{note}",
        {
            "baseline_verdict": b.verdict,
            "current_verdict": c.verdict,
            "worse": worse,
            "dtype": c.dtype,
            **{f"baseline_{f}": as_number(getattr(b, f)) for f, _, _ in figures},
            **{f"current_{f}": as_number(getattr(c, f)) for f, _, _ in figures},
        },
        not_gated if status == INFO else "",
    )


def as_number(value: Any) -> float | None:
    """A figure from a record, or None where it is absent or not a finite number (hand-edited files)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def figure_text(value: Any) -> str:
    """A figure as the results file holds it, for a message: `null` where it is null (the reader reads a null
    figure back as NaN, and JSON has no NaN: the writer writes one as null)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "null"
    return repr(value)


def _errors(point: LoadPointRecord) -> int:
    return sum(point.requests.errors.values())


def _g(value: float | None) -> str:
    return "–" if value is None else f"{value:g}"


def _num(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _score_matrix(
    results: Results,
    scores: dict[tuple[str, str], dict[str, float]],
    target: str,
    measures: list[str],
    qids: tuple[str, ...],
) -> np.ndarray:
    """Per-query scores, queries x measures; a missing (null) or infinite score is an input error, never a NaN
    that would pass every check."""
    matrix = np.array([[scores[target, m][q] for m in measures] for q in qids], dtype=np.float64)
    if not np.isfinite(matrix).all():
        row, col = np.argwhere(~np.isfinite(matrix))[0]
        raise InputError(
            results.path,
            f"metrics record of {target} {measures[col]}: the score of query {qids[row]!r} is not a finite number",
        )
    return matrix


def fmt_p(p: float) -> str:
    """As the quality report prints p (bench.report.quality_tables, not imported: the report package loads
    matplotlib)."""
    return f"{p:.4f}" if p >= 1e-4 else f"{p:.1e}"


# Cost checks of a quality run: per target, what its quality cost (issue 16 §6).
#
# Two figures of each target, gated like a load point's throughput and p99 (the same ratio and relative change,
# the same flag grammar): the `ingest` cost block's texts/s (the corpus embedded through an endpoint; a higher
# rate is better) and the per-query p99 latency (targets that answer one query at a time; embed + search +
# rerank of a query). A figure absent from either run (no cost block, an ingest served wholly from the cache, a
# target ranked in one batch) is not gated, and the check says which and why; a target with neither figure in
# either run has no cost check unless a cost flag was given, then it is said not gated.


@dataclass(frozen=True)
class _Figure:
    """One gated cost figure of the two runs and why it is not gated (empty: it is)."""

    baseline: float | None
    current: float | None
    not_gated: str


def ingest_texts_per_s(target: TargetRecord) -> float | None:
    """The `ingest` cost block's texts/s; None without the block or when every text came from the cache."""
    return as_number(target.cost_blocks.get("ingest", {}).get("texts_per_s"))


def query_p99_ms(target: TargetRecord) -> float | None:
    return as_number(target.latency_ms.get("p99"))


def _ingest(b: TargetRecord, c: TargetRecord, config: GateConfig) -> _Figure:
    was, now = ingest_texts_per_s(b), ingest_texts_per_s(c)
    reason = ""
    if config.min_ingest_ratio is None:
        reason = "no --min-ingest-ratio"
    elif was is None or now is None:
        reason = "; ".join(  # a block without a rate: nothing was sent, every text came from the cache
            ("every text came from the cache" if "ingest" in t.cost_blocks else "no ingest cost block")
            + f" in the {run} run"
            for run, t, v in (("baseline", b, was), ("current", c, now))
            if v is None
        )
    return _Figure(was, now, reason)


def _p99(b: TargetRecord, c: TargetRecord, config: GateConfig) -> _Figure:
    was, now = query_p99_ms(b), query_p99_ms(c)
    reason = ""
    if config.max_query_p99_increase is None:
        reason = "no --max-query-p99-increase"
    elif was is None or now is None:
        missing = [run for run, v in (("baseline", was), ("current", now)) if v is None]
        reason = "no per-query latency (ranked in one batch or failed) in the " + " and ".join(missing) + " run"
    return _Figure(was, now, reason)


def _cost_check(b: TargetRecord, c: TargetRecord, name: str, config: GateConfig, source: str) -> Check:
    ingest, p99 = _ingest(b, c, config), _p99(b, c, config)
    ratio = ingest.current / ingest.baseline if ingest.baseline and ingest.current is not None else None
    change = p99.current / p99.baseline - 1 if p99.baseline and p99.current is not None else None
    slower = not ingest.not_gated and ratio is not None and ratio < (config.min_ingest_ratio or 0.0)
    limit = config.max_query_p99_increase
    later = not p99.not_gated and change is not None and limit is not None and change > limit.value
    parts = (("ingest texts/s", ingest), ("query p99", p99))
    skipped = [f"{what} not gated: {f.not_gated}" for what, f in parts if f.not_gated]
    limits = []
    if config.min_ingest_ratio is not None:
        limits.append(f"min ingest ratio {config.min_ingest_ratio:g}")
    if limit is not None:
        limits.append(f"max query p99 +{limit}")
    summary = (
        f"{name} cost: ingest texts/s {_num(ingest.baseline)} → {_num(ingest.current)} (×{_num(ratio, 3)}), "
        f"query p99 {_num(p99.baseline)} → {_num(p99.current)} ms "
        f"({'–' if change is None else f'{change:+.1%}'})" + (f"; {', '.join(limits)}" if limits else "")
    )
    if skipped:
        summary += "; " + "; ".join(skipped)
    status = FAIL if slower or later else INFO if len(skipped) == 2 else PASS
    figures = {
        "target": c.name,
        "baseline_target": b.name,
        "baseline_ingest_texts_per_s": ingest.baseline,
        "current_ingest_texts_per_s": ingest.current,
        "ingest_ratio": ratio,
        "min_ingest_ratio": config.min_ingest_ratio,
        "baseline_query_p99_ms": p99.baseline,
        "current_query_p99_ms": p99.current,
        "query_p99_change": change,
        "max_query_p99_increase": str(limit) if limit is not None else None,
        "not_gated": skipped,
    }
    return Check("cost", source, f"{name} cost", status, summary, figures, "; ".join(skipped) if status == INFO else "")


def _has_cost(t: TargetRecord) -> bool:
    return bool(t.cost_blocks) or query_p99_ms(t) is not None


def compare_cost(base: Results, cur: Results, config: GateConfig, source: str = "") -> tuple[list[Check], list[str]]:
    """One cost check per target of both runs (matched by `--match`): its ingest rate and per-query p99."""
    gating = config.min_ingest_ratio is not None or config.max_query_p99_increase is not None
    current = {t.name: t for t in cur.targets}
    checks = []
    for b in base.targets:
        name = config.match.get(b.name, b.name)
        c = current.get(name)
        if c is None or not (gating or _has_cost(b) or _has_cost(c)):
            continue  # a missing target fails its quality checks; a target with nothing to say has no check
        shown = name if name == b.name else f"{b.name}→{name}"
        checks.append(_cost_check(b, c, shown, config, source))
    return checks, []

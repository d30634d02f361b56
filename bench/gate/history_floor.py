"""The runner's noise between runs learned from the history of earlier runs (`compare --history DIR`).

A team that keeps its CI artifacts has the A/A runs `--calibration` asks for already: every earlier run of the
same load point since its last change point (bench/history/changepoints.py) measured the same build's speed on
this runner, as far as the history can tell. For each load point of the baseline, the runs of its series
(`history` groups runs by endpoint, op and settings) since the later of the last change points of its texts/s
and p99 series give the point's noise floor, exactly as that many `--calibration` runs would. The baseline and
the current run are left out of the history where it holds them (the same file, or the same run copied), and so
are runs created after the current one and copies of a run already counted.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.core.errors import UserError
from bench.gate import noise
from bench.gate.calibration import Calibration
from bench.gate.calibration_runs import same_run
from bench.gate.config import GateConfig
from bench.gate.inputs import locate_results
from bench.gate.points import checked_points
from bench.history.changepoints import runs_since_last_change
from bench.history.runs import results_files, run_instant
from bench.history.series import History, Series, point_configuration, read_history
from bench.load.points import PointKey
from bench.results.schema import LoadPointRecord
from bench.results.store import Results, read_results

ORIGIN = "runs of the --history since its last change point"
FIGURES = {noise.Figure.THROUGHPUT: "texts/s", noise.Figure.P99: "p99 ms"}  # a gated figure's series
MIN_RUNS = 2  # what --calibration needs: two runs make a spread


@dataclass(frozen=True)
class PointSegment:
    """One load point's runs since its last change point, as the history saw them."""

    label: str  # where the point is, as the gate names it
    runs: list[int]  # indices into the history's runs
    changed: bool  # whether a change point opened the segment (else: every run of the series)


def history_calibration(directory: str, baseline: Path, current: Path | None, match: dict[str, str]) -> Calibration:
    """The noise floor of every load point of `baseline` from the history at `directory` (a folder or a glob
    of earlier results), `baseline` and `current` left out of it; an empty calibration, said in a note, where
    no point has MIN_RUNS runs since its last change point."""
    compared = [read_results(f) for path in (baseline, current) if path is not None for f in _files(path)]
    currents = [read_results(f) for f in _files(current)] if current is not None else []
    where = f"--history {directory}"
    kept, left_out = _earlier_runs(results_files(directory), compared, currents, where)
    if not kept:
        return Calibration(
            notes=(*left_out, f"{where}: no earlier run besides the compared ones: gated without calibration")
        )
    history = read_history([str(path) for path in kept])
    floors: dict[tuple[str, PointKey], dict[noise.Figure, noise.NoiseFloor]] = {}
    segments: list[PointSegment] = []
    files = _baseline_files(baseline)
    for source, results in files:
        for key, point in checked_points(results, match).items():
            found = _point_floors(history, point, key.endpoint, f"{source}: {key.label}" if source else key.label)
            if found is not None:
                segments.append(found[0])
                # two single files pair whatever their folders: compare then keys the pair ""
                for keyed in {source, ""} if len(files) == 1 else {source}:
                    floors.update({(keyed, key): found[1]} if found[1] else {})
    notes = list(left_out)
    notes += _segment_notes(where, history, segments)
    if not segments and any(results.load_points for _, results in files):
        notes.append(f"{where}: none of the baseline's load points is in it: gated without calibration")
    used = sorted({i for s in segments if len(s.runs) >= MIN_RUNS for i in s.runs})
    if not floors:
        return Calibration(notes=tuple(notes))
    paths = tuple(str(history.runs[i].path) for i in used)
    return Calibration(runs=paths, floors=floors, notes=tuple(notes), origin=ORIGIN)


def _files(path: Path) -> list[Path]:
    return list(locate_results(path).values())


def _baseline_files(baseline: Path) -> list[tuple[str, Results]]:
    """The baseline's results files by their folder inside it, as compare pairs them."""
    return [(key, read_results(f)) for key, f in locate_results(baseline).items()]


def _earlier_runs(
    files: Sequence[Path], compared: Sequence[Results], currents: Sequence[Results], where: str
) -> tuple[list[Path], list[str]]:
    """The history's files that may calibrate: not a compared run (the same file, or a copy of it), created before
    the current run (a floor from runs after it would hold a change it cannot know of yet), each run once (copies
    of one run would calibrate ±0%); and the notes saying what was left out."""
    before = min((run_instant(r) for r in currents), default=None)
    kept: list[Results] = []
    dropped = {"compared": 0, "newer": 0, "copies": 0}
    for path in files:
        results = read_results(path)
        if any(same_run(results, other) for other in compared):
            dropped["compared"] += 1
        elif before is not None and run_instant(results) >= before:
            dropped["newer"] += 1
        elif any(same_run(results, other) for other in kept):
            dropped["copies"] += 1
        else:
            kept.append(results)
    notes = {
        "compared": f"{where}: {dropped['compared']} compared run(s) found in it, left out of it",
        "newer": f"{where}: {dropped['newer']} run(s) not older than the current run (created "
        f"{min(currents, key=run_instant).header.created if currents else ''}) left out: only earlier runs calibrate",
        "copies": f"{where}: {dropped['copies']} copy(ies) of runs already in it left out: each run counts once",
    }
    return [r.path for r in kept], [notes[kind] for kind, count in dropped.items() if count]


def _series(history: History, point: LoadPointRecord, endpoint: str, figure: str) -> Series | None:
    """The point's series, by the endpoint's current name or the baseline's."""
    for name in dict.fromkeys((endpoint, point.endpoint)):
        found = history.find(point_configuration(dataclasses.replace(point, endpoint=name)), figure)
        if found is not None:
            return found
    return None


def _point_floors(
    history: History, point: LoadPointRecord, endpoint: str, label: str
) -> tuple[PointSegment, dict[noise.Figure, noise.NoiseFloor]] | None:
    """A point's segment since the latest change point of its gated figures, and their floors over it; None
    where the history never measured the point."""
    by_figure = {f: s for f, name in FIGURES.items() if (s := _series(history, point, endpoint, name)) is not None}
    if not by_figure:
        return None
    starts = {f: runs_since_last_change(s)[0] for f, s in by_figure.items()}
    start = max(starts.values())
    changed = any(s.observations[0].run < start for s in by_figure.values())
    floors: dict[noise.Figure, noise.NoiseFloor] = {}
    runs: set[int] = set()
    for figure, series in by_figure.items():
        segment = [o for o in series.observations if o.run >= start]
        runs |= {o.run for o in segment}
        repeats = max((len(o.samples) for o in segment), default=1)
        floor = noise.noise_floor([o.value for o in segment], repeats) if len(segment) >= MIN_RUNS else None
        if floor is not None:
            floors[figure] = dataclasses.replace(floor, source="--history runs")
    return PointSegment(label, sorted(runs), changed), floors


def _segment_notes(where: str, history: History, segments: list[PointSegment]) -> list[str]:
    """How many runs each point's floor was learned from, from which run on: one line where every point
    shares it, else one per group of points; points with too few runs said apart."""
    groups: dict[tuple[int, int, bool], list[str]] = {}
    few: list[str] = []
    for segment in segments:
        if len(segment.runs) < MIN_RUNS:
            few.append(f"{segment.label} ({len(segment.runs)} run(s))")
        else:
            groups.setdefault((len(segment.runs), segment.runs[0], segment.changed), []).append(segment.label)
    notes = []
    for (count, first, changed), labels in groups.items():
        since = "since its last change point" if changed else "since its first run (no change point in it)"
        points = f" for load point(s) {', '.join(labels)}" if len(groups) > 1 or few else ""
        notes.append(
            f"{where}: noise floor from {count} runs of the history {since} (run {history.runs[first].name}){points}"
        )
    if few:
        notes.append(
            f"{where}: too few runs since the last change point for load point(s) {', '.join(few)}: "
            f"{MIN_RUNS} needed, so gated without the runner's noise between runs"
        )
    return notes


def with_history(config: GateConfig, baseline: Path, current: Path | None) -> GateConfig:
    """The gate's configuration calibrated by its `--history` (unchanged without one)."""
    if config.history is None:
        return config
    calibration = history_calibration(config.history, baseline, current, config.match)
    return dataclasses.replace(config, calibration=calibration)


def history_gate(config: GateConfig, history: str) -> GateConfig:
    """The gate with `--history` given on the command line (`run SUITE --history DIR`): it replaces the suite
    file's history; with the suite file's `calibration` it is refused, as `compare` refuses both."""
    if config.calibration.runs:
        raise UserError(f"--history {history}: the suite file's [gate] has calibration runs: give one, not both")
    return dataclasses.replace(config, history=history)


def check_history(config: GateConfig) -> None:
    """The history names results files (checked before a suite's jobs run: a bad folder is said first)."""
    if config.history is not None:
        results_files(config.history)

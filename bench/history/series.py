"""One series per gated figure and comparable configuration, over the runs of a history, in run order.

Runs are comparable when they measured the same thing: a quality target on the same dataset (fingerprint) with
the same spec; a load point of the same endpoint, op and settings (loop, batch or documents, concurrency, rate,
arrival, in-flight cap, burst, length); an identity pair of the same two endpoints. The figures are those
`compare` gates: each quality measure per target (with its per-query scores), a served target's ingest texts/s
and per-query p99, a load point's texts/s and p50 and p99 latency (with its repeats and intervals where it was
measured `load --repeat N`), an interleaved point's paired ratios B ÷ A of texts/s and p99 (`load --interleave`:
the rounds' ratios its samples), an identity pair's figures and verdict, and a grown ladder's rung (`grow`: one
configuration per target and planned rung size, its p50 and p99, quality and ingest docs/s). A target's vector
store (`store=` in its spec or name) is part of its configuration: runs on different stores are never one series,
and a note says which stores a target's series were split by.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from bench.history.figures import observations
from bench.history.figures import point_configuration as point_configuration  # re-exported: its old home
from bench.history.observations import Busy, Missing
from bench.history.observations import Gate as Gate  # re-exported, as the three below: their old home
from bench.history.observations import Observation as Observation
from bench.history.observations import Scale as Scale
from bench.history.observations import Series as Series
from bench.history.runs import HistoryRun, order_runs, read_runs
from bench.results.schema.run import spec_store, without_store


@dataclass
class History:
    runs: list[HistoryRun]
    series: list[Series]
    notes: list[str] = field(default_factory=list)  # runs left out, and why

    def jobs(self) -> list[str]:
        return sorted({s.job for s in self.series})

    def find(self, configuration: str, figure: str) -> Series | None:
        """The series of one configuration's figure (a load point's: `point_configuration(point)`, `texts/s`)."""
        return next((s for s in self.series if s.configuration == configuration and s.figure == figure), None)


def read_history(arguments: Sequence[str], label: str | None = None) -> History:
    """Every series of the runs the arguments name (files, folders, globs), ordered by `created` or a label."""
    found, notes = read_runs(arguments)
    placed = order_runs(found, label)
    collected: dict[tuple[str, str, str], Series] = {}
    missing: dict[str, tuple[int, str]] = {}  # series -> runs without its figure, and why
    for run, results in placed:
        for series, observation in observations(run, results):
            key = (series.job, series.configuration, series.figure)
            kept = collected.setdefault(key, series)
            if isinstance(observation, Observation):
                kept.observations.append(observation)
            elif isinstance(observation, Busy):
                kept.busy[run.index] = observation.reason
                said = f"run {run.name}: {series.configuration}: {observation.reason}: left out of its series"
                notes += [said] if said not in notes else []
            elif isinstance(observation, Missing):
                count, _ = missing.get(series.name, (0, ""))
                missing[series.name] = (count + 1, observation.reason)
            else:
                kept.invalid[run.index] = observation
                notes.append(f"run {run.name}: {series.name} is {observation}, not a figure: left out of its series")
    notes += [f"{name}: no figure in {count} run(s) ({why}): not gated there" for name, (count, why) in missing.items()]
    every = [_aligned(s) for s in collected.values() if s.observations]
    notes += _store_notes(every)
    return History([run for run, _ in placed], sorted(every, key=lambda s: (s.job, s.configuration, s.figure)), notes)


def _store_notes(series: list[Series]) -> list[str]:
    """A target measured on several vector stores (`store=` in its name or spec) has one series per store: said, so
    that a user reading one store's series knows the others are apart (never paired, never a change point)."""
    stores: dict[tuple[str, str], set[str]] = {}
    for s in series:
        stores.setdefault((s.job, without_store(s.configuration)), set()).add(
            spec_store(s.configuration) or "not named"
        )
    return [
        f"{configuration}: different stores: {' vs '.join(sorted(named))}: one series per store, not paired"
        for (_, configuration), named in sorted(stores.items())
        if len(named) > 1
    ]


def _aligned(series: Series) -> Series:
    """Quality scores kept on the queries every run scored, so that a change is paired by query."""
    if series.gate != Gate.QUALITY:
        return series
    shared = set.intersection(*(set(o.qids) for o in series.observations))
    series.qids = tuple(sorted(shared))
    if all(o.qids == series.qids for o in series.observations):
        return series
    kept: list[Observation] = []
    for o in series.observations:
        score = dict(zip(o.qids, o.samples))
        samples = tuple(score[q] for q in series.qids)
        kept.append(replace(o, samples=samples, qids=series.qids))
    series.observations = kept
    return series

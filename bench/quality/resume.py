"""What `quality --resume` keeps of the interrupted run: each finished target and the records written with it."""

from __future__ import annotations

import bisect

from bench.results.schema import (
    LoadPointRecord,
)
from bench.results.store import Results


def finished_targets(previous: Results) -> list[object]:
    """What `--resume` keeps of the interrupted run: each finished target with its queries, its metrics and the
    records written with it (`--background`: the stream of the rate it closed). A target cut between its records
    runs again (its finished queries are in its checkpoint)."""
    kept: list[object] = []
    written_with = _written_with(previous)
    for target in previous.targets:
        own = [m for m in previous.metrics if m.target == target.name]
        if {m.measure for m in own} != set(previous.header.measures):
            continue
        kept += [target, *[q for q in previous.queries if q.target == target.name], *own]
        kept += written_with.get(target.name, [])
    return kept


def _written_with(previous: Results) -> dict[str, list[LoadPointRecord]]:
    """The load points of a quality run by the target whose batch they were written in: the last target before
    them in the file (each target's records, and what `around_search` adds, are written as one batch)."""
    targets = sorted((previous.line(t) or 0, t.name) for t in previous.targets)
    lines = [line for line, _ in targets]
    found: dict[str, list[LoadPointRecord]] = {}
    for point in previous.load_points:
        before = bisect.bisect_left(lines, previous.line(point) or 0)
        if before:
            found.setdefault(targets[before - 1][1], []).append(point)
    return found

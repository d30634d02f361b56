"""What a `grow --resume` may continue: the same ladder (the options that differ named, each by its flag), the same
engine under each target name (one law is never fitted across two engines), and records that could have been
written by this ladder — a record read back is checked before any figure is made of it (a rung outside the plan,
an nDCG of 7.5, a negative latency: the file was changed by hand, and is refused with one line)."""

from __future__ import annotations

import math
from pathlib import Path

from bench.core.errors import UserError
from bench.results.schema import GrowLadder, GrowRungRecord
from bench.results.schema.grow import GrowUnit
from bench.targets.base import TargetSpec

# The ladder's facts by the option that sets them, in the order a difference is said.
_OPTIONS = (
    ("rungs", "--rungs"),
    ("unit", "--unit"),
    ("distractors", "--distractors"),
    ("queries", "--queries"),
    ("seed", "--seed"),
    ("slo", "--slo"),
)


def engine(spec: TargetSpec) -> str:
    """What answers under a target's name: its kind and mode (`openwebui:hybrid`, `bm25`, `hybrid+rerank`)."""
    return spec.kind + (f":{spec.variant}" if spec.variant else "") + ("+rerank" if spec.rerank else "")


def _shown(value: object) -> str:
    if isinstance(value, list):
        return ",".join(f"{v:,}" if isinstance(v, int) else str(v) for v in value)
    return "none" if value is None else str(value)


def ladder_difference(old: GrowLadder, new: GrowLadder) -> str | None:
    """The options whose values differ between the interrupted run's ladder and this one, each said briefly
    (`--rungs 1,000,10,000 there, 1,000,20,000 now`); None: the same ladder."""
    said = [
        f"{flag} {_shown(old.get(key))} there, {_shown(new.get(key))} now"
        for key, flag in _OPTIONS
        if old.get(key) != new.get(key)
    ]
    if not said and old.get("distractor_source") != new.get("distractor_source"):
        said.append("the --distractors source's documents changed")
    return "; ".join(said) or None


def engine_difference(old: GrowLadder, records: list[GrowRungRecord], specs: list[TargetSpec]) -> str | None:
    """A target name whose engine differs from the interrupted run's: from its header's engines, else (a run
    written before the header held them) from its records' kinds."""
    engines = old.get("engines")
    was = dict(engines) if engines else {r.target: str(r.kind) for r in records}
    for spec in specs:
        before, now = was.get(spec.name), engine(spec) if engines else spec.kind
        if before is not None and before != now:
            return f"target {spec.name} was {before} there, {now} now (another engine under the same name)"
    return None


def check_resume(
    folder: Path, old: GrowLadder, new: GrowLadder, records: list[GrowRungRecord], specs: list[TargetSpec]
) -> None:
    """Refuse (one line) a --resume of another ladder or another engine under a target's name."""
    differs = ladder_difference(old, new) or engine_difference(old, records, specs)
    if differs is not None:
        raise UserError(f"--resume {folder}: {differs}; give the same options, or start a new run")


def rung_problem(record: GrowRungRecord, ladder: GrowLadder) -> str | None:
    """Why a record read back could not have been written by this ladder (None: it could): the report and a
    --resume use only records that pass."""
    rungs = ladder.get("rungs") or []
    if not 1 <= record.rung <= len(rungs):
        return f"rung {record.rung} is not one of the ladder's {len(rungs)}"
    if record.unit != ladder.get("unit", record.unit):
        return f"its unit {record.unit} is not the ladder's {ladder.get('unit')}"
    if record.unit == GrowUnit.DOCS and record.size != rungs[record.rung - 1]:
        return f"size {record.size:,} is not rung {record.rung}'s {rungs[record.rung - 1]:,}"
    numbers: dict[str, float] = {"size": record.size, "added": record.added, "queries": record.queries}
    numbers |= {"ingest_seconds": record.ingest_seconds} | {f"latency {k}": v for k, v in record.latency_ms.items()}
    bad = next(
        (k for k, v in numbers.items() if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0)), None
    )
    if bad is not None:
        return f"{bad} {numbers[bad]!r} is no count or time"
    score = next((k for k, v in record.metrics.items() if not (isinstance(v, (int, float)) and 0.0 <= v <= 1.0)), None)
    if score is not None:
        return f"{score} {record.metrics[score]!r} is outside 0 to 1"
    rate = record.docs_per_s
    if rate is not None and not (math.isfinite(rate) and rate > 0):
        return f"docs_per_s {rate!r} is no rate"
    return None


def checked_records(folder: Path, records: list[GrowRungRecord], ladder: GrowLadder) -> list[GrowRungRecord]:
    """The interrupted run's records, each checked against its ladder, and each (target, rung) once; one line for
    the first that fails."""
    seen: set[tuple[str, int]] = set()
    for record in records:
        problem = rung_problem(record, ladder)
        if problem is None and (record.target, record.rung) in seen:
            problem = "written twice"
        if problem is not None:
            raise UserError(
                f"--resume {folder}: the record of {record.target} at rung {record.rung}: {problem}; the results file "
                "was changed: start a new run"
            )
        seen.add((record.target, record.rung))
    return records

"""Whether an interleaved record (`load --interleave`) holds figures a paired gate can judge at all: two rounds
or more, each round's rates and latencies finite numbers of 0 or more, and each ratio it states the ratio of
its two sides. A record read back from a file that is not so (a run cut after one round, an edited file) is
said to be one the gate cannot judge: never a pass with 0 checks (issue 50).

    why = unjudgeable(record.rounds)   # None: judge it; else the first reason, naming the round
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from bench.results.schema import InterleavedRecord, InterleavedRound, InterleavedRoundRecord
from bench.results.schema.load import InterleavedVerdict
from bench.results.store import Results

NAMES = {"texts_per_s": "texts/s", "p50": "p50", "p99": "p99"}
MIN_ROUNDS = 2  # a ratio's spread needs two rounds
RATIO_TOLERANCE = 1e-6  # relative: a stated ratio against its sides' (the writer divides the same two floats)

_SIDES = (  # (name, the two sides' fields, the ratio's field)
    ("texts/s", "baseline_texts_per_s", "current_texts_per_s", "texts_per_s_ratio"),
    ("p50", "baseline_p50_ms", "current_p50_ms", "p50_ratio"),
    ("p99", "baseline_p99_ms", "current_p99_ms", "p99_ratio"),
)


def unjudgeable(rounds: Sequence[InterleavedRound]) -> str | None:
    """Why these rounds cannot be judged (the first reason), or None."""
    if len(rounds) < MIN_ROUNDS:
        return f"{len(rounds)} round(s) measured on both sides; a paired ratio needs {MIN_ROUNDS}"
    numbers = [r.round for r in rounds]
    if any(not isinstance(n, int) or n < 1 for n in numbers) or len(set(numbers)) != len(numbers):
        # a record edited by hand: rounds are numbered 1, 2, ... in the order measured, each once
        return f"round numbers {numbers}: not 1, 2, ... each once"
    for r in rounds:
        why = _round_fault(r)
        if why is not None:
            return f"round {r.round}: {why}"
    return None


def _round_fault(r: InterleavedRound) -> str | None:
    for name, a_field, b_field, ratio_field in _SIDES:
        a, b, ratio = getattr(r, a_field), getattr(r, b_field), getattr(r, ratio_field)
        required = name == "texts/s"  # a rate is always measured (0: nothing answered); a latency may be missing
        for side, value in (("A's", a), ("B's", b), ("the ratio of", ratio)):
            if not _a_figure(value, required and side != "the ratio of"):
                return f"{side} {name} is {value!r}: not a finite number of 0 or more"
        if a and b is not None and (ratio is None or not math.isclose(ratio, b / a, rel_tol=RATIO_TOLERANCE)):
            return f"the {name} ratio {ratio} is not B ÷ A ({b:g} ÷ {a:g} = {b / a:g})"
    for side, slices in (("A's", r.baseline_slices_texts_per_s), ("B's", r.current_slices_texts_per_s)):
        bad = next((x for x in slices or [] if not _a_figure(x, required=False)), None)
        if bad is not None:
            return f"a slice of {side} texts/s is {bad!r}: not a finite number of 0 or more"
    return None


def _a_figure(value: object, required: bool) -> bool:
    if value is None:
        return not required
    return isinstance(value, int | float) and math.isfinite(value) and value >= 0


def cannot_judge_text(record: InterleavedRecord) -> str:
    """`CANNOT JUDGE (why): no pass`: the record's own fault, else the gated figures no pair of rounds measured."""
    why = unjudgeable(record.rounds) or ", ".join(NAMES.get(n, n) for n in record.not_judged) + " not judged"
    return f"CANNOT JUDGE ({why}): no pass"


def cut_pairs(results: Results) -> list[InterleavedRecord]:
    """The points whose rounds were written as they ended but whose `interleaved` record was not (the run was
    killed, or stopped before the point's end): a record of those rounds, to be judged by its reader (its verdict
    `cannot judge` until then; `stopped` says how it ended). None for a point with its `interleaved` record."""
    done = {(r.baseline, r.current, r.point) for r in results.interleaved}
    found: dict[tuple[str, str, str], list[InterleavedRoundRecord]] = {}
    for line in results.of("interleaved_round"):
        if isinstance(line, InterleavedRoundRecord) and (key := (line.baseline, line.current, line.point)) not in done:
            found.setdefault(key, []).append(line)
    end = "with no end record (killed)" if results.end is None else f"({results.end.status})"
    return [
        InterleavedRecord(
            baseline=key[0],
            current=key[1],
            point=key[2],
            latency=lines[0].latency,
            rounds=[line.round for line in lines],
            figures=[],
            verdict=InterleavedVerdict.CANNOT_JUDGE,
            stopped=f"the run stopped after {len(lines)} round(s) {end}",
            max_time_s=(results.header.load or {}).get("max_time_s"),
        )
        for key, lines in found.items()
    ]

"""How `quality --background` names a target's run at a background rate, `NAME@bgRATE` (rate 0: idle), and which
of those runs were not measured under load. One definition, for the command that runs them, the report that lines
them up and `compare`."""

from __future__ import annotations

import re

from bench.results.schema import PointStatus
from bench.results.store import Results

_LOADED = re.compile(r"^(?P<name>.+)@bg(?P<rate>[0-9.e+-]+)$")


def rate_text(rate: float) -> str:
    """The shortest text that reads back as exactly `rate` (`250`, `0.05`, `1234.6789`): two distinct rates never
    share a name, and a name's rate is its stream's, to the last bit."""
    text = repr(float(rate))
    return text.removesuffix(".0")


def loaded_name(name: str, rate: float) -> str:
    return f"{name}@bg{rate_text(rate)}"


def split_loaded_name(name: str) -> tuple[str, float] | None:
    """`NAME@bg200` -> ("NAME", 200.0); None for a target not run under `--background`."""
    match = _LOADED.match(name)
    if match is None:
        return None
    try:
        return match["name"], float(match["rate"])
    except ValueError:
        return None


def meaningful_pair(a: str, b: str) -> bool:
    """Whether two runs of a `--background` run answer a question when compared: a loaded run against its own idle
    run (what the load did), or two targets both idle (which is better). A loaded run against another target's run,
    or two loads of one target, answers none, and each such pair would only weaken the Holm correction of the
    rest. Without `--background` every pair is meaningful (every run is idle)."""
    (base_a, rate_a), (base_b, rate_b) = split_loaded_name(a) or (a, 0.0), split_loaded_name(b) or (b, 0.0)
    if base_a == base_b:
        return rate_a == 0 or rate_b == 0
    return rate_a == 0 and rate_b == 0


def not_under_load(results: Results) -> dict[str, str]:
    """Each loaded run (rate > 0) whose stream's `load_point` record is judged `failed` (nothing sent, or nothing
    succeeded) or `errors` (past its `max_error_rate`) -> why, naming the stream: its queries ran, but not under
    the load asked for, so neither the report nor `compare` may read it as a loaded measurement."""
    streams = {p.rate: p for p in results.load_points}
    found: dict[str, str] = {}
    for target in results.targets:
        split = split_loaded_name(target.name)
        stream = None if split is None or split[1] == 0 else streams.get(split[1])
        if stream is not None and stream.status in (PointStatus.FAILED, PointStatus.ERRORS):
            found[target.name] = f"its {rate_text(stream.rate or 0.0)}/s stream to {stream.endpoint}: {stream.problem}"
    return found

"""A history's series and their observations: the types `read_history` builds (bench/history/series.py) from each
run's figures (bench/history/figures.py), and how a record's value becomes a figure or is said in words."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Scale(StrEnum):
    """How a change of a figure is said: a ratio (speed, latency) or a difference (scores, cosines)."""

    RATIO = "ratio"
    DIFFERENCE = "difference"


class Gate(StrEnum):
    """Which of compare's limits a figure answers to."""

    QUALITY = "quality"  # --max-drop MEASURE=...
    THROUGHPUT = "throughput"  # --min-throughput-ratio
    P99 = "p99"  # --max-p99-ratio
    P50 = "p50"  # reported, not gated
    INGEST = "ingest"  # a served target's ingest texts/s: --min-throughput-ratio
    QUERY_P99 = "query_p99"  # a served target's per-query p99: --max-p99-ratio
    IDENTITY = "identity"  # reported, not gated


@dataclass(frozen=True)
class Observation:
    """One run's figure: its value, the values it rests on, and its interval where the run measured one."""

    run: int  # the run's index in the history
    value: float
    samples: tuple[float, ...] = ()  # load: each repeat's figure; quality: per-query scores in the series' qids order
    low: float | None = None
    high: float | None = None
    qids: tuple[str, ...] = ()  # quality: the queries of `samples` (the series' qids once aligned)


@dataclass
class Series:
    job: str  # the command that wrote the runs: quality | load | identity
    configuration: str  # what every run of it measured alike, in words
    figure: str  # nDCG@10, texts/s, p99 ms, ...
    gate: Gate
    scale: Scale
    higher_is_better: bool
    measure: str | None = None  # quality: the trec name --max-drop names
    qids: tuple[str, ...] = ()  # quality: the queries every run scored, in the samples' order
    observations: list[Observation] = field(default_factory=list)
    invalid: dict[int, str] = field(default_factory=dict)  # run -> its figure in words where it was no figure (nan, -3)
    busy: dict[int, str] = field(default_factory=dict)  # run -> why its window was the machine's (left out)

    @property
    def name(self) -> str:
        return f"{self.configuration} {self.figure}"

    @property
    def values(self) -> list[float]:
        return [o.value for o in self.observations]


@dataclass(frozen=True)
class Missing:
    """A run that measured a configuration without one of its gated figures (a p99 of fewer than 100 requests)."""

    reason: str


@dataclass(frozen=True)
class Busy:
    """A run whose window of a load point was the machine's, not the endpoint's (bench.load.points.point_too_busy)."""

    reason: str


# a figure; what stood where a figure should (nan, -3.0); why there was none; or why it was the machine's
Found = list[tuple[Series, Observation | str | Missing | Busy]]


def finite(value: Any) -> float | None:
    """A figure from a record, or None where it is absent or not a finite number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def figure(value: Any, scale: Scale) -> float | str | None:
    """A gated figure from a record: the number; None where it is absent (not measured); else what stood there in
    words: nan, inf, or on a ratio scale (speeds, latencies) a figure of 0 or below (no ratio to any run)."""
    if value is None:
        return None
    number = finite(value)
    if number is None or (number <= 0 and scale == Scale.RATIO):
        return repr(value) if not isinstance(value, float) else f"{value:g}"
    return number

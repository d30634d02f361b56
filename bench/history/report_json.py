"""`compare --history`'s JSON report (bench/report/history.py writes it), its shape typed: the runs, the detector
and limits it ran with, and per series its change points and the newest run's standing."""

from __future__ import annotations

from typing import TypedDict


class RunJson(TypedDict):
    index: int
    path: str
    created: str
    labels: dict[str, str]


class DetectorJson(TypedDict):
    alpha: float
    permutations: int
    bootstrap: int
    seed: int
    score_resolution: float


class LimitsJson(TypedDict):
    max_drop: dict[str, str]  # trec name (or `*`) -> the allowance as given
    min_throughput_ratio: float | None
    max_p99_ratio: float | None


class ChangeJson(TypedDict):
    position: int
    run: int
    run_name: str
    labels: dict[str, str]
    size: float
    ci_low: float
    ci_high: float
    p_value: float
    before: float
    after: float
    test: str


class OutOfLineJson(TypedDict):
    reference_runs: list[str]
    median: float
    bound: float
    spread: float
    level: float
    value: float
    size: float
    p_value: float
    past_bound: bool


class SeriesJson(TypedDict):
    job: str
    configuration: str
    figure: str
    gate: str
    scale: str
    higher_is_better: bool
    measure: str | None
    queries: int
    runs: list[int]
    values: list[float]
    intervals: list[list[float | None]]  # each run's interval; None: a figure without one
    change_points: list[ChangeJson]
    newest_segment_runs: int
    newest_change: ChangeJson | None
    breaches: list[str]
    undecided: str | None
    out_of_line: OutOfLineJson | None


class HistoryJson(TypedDict):
    verdict: str  # pass | fail
    runs: list[RunJson]
    notes: list[str]
    detector: DetectorJson
    limits: LimitsJson
    series: list[SeriesJson]

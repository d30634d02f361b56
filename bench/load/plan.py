"""A load run's typed plan: the sweep's points built once from its lists and checked, then consumed as they are.

plan = plan_sweep(sweep, requests_csv)   # `load`'s check builds it; `run_load(specs, plan, ...)` runs it
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from bench.load.points import PointConfig, SweepConfig
from bench.load.shares import check_schedule


@dataclass(frozen=True)
class SweepPlan:
    """The sweep's settings and its points, in the order they run; with `requests_csv`, every point keeps one row
    per measured request for that file."""

    sweep: SweepConfig
    points: tuple[PointConfig, ...]
    requests_csv: Path | None = None

    @property
    def base(self) -> PointConfig:
        return self.sweep.base

    @property
    def repeat(self) -> int:
        return self.sweep.repeat


def plan_sweep(sweep: SweepConfig, requests_csv: Path | None = None) -> SweepPlan:
    """The points of `sweep`, built once; each open loop's schedule within values.SCHEDULED_REQUESTS."""
    if requests_csv is not None:
        sweep = replace(sweep, base=replace(sweep.base, log_requests=True))
    points = tuple(sweep.points())
    check_schedule(points)
    return SweepPlan(sweep, points, requests_csv)

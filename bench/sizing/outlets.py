"""Where a size session's measurements go."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bench.results.lifecycle import OpenRun
from bench.results.schema import LoadPointRecord
from bench.sizing.telemetry import GpuSampler


@dataclass(frozen=True)
class Outlets:
    """Where a session's measurements go: the run's results file, the GPU sampler (None: none runs), the line
    printed for each point, and the notes said on the way."""

    writer: OpenRun
    sampler: GpuSampler | None
    report: Callable[[LoadPointRecord], None]
    say: Callable[[str], None]

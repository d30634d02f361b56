"""What a quality run is set to: its measures and settings, and what scoring a finished target needs."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from bench.datasets.answers import AnswerJudge
from bench.datasets.model import Dataset
from bench.quality.generation import GenerateSpec
from bench.quality.metrics import Measure
from bench.results.schema import (
    Relevance,
)


@dataclass
class QualityConfig:
    measures: list[Measure]
    depth: int = 100
    seed: int = 0
    generate: GenerateSpec | None = None  # answer every question from what each target retrieved
    hourly_usd: float | None = None  # the serving hardware's price per hour: the report's $ costs
    # Wraps each target's search (`--background`: the load stream it runs under); the list it yields takes
    # records to write with the target's own (the stream's load_point), filled when the context ends.
    around_search: Callable[[str], AbstractContextManager[list[Any]]] = field(
        default=lambda name: nullcontext([]), repr=False
    )


@dataclass
class Scoring:
    """What scoring a finished target needs besides its run."""

    dataset: Dataset
    config: QualityConfig
    judge: AnswerJudge
    labels: dict[str, str]
    relevance: dict[str, Relevance]

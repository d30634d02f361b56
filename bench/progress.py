"""Rich progress bars behind the plain ProgressFactory callback that targets use."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from bench.targets.base import ProgressFactory

console = Console(stderr=True)


@contextmanager
def progress_bars() -> Iterator[ProgressFactory]:
    """Bars on stderr; the display starts with the first bar, so a run that stops before any work prints nothing."""
    bars = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    TimeRemainingColumn(), console=console)

    def factory(description: str, total: int | None):
        if not bars.live.is_started:
            bars.start()
        task = bars.add_task(description, total=total)
        return lambda n: bars.advance(task, n)

    try:
        yield factory
    finally:
        if bars.live.is_started:
            bars.stop()

"""Rich progress bars behind the plain ProgressFactory callback that targets use."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

# What a long step is given to report progress: factory(description, total) -> advance(n). Targets, ingest and
# load take this plain callback, so none of them depends on how (or whether) bars are drawn.
ProgressFactory = Callable[[str, int | None], Callable[[int], None]]

console = Console(stderr=True)


class RateColumn(ProgressColumn):
    """Items per second (texts, queries), as rich estimates it from the recent advances; blank until known."""

    def render(self, task: Task) -> Text:
        return Text(f"{task.speed:,.0f}/s" if task.speed else "", style="progress.data.speed")


@contextmanager
def progress_bars() -> Iterator[ProgressFactory]:
    """Bars on stderr; the display starts with the first bar, so a run that stops before any work prints nothing."""
    bars = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        RateColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
    )

    def factory(description: str, total: int | None) -> Callable[[int], None]:
        if not bars.live.is_started:
            bars.start()
        task = bars.add_task(description, total=total)
        return lambda n: bars.advance(task, n)

    try:
        yield factory
    finally:
        if bars.live.is_started:
            bars.stop()

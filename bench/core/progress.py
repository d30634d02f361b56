"""Progress of long steps behind the plain ProgressFactory callback that targets use: rich bars on a terminal,
plain lines in a log (CI) — one when a phase starts and ends, and at most one every `LOG_EVERY_S` between."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

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


def no_progress(description: str, total: int | None) -> Callable[[int], None]:
    """The ProgressFactory that shows nothing."""
    return lambda n: None


console = Console(stderr=True)


class RateColumn(ProgressColumn):
    """Items per second (texts, queries), as rich estimates it from the recent advances; blank until known."""

    def render(self, task: Task) -> Text:
        return Text(f"{task.speed:,.0f}/s" if task.speed else "", style="progress.data.speed")


# A log that is not a terminal gets a progress line at most this often: a CI log shows a long run is alive
# without a line per query.
LOG_EVERY_S = 10.0


@dataclass
class _Phase:
    description: str
    total: int | None
    started: float
    done: int = 0
    finished: bool = False


class LogLines:
    """Progress as plain lines for a log: each phase's start and end, and between them the phases still running,
    at most one line every `every_s` seconds (`clock` is time.monotonic, a test's own clock)."""

    def __init__(
        self, write: Callable[[str], None], every_s: float = LOG_EVERY_S, clock: Callable[[], float] = time.monotonic
    ):
        self.write, self.every_s, self.clock = write, every_s, clock
        self.phases: list[_Phase] = []
        self.last_line = clock()

    def factory(self, description: str, total: int | None) -> Callable[[int], None]:
        phase = _Phase(description, total, self.clock())
        self.phases.append(phase)
        if total == 0:  # done before it starts (every file already uploaded): never a running "0/0" line
            phase.finished = True
            self.write(f"{description}: nothing to do")
        else:
            self.write(f"{description}: started" + (f" ({total:,} to do)" if total is not None else ""))
        return lambda n: self._advance(phase, n)

    def _advance(self, phase: _Phase, n: int) -> None:
        phase.done += n
        now = self.clock()
        if phase.total is not None and phase.done >= phase.total and not phase.finished:
            phase.finished = True
            self.write(f"{phase.description}: done, {self._count(phase)} in {now - phase.started:.1f} s")
        elif now - self.last_line >= self.every_s:
            self.last_line = now
            for running in (p for p in self.phases if not p.finished):
                self.write(f"{running.description}: {self._count(running)} after {now - running.started:.0f} s")

    def close(self) -> None:
        """A phase that ended short of its total (an error, Ctrl-C) says where it stopped."""
        for phase in (p for p in self.phases if not p.finished and p.total is not None):
            self.write(f"{phase.description}: stopped at {self._count(phase)}")

    @staticmethod
    def _count(phase: _Phase) -> str:
        return f"{phase.done:,}" if phase.total is None else f"{phase.done:,}/{phase.total:,}"


@contextmanager
def progress_bars() -> Iterator[ProgressFactory]:
    """Bars on stderr; the display starts with the first bar, so a run that stops before any work prints nothing.
    When stderr is not a terminal (a CI log), plain lines instead (`LogLines`)."""
    if not console.is_terminal:
        lines = LogLines(lambda text: console.print(text, markup=False, highlight=False, soft_wrap=True))
        try:
            yield lines.factory
        finally:
            lines.close()
        return
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

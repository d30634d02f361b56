"""How many rounds `load --interleave` runs: a fixed count (`--rounds N`, as before), or as many as decide within
a budget (`--max-time`): after every round the point's interval (an anytime-valid one, bench/gate/anytime.py,
judged by the command's callback) is looked at, and the rounds stop once it clears the limit either way, or
when the next round would not end before the point's share of the budget.

    rule = FixedRounds(10)                                    # --rounds 10
    rule = Budget.of(120.0, started, points=1, judge=judge)   # --max-time 120s: judge(point, rounds) -> SoFar

The budget is the whole job's: the clock starts when the command does (`started`), a share of it
(RESERVE_SHARE, at least RESERVE_MIN_S) is kept for writing the records and the report once the rounds end, and
what is left is shared by the points still to run. A round is started only when the longest round so far would
end before the point's deadline, so the job ends within the reserve of its budget; each round's line says the
rounds done, the time left and the rounds that still fit.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

# Kept from the budget for what follows the last round: the records written, the console's verdict, the report
# (matplotlib's import and the plots: ~10-15 s on a 2-core runner at load 12; measured in docs/ci.md).
RESERVE_SHARE = 0.1
RESERVE_MIN_S = 5.0
FIRST_ROUND_GUESS = 2.5  # before any round: the two windows (warm-up and drain included) times this


@dataclass(frozen=True)
class SoFar:
    """The point's rounds judged so far: decided (the interval cleared the limit either way, or nothing is gated
    that more rounds would decide) and the line that says where it stands."""

    decided: bool
    line: str


class RoundsRule(Protocol):
    def more(self, done: int) -> bool: ...
    def after(self, done: int, took_s: float, so_far: Callable[[], SoFar]) -> None: ...
    def label(self, round_: int) -> str: ...
    def stopped(self) -> str | None: ...


@dataclass
class FixedRounds:
    """`--rounds N`: N rounds, whatever they say."""

    rounds: int

    def more(self, done: int) -> bool:
        return done < self.rounds

    def after(self, done: int, took_s: float, so_far: Callable[[], SoFar]) -> None:
        return None

    def label(self, round_: int) -> str:
        return f"round {round_ + 1}/{self.rounds}"

    def stopped(self) -> str | None:
        return None


@dataclass
class Budget:
    """`--max-time`: rounds until decided or until the next would not end by `deadline` (clock seconds)."""

    deadline: float
    say: Callable[[str], None]
    clock: Callable[[], float] = time.monotonic
    window_s: float = 0.0  # a round's two windows, for the first round's guess
    longest_s: float = 0.0
    why: str | None = None
    started: float = field(default=0.0)
    max_time_s: float | None = None  # the job's --max-time, for the line when no round fits

    def __post_init__(self) -> None:
        self.started = self.clock()

    def left_s(self) -> float:
        return self.deadline - self.clock()

    def round_s(self) -> float:
        """The time a round is expected to take: the longest so far (a guess from the windows before any)."""
        return self.longest_s if self.longest_s > 0 else FIRST_ROUND_GUESS * self.window_s

    def more(self, done: int) -> bool:
        if self.why is not None:
            return False
        if self.left_s() < self.round_s():
            self.why = (
                self._no_round() if done == 0 else f"the budget was spent: {done} rounds in {self.spent_s():.0f} s"
            )
            return False
        return True

    def spent_s(self) -> float:
        return self.clock() - self.started

    def _no_round(self) -> str:
        """Why not even a first round ran: what a round is expected to take against the time the point had."""
        budget = f" in --max-time {self.max_time_s:g}s" if self.max_time_s is not None else ""
        return (
            f"no round fitted{budget}: a round takes ≈ {self.round_s():.0f} s here ({FIRST_ROUND_GUESS:g} x its two "
            f"windows, warm-ups included), {max(self.left_s(), 0.0):.0f} s were left for this point's rounds; "
            "give more time or a shorter --window/--warmup"
        )

    def after(self, done: int, took_s: float, so_far: Callable[[], SoFar]) -> None:
        self.longest_s = max(self.longest_s, took_s)
        found = so_far()
        fit = max(0, math.floor(self.left_s() / self.round_s()))
        if found.decided:
            self.why = f"decided after {done} rounds in {self.spent_s():.0f} s"
        tail = "decided" if found.decided else f"{self.left_s():.0f} s left, about {fit} more rounds fit"
        self.say(f"round {done} ({took_s:.1f} s): {found.line}; {tail}")

    def label(self, round_: int) -> str:
        return f"round {round_ + 1} (budget: {max(self.left_s(), 0.0):.0f} s left)"

    def stopped(self) -> str | None:
        return self.why


def job_deadline(max_time_s: float, started: float) -> float:
    """The clock time the last round of the job must end by: its budget less the reserve for what follows."""
    return started + max_time_s - max(RESERVE_MIN_S, RESERVE_SHARE * max_time_s)


def point_deadline(job_end: float, points_left: int, now: float) -> float:
    """A point's share of what is left of the job's rounds' time: the same for each point still to run."""
    return now + max(job_end - now, 0.0) / max(points_left, 1)

"""The `--max-time` budget of a size run: the time left, and the stop when the next measurement cannot fit."""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from bench.sizing.slo import sig3

# Of --max-time, what is kept for the recommendation and the report after the last measurement.
REPORT_SHARE, REPORT_MAX_S = 0.1, 30.0


class BudgetSpent(Exception):
    """The `--max-time` budget cannot hold the next measurement: the search ends with what it has."""


class Budget:
    """The time a whole `size` run may take (None: no limit), against a monotonic clock; `reserve_s` of it is kept
    for what follows the last measurement (the recommendation and the report: 14 s for 20 points on a busy
    2-core machine)."""

    def __init__(self, seconds: float | None, clock: Callable[[], float] = time.monotonic, reserve_s: float = 0.0):
        self.seconds, self.clock, self.reserve_s = seconds, clock, reserve_s
        self.started = clock()

    @property
    def spent(self) -> float:
        return self.clock() - self.started

    def left(self) -> float:
        return math.inf if self.seconds is None else self.seconds - self.reserve_s - self.spent

    def require(self, seconds: float) -> None:
        """Raise BudgetSpent unless `seconds` more fit in the budget."""
        if seconds > self.left():
            raise BudgetSpent(f"the {sig3(self.seconds or 0)} s budget (--max-time) was spent")


def run_budget(max_time_s: float | None) -> Budget:
    """A whole run's budget, its share for the recommendation and the report kept back."""
    return Budget(max_time_s, reserve_s=min(REPORT_SHARE * (max_time_s or 0.0), REPORT_MAX_S))

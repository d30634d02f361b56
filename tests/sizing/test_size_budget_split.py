"""How a `size` run's `--max-time` is split between the closed sweep and the saturation search (issue 48)."""

from __future__ import annotations

from bench.sizing.budget import run_budget
from bench.sizing.closed import CLOSED_SHARE, closed_share, closed_sweep
from bench.sizing.slo import Slo
from tests.sizing.test_sizing import closed_model

POINT_S = 4.0  # a closed point's 1 s warm-up and 3 s window (size's defaults)
TAKES_S = 6.0  # what one costs on the clock, its start and drain included (plan.OVERRUN × POINT_S)


def swept(max_time_s: float | None) -> tuple[list[int], float, list[str]]:
    """The batches a closed sweep of 1, 8 and 32 measures within a `max_time_s` budget (each point taking TAKES_S
    of a fake clock), the seconds it took, and what it said."""
    now = [0.0]
    budget = run_budget(max_time_s)
    budget.clock, budget.started = (lambda: now[0]), 0.0
    said: list[str] = []

    def measure(batch: int, concurrency: int):
        now[0] += TAKES_S
        return closed_model(batch, concurrency)

    points = closed_sweep(measure, [1, 8, 32], 64, Slo(100.0), closed_share(budget, POINT_S, said.append))
    return sorted({p.batch for p in points}), now[0], said


def test_the_closed_sweep_leaves_the_search_most_of_a_short_budget():
    """Issue 48: against a 4-slot heavy-tailed server the sweep of batches 1, 8 and 32 took 64 s of a 90 s budget;
    the search had 17 s, one probe, and answered nothing (a steady p95 pass there needs a window of 80 s or more).
    Within 90 s the sweep now measures its first batch whole and stops before a batch that would take it past a
    third of the budget; the search gets the rest, and the line says why the other batches were not swept."""
    batches, took, said = swept(90.0)
    assert batches == [1] and took <= CLOSED_SHARE * 81.0 + TAKES_S  # 81 s: 90 less the report's tenth
    assert len(said) == 1 and "the closed sweep ends here" in said[0]


def test_a_budget_that_holds_every_batch_sweeps_them_all():
    """The default 240 s budget (and none) still sweeps every batch: the batch choice is unchanged there."""
    for budget in (240.0, None):
        batches, _, said = swept(budget)
        assert batches == [1, 8, 32] and not said

"""`load --interleave --max-time` (bench/load/interleave_budget.py): rounds until the interval decides or the next
round would not end before the point's deadline, on a fake clock (no wall time); a round whose client could not
carry its windows is marked the machine's and left out; a run against two loopback servers stops once decided."""

from __future__ import annotations

import pytest

from bench.commands.interleave import paired_record
from bench.core.machine import MachineView
from bench.gate.config import GateConfig, GateOptions, build_gate_config
from bench.gate.paired import describe
from bench.load.interleave import Rounds
from bench.load.interleave_budget import Budget, FixedRounds, SoFar, job_deadline, point_deadline
from bench.load.interleave_slices import SideWindow
from bench.load.points import PointConfig
from bench.results.schema import Op
from bench.results.store import read_results
from tests.gate.helpers import load_point


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _drive(rule: Budget | FixedRounds, clock: FakeClock, round_s: float, decided_at: int | None) -> int:
    """The loop of bench/load/interleave.py's _point_rounds with rounds that take `round_s` on `clock` and are
    decided from round `decided_at` on: the rounds run."""
    done = 0
    while rule.more(done):
        clock.now += round_s
        done += 1
        found = SoFar(decided_at is not None and done >= decided_at, f"{done} rounds")
        rule.after(done, round_s, lambda found=found: found)
    return done


def test_the_budget_stops_before_a_round_that_would_end_past_its_deadline() -> None:
    """A deadline 100 s away, rounds of 7 s: 14 rounds (98 s); a 15th would end at 105 s, so it is not started.
    Each round's line says the time left and the rounds that still fit; the stop says why."""
    clock, lines = FakeClock(), []
    rule = Budget(clock.now + 100.0, lines.append, clock=clock, window_s=2.0)
    assert _drive(rule, clock, 7.0, None) == 14
    assert clock.now - 1000.0 <= 100.0
    assert lines[0] == "round 1 (7.0 s): 1 rounds; 93 s left, about 13 more rounds fit"
    assert rule.stopped() == "the budget was spent: 14 rounds in 98 s"


def test_the_rounds_stop_once_the_interval_decides() -> None:
    clock, lines = FakeClock(), []
    rule = Budget(clock.now + 100.0, lines.append, clock=clock, window_s=2.0)
    assert _drive(rule, clock, 3.0, decided_at=9) == 9
    assert lines[-1] == "round 9 (3.0 s): 9 rounds; decided"
    assert rule.stopped() == "decided after 9 rounds in 27 s"


def test_a_first_round_longer_than_the_budget_is_not_started() -> None:
    """Before any round the guess is 2.5 x the round's two windows: 2 x 10 s windows do not fit 40 s."""
    clock = FakeClock()
    rule = Budget(clock.now + 40.0, lambda line: None, clock=clock, window_s=20.0)
    assert _drive(rule, clock, 25.0, None) == 0
    assert rule.stopped() == (
        "no round fitted: a round takes ≈ 50 s here (2.5 x its two windows, warm-ups included), 40 s were left for"
        " this point's rounds; give more time or a shorter --window/--warmup"
    )


def test_fixed_rounds_are_as_before_whatever_the_interval_says() -> None:
    clock = FakeClock()
    assert _drive(FixedRounds(10), clock, 3.0, decided_at=2) == 10


def test_the_job_budget_keeps_a_reserve_and_shares_the_rest_among_the_points() -> None:
    """120 s: 12 s kept for the records and report (10%), 108 s for the rounds; 3 points share them."""
    end = job_deadline(120.0, started=0.0)
    assert end == pytest.approx(108.0)
    assert point_deadline(end, points_left=3, now=0.0) == pytest.approx(36.0)
    assert job_deadline(20.0, started=0.0) == pytest.approx(15.0)  # at least 5 s kept


def _rounds(lags: list[float | None]) -> Rounds:
    """Rounds of A (50 texts/s) and B (45 ± 8%), B's client loop lag per round as given; p50 10 ms (p99 20 ms)."""
    done = Rounds()
    host = MachineView(cores=2, load_start=8.0, load_end=9.5)
    for i, lag in enumerate(lags):
        a = load_point("a", batch=1, texts_per_s=50.0, machine=host)
        lagged = {"loop_lag_p99_ms": lag}
        b = load_point("b", batch=1, texts_per_s=45.0 * (1 + 0.08 * (-1) ** i), client_extra=lagged, machine=host)
        done.add(0, SideWindow(a, None))
        done.add(1, SideWindow(b, None))
        done.firsts.append("a")
    return done


def test_a_round_whose_client_lagged_past_its_scale_is_the_machines_and_left_out() -> None:
    """texts/s gated over 1 s windows (tolerated lag: 100 ms): rounds with a 150 ms lag are marked too busy (said,
    with the host's figures) and left out of the pairs; a 40 ms lag is carried."""
    point = PointConfig(op=Op.EMBED, batch=1, concurrency=4, duration_s=1.0)
    done = _rounds([1.0, 150.0, 40.0, 150.0, 1.5, 1.0])
    record = paired_record(point, done, GateConfig(min_throughput_ratio=0.97))
    busy = [r.round for r in record.rounds if r.too_busy is not None]
    assert busy == [2, 4]
    assert "woke 150 ms late at p99" in (record.rounds[1].too_busy or "")
    assert "load 9.5 on 2 cores" in (record.rounds[1].too_busy or "")
    assert record.rounds[1].current_loop_lag_p99_ms == 150.0 and record.rounds[1].machine is not None
    assert record.figures[0].rounds == 4


def test_a_gated_latency_judges_the_lag_on_the_median_request() -> None:
    """With --max-p99-increase the scale is the round's median request (10 ms here: the 5 ms floor): the 40 ms
    lag that texts/s alone carries is now the machine's."""
    point = PointConfig(op=Op.EMBED, batch=1, concurrency=4, duration_s=1.0)
    config = build_gate_config(GateOptions(min_throughput_ratio="0.97", max_p99_increase="10%"))
    record = paired_record(point, _rounds([1.0, 150.0, 40.0, 150.0, 1.5, 1.0]), config)
    assert [r.round for r in record.rounds if r.too_busy is not None] == [2, 3, 4]


def test_a_budget_spent_with_most_rounds_the_machines_is_too_busy_not_a_verdict() -> None:
    """3 of 5 rounds too busy and the 2 left cannot decide: the verdict is 'too busy' (with --max-time or a fixed
    --rounds alike), said with its figure; with every round carried the same noise is 'inconclusive'."""
    point = PointConfig(op=Op.EMBED, batch=1, concurrency=4, duration_s=1.0)
    config = GateConfig(min_throughput_ratio=0.97)
    done = _rounds([1.0, 150.0, 150.0, 1.0, 150.0])
    record = paired_record(point, done, config, max_time_s=120.0)
    assert record.verdict == "too busy" and paired_record(point, done, config).verdict == "too busy"
    assert describe(record)[0].endswith(
        "THIS MACHINE WAS TOO BUSY TO DECIDE (3 of 5 rounds left out, the client's event loop up to 150 ms late at "
        "p99, load up to 9.5 on 2 cores)"
    )
    assert paired_record(point, _rounds([1.0] * 5), config, max_time_s=120.0).verdict == "inconclusive"


@pytest.mark.slow  # an interleaved run against two loopback servers until decided (~10-20 s)
def test_a_budgeted_run_stops_once_a_2x_slower_server_is_flagged(servers, tmp_path, monkeypatch, capsys) -> None:
    """A 2x slower B is past ×0.9 from the first rounds: the run stops decided well before its 300 s, its record
    says the budget and why the rounds stopped, its intervals are the anytime ones; exit 1 (the verdict fails)."""
    from tests.harness.cli import run_cli

    a, b = servers(10), servers(20)
    out = tmp_path / "ab"
    flags = ["--interleave", "--max-time", "300s", "--window", "0.5s", "--warmup", "0.1s", "--concurrency", "2"]
    code, stdout, stderr = run_cli(
        ["load", "-e", f"a=tei@{a}", "-e", f"b=tei@{b}", *flags, "--min-throughput-ratio", "0.9", "--out", str(out)],
        monkeypatch,
        capsys,
    )
    assert code == 1, stderr
    (record,) = read_results(out / "results.jsonl").interleaved
    assert record.verdict == "fail" and record.max_time_s == 300.0
    assert (record.stopped or "").startswith("decided after") and len(record.rounds) < 30
    assert "--max-time 300s: anytime-valid 95% intervals" in stdout

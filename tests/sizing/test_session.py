"""The size session's own measuring: a point whose one request outlasted its window is measured again, stretched."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest

from bench.load.points import PointConfig
from bench.load.share import ShareResult
from bench.results.schema import LoadRequests, Loop, Op
from bench.sizing.budget import Budget
from bench.sizing.session import Outlets, SizeSession
from tests.sizing.test_sizing import point


def test_a_point_that_measured_nothing_because_one_request_outlasted_its_window_is_stretched(monkeypatch):
    """Batch 32 takes 5 s on a slow CPU: the 3 s window after a 1 s warm-up holds no answer. The point is measured
    again over 10 s (two such requests) after a warm-up as long as that request, and said; only that measurement is
    written, so the run does not exit 3 with a point that measured nothing."""
    import bench.sizing.session as session_module

    empty = replace(point("closed", 32, 0.0, 5000.0, concurrency=1), requests=LoadRequests(sent=0, ok=0, errors={}))
    answered = point("closed", 32, 6.4, 5000.0, concurrency=1)
    seen: list[PointConfig] = []

    def fake_measure_point(endpoint, config, workload, pool, tick, on_shares):
        seen.append(config)
        on_shares([ShareResult(worker=0, warmup_longest_s=5.0)])
        return empty if len(seen) == 1 else answered

    monkeypatch.setattr(session_module, "measure_point", fake_measure_point)
    written: list = []
    said: list[str] = []
    plan = SimpleNamespace(slo=SimpleNamespace(ms=2000.0), duration_s=3.0, warmup_s=1.0)
    session = SizeSession(
        SimpleNamespace(spec=SimpleNamespace(name="q")),  # type: ignore[arg-type]
        plan,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        Budget(None),
        Outlets(SimpleNamespace(write=written.append), None, lambda record: None, said.append),  # type: ignore[arg-type]
    )
    record = session.measure(
        PointConfig(op=Op.EMBED, loop=Loop.CLOSED, batch=32, concurrency=1, duration_s=3.0, warmup_s=1.0)
    )
    assert record is answered and written == [answered] and session.points == [answered]
    assert [(c.duration_s, c.warmup_s) for c in seen] == [(3.0, 1.0), (10.0, 5.0)]
    assert said and "measured nothing: a request took 5.0 s, longer than its 3 s window" in said[0]
    assert "measuring it again over 10 s" in said[0]


def test_a_signal_right_after_a_point_is_written_keeps_it_in_the_session(monkeypatch):
    """Ctrl-C while the terminal line of a written point is printed: the point is already among the session's
    points, so the best-so-far sizing record counts it (adopt_measured)."""
    import bench.sizing.session as session_module

    answered = point("closed", 8, 64.0, 100.0, concurrency=1)
    monkeypatch.setattr(session_module, "measure_point", lambda *args, tick, on_shares: answered)
    written: list = []

    def interrupted_report(record) -> None:
        raise KeyboardInterrupt

    session = SizeSession(
        SimpleNamespace(spec=SimpleNamespace(name="q")),  # type: ignore[arg-type]
        SimpleNamespace(slo=SimpleNamespace(ms=2000.0), duration_s=3.0, warmup_s=1.0),  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        Budget(None),
        Outlets(SimpleNamespace(write=written.append), None, interrupted_report, lambda line: None),  # type: ignore[arg-type]
    )
    config = PointConfig(op=Op.EMBED, loop=Loop.CLOSED, batch=8, concurrency=1, duration_s=3.0, warmup_s=1.0)
    with pytest.raises(KeyboardInterrupt):
        session.measure(config)
    assert written == [answered] and session.points == [answered]

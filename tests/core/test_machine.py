"""The machine's share of a window (bench/core/machine.py): the host's counters read, and the rule that says a
window was the machine's, not the endpoint's."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.core import machine
from bench.core.machine import CpuTimes, LagProbe, MachineView, MachineWatch, lag_limit_ms, read_cpu_times, too_busy


def test_proc_stat_cpu_line_is_read(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 5 50 800 20 1 2 22 0 0\ncpu0 50 2 25 400 10 0 1 11 0 0\n")
    assert read_cpu_times(stat) == CpuTimes(total=1000, idle=820, steal=22)


def test_an_old_kernel_without_steal_reads_zero(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 5 50 800\n")
    assert read_cpu_times(stat) == CpuTimes(total=955, idle=800, steal=0)


@pytest.mark.parametrize("text", ["", "intr 1 2 3\n", "cpu 1 2\n"])
def test_no_cpu_line_is_none(tmp_path: Path, text: str) -> None:
    stat = tmp_path / "stat"
    stat.write_text(text)
    assert read_cpu_times(stat) is None
    assert read_cpu_times(tmp_path / "missing") is None


def test_a_window_shares_busy_and_stolen_time(monkeypatch: pytest.MonkeyPatch) -> None:
    readings = iter([CpuTimes(total=1000, idle=800, steal=10), CpuTimes(total=2000, idle=1050, steal=60)])
    loads = iter([3.5, 11.25])
    monkeypatch.setattr(machine, "read_cpu_times", lambda: next(readings))
    monkeypatch.setattr(machine, "load_average", lambda: next(loads))
    view = MachineWatch.start().stop()
    assert view.busy_percent == pytest.approx(75.0) and view.steal_percent == pytest.approx(5.0)
    assert view.load == 11.25 and view.load_start == 3.5
    assert "load 11.2" in view.text() and "75% busy" in view.text() and "steal 5%" in view.text()


def test_the_real_host_is_read() -> None:
    view = MachineWatch.start().stop()
    assert view.cores >= 1
    if Path("/proc/stat").exists():
        assert view.load is not None and view.load >= 0


def test_too_busy_is_the_clients_lag_against_the_figures_scale() -> None:
    """Issue 45: a 200 ms stall read as the endpoint's p99 on a 2 s SLO tolerates 200 ms of lag, a 50 ms figure
    5 ms (the floor: the timer's own granularity below it)."""
    assert lag_limit_ms(2000.0) == pytest.approx(200.0) and lag_limit_ms(10.0) == machine.BUSY_LAG_FLOOR_MS
    host = MachineView(cores=2, load_start=11.0, load_end=14.0, busy_percent=100.0, steal_percent=0.0)
    assert too_busy(None, 50.0, host) is None  # no lag measured: nothing to say
    assert too_busy(4.0, 50.0, host) is None
    line = too_busy(180.0, 500.0, host)
    assert line is not None and line.startswith("this machine was too busy") and "180 ms" in line
    assert "load 14.0 on 2 cores" in line
    assert too_busy(180.0, 2000.0, host) is None


def test_the_lag_probe_sees_a_thread_held_off_the_cpu() -> None:
    """A thread that holds the interpreter (a pure-Python loop, no GIL release for its switch interval) delays the
    probe's wake-ups: the probe reports it; idle, it reports its floor."""
    import sys
    import time

    switch = sys.getswitchinterval()
    sys.setswitchinterval(0.05)  # the holder keeps the interpreter 50 ms at a time
    try:
        with LagProbe() as busy:
            end = time.perf_counter() + 1.5
            while time.perf_counter() < end:
                pass
    finally:
        sys.setswitchinterval(switch)
    assert busy.p99_ms() is not None and busy.p99_ms() >= 20.0  # half the held interval: named margin, any CPU
    with LagProbe() as quiet:
        time.sleep(0.2)
    assert quiet.p99_ms() is None  # 20 ticks: too few to say

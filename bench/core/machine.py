"""The machine's share of a timed figure: what the host did during a measured window, and whether the client
could carry it.

A latency or a rate measured on a busy host holds the host's stalls as well as the endpoint's: a client whose
event loop wakes 200 ms late stamps every answer in that stall 200 ms late, and a loopback server starved of CPU
answers late for the same reason. Every timed verdict (a `size` probe, a trace replay, an interleaved round, a
`grow` rung, a load point) records the window's `MachineView` and asks `too_busy` before it says anything of the
endpoint: a window the client could not carry is "this machine was too busy", never a failure of the endpoint
and never a pass (issue 45).

    watch = MachineWatch.start()
    ...  # the measured window
    view = watch.stop()
    why = too_busy(lag_p99_ms, scale_ms=slo_ms, machine=view)
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

PROC_STAT = Path("/proc/stat")
# The client's lateness that a figure on the scale `scale_ms` tolerates: its event loop's timer lag at p99 past
# this share of the scale (the SLO of a latency verdict, the median request of a throughput figure) is part of
# every answer it timed. 10%: a p99 verdict on the SLO's edge moves by at most that much.
BUSY_LAG_SHARE = 0.10
# Below this the lag is the timer's own granularity (libuv's millisecond timers, the 10 ms probe's period):
# never the reason a window is too busy.
BUSY_LAG_FLOOR_MS = 5.0


@dataclass(frozen=True)
class CpuTimes:
    """The host's CPU counters (/proc/stat's `cpu` line, in clock ticks, all cores summed)."""

    total: int
    idle: int  # idle + iowait
    steal: int  # time a hypervisor gave this guest's CPUs to another guest


@dataclass
class MachineView:
    """The host during a measured window: the 1-minute load average when it began and when it ended, the cores,
    and the share of the CPUs' time that was busy (every process: the client, a loopback server, others) and
    stolen by a hypervisor; None where the host does not say (no /proc)."""

    cores: int
    load_start: float | None = None
    load_end: float | None = None
    busy_percent: float | None = None
    steal_percent: float | None = None

    @property
    def load(self) -> float | None:
        """The higher of the two load averages: the window's load as far as two readings tell."""
        readings = [x for x in (self.load_start, self.load_end) if x is not None]
        return max(readings) if readings else None

    def text(self) -> str:
        """`load 11.2 on 2 cores, CPUs 97% busy, steal 0%` (what the host said of the window)."""
        parts = [f"load {self.load:.1f} on {self.cores} cores" if self.load is not None else f"{self.cores} cores"]
        if self.busy_percent is not None:
            parts.append(f"CPUs {self.busy_percent:.0f}% busy")
        if self.steal_percent is not None:
            parts.append(f"steal {self.steal_percent:.0f}%")
        return ", ".join(parts)


def read_cpu_times(path: Path = PROC_STAT) -> CpuTimes | None:
    """The `cpu` line of /proc/stat; None where there is none (not Linux) or it cannot be read."""
    try:
        with path.open() as lines:
            fields = lines.readline().split()
    except OSError:
        return None
    if len(fields) < 5 or fields[0] != "cpu":
        return None
    # user nice system idle iowait irq softirq steal (older kernels stop earlier: the rest are 0)
    ticks = ([int(x) for x in fields[1:9]] + [0] * 8)[:8]
    return CpuTimes(total=sum(ticks), idle=ticks[3] + ticks[4], steal=ticks[7])


def load_average() -> float | None:
    """The 1-minute load average; None where the platform has none."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


@dataclass(frozen=True)
class MachineWatch:
    """The host's counters at a window's start: `stop()` gives the window's MachineView."""

    load_start: float | None
    cpu_start: CpuTimes | None

    @classmethod
    def start(cls) -> MachineWatch:
        return cls(load_average(), read_cpu_times())

    def stop(self) -> MachineView:
        end = read_cpu_times()
        view = MachineView(cores=os.cpu_count() or 1, load_start=self.load_start, load_end=load_average())
        if self.cpu_start is not None and end is not None and end.total > self.cpu_start.total:
            spent = end.total - self.cpu_start.total
            view.busy_percent = round(100.0 * (1 - (end.idle - self.cpu_start.idle) / spent), 1)
            view.steal_percent = round(100.0 * (end.steal - self.cpu_start.steal) / spent, 1)
        return view


LAG_TICK_S = 0.01  # the lag probe's period, as the load workers' event-loop probe (bench/load/worker.py)


@dataclass
class LagProbe:
    """How late a thread's 10 ms timer wakes while synchronous work runs beside it (`grow`'s queries, one at a
    time): the load workers' event-loop probe for code that has no event loop. A descheduled process shows here
    first; its own floor is the interpreter's switch interval (5 ms), below BUSY_LAG_FLOOR_MS.

        with LagProbe() as probe: ...
        probe.p99_ms()
    """

    lags_ms: list[float] = field(default_factory=list)
    seconds: float = 0.0  # how long it ran
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> LagProbe:
        self._thread = threading.Thread(target=self._run, name="lag-probe", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        began = time.perf_counter()
        while True:
            due = time.perf_counter() + LAG_TICK_S
            if self._stop.wait(LAG_TICK_S):
                self.seconds = time.perf_counter() - began
                return
            self.lags_ms.append(max(0.0, time.perf_counter() - due) * 1000.0)

    def p99_ms(self) -> float | None:
        """The lag's 99th percentile; None when the probe ran under 100 periods (a second): too short to say. A
        starved probe ticks less often than every period, so it is judged on its running time, not its ticks."""
        if self.seconds < 100 * LAG_TICK_S or not self.lags_ms:
            return None
        return float(np.percentile(self.lags_ms, 99))


def lag_limit_ms(scale_ms: float) -> float:
    """The client's loop lag (p99) a figure on `scale_ms` tolerates: BUSY_LAG_SHARE of it, at least the floor."""
    return max(BUSY_LAG_FLOOR_MS, BUSY_LAG_SHARE * scale_ms)


def too_busy(lag_p99_ms: float | None, scale_ms: float, machine: MachineView | None = None) -> str | None:
    """Why the window is the machine's, not the endpoint's — the client's event loop woke later than a figure on
    `scale_ms` tolerates (its p99 lag past `lag_limit_ms`) — as one line with the host's figures; None: the
    client carried the window (or measured no lag)."""
    if lag_p99_ms is None or lag_p99_ms <= lag_limit_ms(scale_ms):
        return None
    host = f" ({machine.text()})" if machine is not None else ""
    return (
        f"this machine was too busy: the client's event loop woke {lag_p99_ms:.0f} ms late at p99, past the "
        f"{lag_limit_ms(scale_ms):.0f} ms a figure of {scale_ms:.0f} ms tolerates{host}"
    )

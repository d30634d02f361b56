"""The pool's stop time: when a driver ends the measured window of every share its worker processes run.

A pool's driver may end its shares' measured windows early (the worker processes of `bench.load.pool.worker_pool`
get it as their initializer's argument): an open or closed share then stops sending at that time, what was in
flight is awaited and counted, and what was due after it is never scheduled: neither sent nor `unsent`.
"""

from __future__ import annotations

import math
import multiprocessing


class StopTime:
    """The time (perf_counter: CLOCK_MONOTONIC, one clock for the processes of a machine) at which the driver ends
    the measured window of every share running in its worker processes; +inf until it is set. A double in shared
    memory, handed to each worker process when it starts (`install_stop`, the pool's initializer)."""

    def __init__(self) -> None:
        context = multiprocessing.get_context("spawn")
        self.shared = context.RawValue("d", math.inf)
        # The measured answers of the running point, tallied by the workers as they come, for a driver that ends a
        # window once its verdict is certain: [latency limit (s; inf: none), answers, answers past the limit].
        self.tally = context.Array("d", [math.inf, 0.0, 0.0])

    def set(self, when: float) -> None:
        self.shared.value = when

    def clear(self) -> None:
        self.shared.value = math.inf
        with self.tally.get_lock():
            self.tally[:] = [math.inf, 0.0, 0.0]

    def watch(self, limit_s: float) -> None:
        """Tally the next point's measured answers against `limit_s` (intended send → last byte)."""
        with self.tally.get_lock():
            self.tally[:] = [limit_s, 0.0, 0.0]

    def count(self, latency_s: float) -> None:
        """One measured answer of `latency_s` (a worker process calls this; nothing is watched while the limit is
        inf)."""
        with self.tally.get_lock():
            if self.tally[0] < math.inf:
                self.tally[1] += 1
                self.tally[2] += latency_s > self.tally[0]

    def counted(self) -> tuple[int, int]:
        """(answers, answers past the limit) so far."""
        with self.tally.get_lock():
            return int(self.tally[1]), int(self.tally[2])

    def get(self) -> float:
        return float(self.shared.value)


_pool_stop: StopTime | None = None  # this worker process's pool's stop time (None: shares run as planned)


def install_stop(stop: StopTime | None) -> None:
    global _pool_stop
    _pool_stop = stop


def pool_stop() -> StopTime | None:
    """This process's pool's stop time, or None when shares run as planned."""
    return _pool_stop


def stopped_at(when: float) -> bool:
    """The pool's driver ended the window at or before `when`."""
    return _pool_stop is not None and when >= _pool_stop.get()

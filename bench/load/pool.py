"""The executor a sweep's shares run on: local worker processes (or any Executor), started once, stopped at the end."""

from __future__ import annotations

import multiprocessing
import signal
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_EXCEPTION, Executor, Future, ProcessPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass

from bench.load.endpoint import InProcessCall, LoadEndpoint
from bench.load.share import SharePlan, ShareResult
from bench.load.stop_time import StopTime, install_stop
from bench.load.worker import run_share
from bench.results.schema import Op

MANAGER_JOIN_S = 5.0  # terminated workers end within a second; bounded should one not


def _start_worker(stop: StopTime | None) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the runner's to handle: it stops the workers
    install_stop(stop)


def worker_pool(workers: int, stop: StopTime | None = None) -> ProcessPoolExecutor:
    """Worker processes for the whole sweep (spawned: no inherited threads or sockets), started now; with `stop`,
    the driver can end their shares' measured windows early (bench/load/stop_time.py, StopTime)."""
    return spawning_pool(workers, stop).ready()


@dataclass(frozen=True)
class SpawningPool:
    """Worker processes being started: `ready()` waits until each is up (its imports done) and gives the pool."""

    pool: ProcessPoolExecutor
    started: list[Future[None]]

    def ready(self) -> ProcessPoolExecutor:
        try:
            for f in self.started:
                f.result()
        except BaseException:
            stop_pool(self.pool)
            raise
        return self.pool


def spawning_pool(workers: int, stop: StopTime | None = None) -> SpawningPool:
    """`worker_pool`'s processes, starting: the caller does something else (a preflight) while they import, then
    calls `ready()` (or `stop_pool(spawning.pool)` if that something failed)."""
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_start_worker,
        initargs=(stop,),
    )
    return SpawningPool(pool, [pool.submit(time.sleep, 0.2) for _ in range(workers)])


def stop_pool(pool: Executor) -> None:
    """Workers terminated, then the pool's manager thread waited for (bounded): left running, it closes its wakeup
    pipe while the interpreter's exit hook writes to it ("Exception ignored ... Bad file descriptor", Python 3.11)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())  # None once shut down: stopped twice
    manager = getattr(pool, "_executor_manager_thread", None)
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    if manager is not None:
        manager.join(timeout=MANAGER_JOIN_S)


def run_plans(executor: Executor, plans: list[SharePlan], tick: Callable[[], None] = lambda: None) -> list[ShareResult]:
    return wait_plans([executor.submit(run_share, plan) for plan in plans], tick)


def wait_plans(futures: list[Future[ShareResult]], tick: Callable[[], None] = lambda: None) -> list[ShareResult]:
    """The submitted shares' results, `tick` called every 0.2 s meanwhile (what it raises goes on)."""
    while True:
        done, pending = wait(futures, timeout=0.2, return_when=FIRST_EXCEPTION)
        tick()
        if not pending or any(f.exception() for f in done):
            break
    return [f.result() for f in futures]


@contextmanager
def load_pool(
    endpoints: list[LoadEndpoint], op: Op, workers: int, pool_factory: Callable[[int], Executor] | None = None
) -> Iterator[Executor]:
    """The executor the shares run on (default: local worker processes), with every in-process endpoint's
    model loaded in it; stopped at the end, also on error or Ctrl-C."""
    pool = None
    try:
        pool = (pool_factory or worker_pool)(workers)
        for endpoint in endpoints:
            if endpoint.in_process:  # one worker (checked): the model loads in the process that measures
                pool.submit(InProcessCall(endpoint.spec, op, [("warm-up query", ["warm-up text"])]).warm).result()
        yield pool
    finally:
        if pool is not None:
            stop_pool(pool)

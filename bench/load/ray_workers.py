"""Load workers as Ray actors: the same `run_share` as the local worker processes, on any machine of a cluster.

`RayExecutor` is a `concurrent.futures.Executor` over N actors, so the load sweep (`measure_point`,
`run_load`) runs on it unchanged: each point's plans (one per worker: the closed-loop users, the open-loop
schedule or the burst split among them exactly as for `--workers`) go one to an actor, the actors start
together at the plan's start time, and their ShareResults (HDR histograms as encodings) merge exactly in
`merge_shares`. Each ShareResult names its host, so the record names every worker's machine.

Clocks: a plan's times are the driver's `perf_counter` (CLOCK_MONOTONIC), which means nothing on another
machine. The driver sends its wall-clock offset along; the actor moves the start time into its own
monotonic clock through the wall clock, and the result's times back. Hosts must agree on wall time
(NTP/PTP); their error adds to the start skew between machines, not to any latency (each latency is
measured on one machine's clock).

Needs the optional extra: `pip install 'ragbench[ray]'`.
"""

from __future__ import annotations

import itertools
import signal
import socket
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future
from dataclasses import replace
from typing import Any

from bench.core.errors import UserError
from bench.load.share import SharePlan, ShareResult
from bench.load.worker import run_share


class _ShareActor:
    """One load worker: one event loop, in its own Ray worker process."""

    def host(self) -> str:
        import socket

        return socket.gethostname()

    def run(self, plan: SharePlan, driver_wall_minus_perf: float) -> ShareResult:
        shift = driver_wall_minus_perf - (time.time() - time.perf_counter())  # local perf = driver perf + shift
        result = run_share(replace(plan, start_at=plan.start_at + shift))
        if result.first_measured is not None:
            result.first_measured -= shift
        if result.last_end is not None:
            result.last_end -= shift
        return result


CONNECT_TIMEOUT_S = 5.0  # a head that does not accept a TCP connection in this long is not there


def check_reachable(address: str) -> None:
    """A head's address (host:port, ray://host:port) that takes no TCP connection: one line now. Left to itself,
    ray.init retries such an address for minutes and then ends the process, bypassing every `finally`."""
    if address == "auto":  # Ray finds a local cluster itself, and says at once when there is none
        return
    host, _, port = address.split("://", 1)[-1].rpartition(":")
    if not host or not port.isdigit():
        raise UserError(f"--ray {address!r}: expected auto, or the head's host:port (as printed by `ray start --head`)")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise UserError(
            f"--ray {address}: no Ray cluster answers there ({exc.strerror or exc}); "
            "start one with `ray start --head`, or give its head's host:port"
        ) from None


class RayExecutor(Executor):
    """`workers` actors on the Ray cluster at `address`
    ("auto", or host:port of a head started with `ray start --head`)."""

    def __init__(self, address: str, workers: int, ray_module: Any = None):
        try:
            ray = ray_module or __import__("ray")
        except ImportError:
            raise UserError("--ray needs Ray: pip install 'ragbench[ray]'") from None
        self._ray = ray
        self._owns_connection = not ray.is_initialized()
        if self._owns_connection:
            check_reachable(address)
            handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
            try:
                ray.init(
                    address=address,
                    include_dashboard=False,
                    log_to_driver=False,
                    logging_level="ERROR",
                    configure_logging=False,
                )
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise UserError(f"--ray {address}: cannot connect to a Ray cluster ({exc})") from None
            finally:  # ray.init makes SIGTERM a bare sys.exit(15): Ctrl-C and SIGTERM stay ragbench's (130, 143)
                for signum, handler in handlers.items():
                    signal.signal(signum, handler)
        actor = ray.remote(num_cpus=1)(_ShareActor)
        self.actors = [actor.remote() for _ in range(workers)]
        self.hosts = ray.get([a.host.remote() for a in self.actors])
        self._next = itertools.cycle(range(workers))

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        """Runs `run_share(plan)` on the plan's actor (worker w on actor w); other callables are not shippable here."""
        if fn is not run_share or len(args) != 1 or kwargs:
            raise TypeError("RayExecutor runs run_share(plan) only")
        plan: SharePlan = args[0]
        actor = (
            self.actors[plan.worker % len(self.actors)] if plan.worker is not None else self.actors[next(self._next)]
        )
        future: Future[Any] = actor.run.remote(plan, time.time() - time.perf_counter()).future()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        for actor in self.actors:
            self._ray.kill(actor)
        self.actors = []
        if self._owns_connection and self._ray.is_initialized():
            self._ray.shutdown()

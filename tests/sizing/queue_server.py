"""A TEI-shaped server with a finite, known capacity: one request at a time, first come first served.

    python tests/sizing/queue_server.py --port P --service-ms 20
    python tests/sizing/queue_server.py --port P --busy-iterations 900000   # the service is CPU work

The load fixture server (tests/load/fixture_server.py) answers every request in parallel, so it has
no saturation rate; this one serves its requests in arrival order, each taking `service-ms`, so its
capacity is exactly 1000/service-ms requests/s: under constant arrivals below it every answer takes
the service time, above it the queue (and the scheduled latency) grows without bound.

Two kinds of service. By default (`--service-ms`) a request's service is a wait: the server's compute is not on
this machine's CPU (a TEI on a GPU: a CPU-bound neighbour does not slow its kernel), so only the client's share
of the CPU moves with the machine. With `--busy-iterations N` it is fixed CPU work instead: a busy loop of N
iterations per request, run on the event loop (one at a time, in arrival order), so a CPU-bound neighbour slows
the server as well (a TEI on the CPU). N is given, not measured here, so that twins do the same work.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.load.fixture_server import Handler, Server


class QueueServer(Server):
    def __init__(self, args):
        super().__init__(args)
        self.free_at = 0.0

    def due(self, arrived: float) -> float:
        """FIFO single server: work starts when the previous request is done."""
        if self.args.busy_iterations:
            busy(self.args.busy_iterations)  # the loop is blocked meanwhile: the next request waits its turn
            return time.monotonic()
        self.free_at = max(arrived, self.free_at) + self.args.service_ms / 1000
        return self.free_at


def busy(iterations: int) -> None:
    """Fixed CPU work: what takes longer when the CPU is shared."""
    for _ in range(iterations):
        pass


async def main(args) -> None:
    server = QueueServer(args)
    srv = await asyncio.get_running_loop().create_server(lambda: Handler(server), "127.0.0.1", args.port, backlog=1024)
    print("ready", flush=True)
    async with srv:
        await srv.serve_forever()


class _Off(argparse.Namespace):
    """The fixture server's other options (stall, overload, resets, batch limit), whatever they are: off."""

    def __getattr__(self, name: str) -> int:
        if name.startswith("_"):
            raise AttributeError(name)
        return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--service-ms", type=float, default=20.0)
    parser.add_argument("--busy-iterations", type=int, default=0, help="service as CPU work: a loop of N iterations")
    asyncio.run(main(_Off(**vars(parser.parse_args()))))

"""A TEI-shaped server with a finite, known capacity: one request at a time, first come first served.

    python tests/sizing/queue_server.py --port P --service-ms 20
    python tests/sizing/queue_server.py --port P --busy-iterations 900000   # the service is CPU work
    python tests/sizing/queue_server.py --port P --service-ms 20 --per-token-ms 0.1   # + OpenAI's /embeddings
    python tests/sizing/queue_server.py --port P --service-ms 148 --service-cv 1.5 --slots 4   # heavy-tailed, 4 slots

The load fixture server (tests/load/fixture_server.py) answers every request in parallel, so it has
no saturation rate; this one serves its requests in arrival order, each taking `service-ms`, so its
capacity is exactly 1000/service-ms requests/s: under constant arrivals below it every answer takes
the service time, above it the queue (and the scheduled latency) grows without bound.

Two kinds of service. By default (`--service-ms`) a request's service is a wait: the server's compute is not on
this machine's CPU (a TEI on a GPU: a CPU-bound neighbour does not slow its kernel), so only the client's share
of the CPU moves with the machine. With `--busy-iterations N` it is fixed CPU work instead: a busy loop of N
iterations per request, run on the event loop (one at a time, in arrival order), so a CPU-bound neighbour slows
the server as well (a TEI on the CPU). N is given, not measured here, so that twins do the same work.

OpenAI's `POST /embeddings` (or `/v1/embeddings`: what Open WebUI and `openai@` endpoints call) is served too, a
GPU's batch stand-in: its service is `service-ms + per-token-ms x tokens`, tokens = the inputs' characters / 4
(a BERT-style tokenizer's ~4 characters a token of English; characters, not words, because a trace recorded by
`ragbench meter` holds each text's characters and its replay sends texts of exactly those, so a call and its replay
take the same time). It waits in the same FIFO (sleep kind only) and answers feature-hashed word-count vectors
(tests/harness/hash_embedder.py), so an app's retrieval through it still works. The TEI routes keep `service-ms`
a request, whatever the batch.

Heavy tails (`--service-cv CV`, `--slots C`, `--service-seed S`): each request's service is drawn from a lognormal of
mean `service-ms` and coefficient of variation CV (a reranker's or an LLM-backed service's tail), served by C slots in
arrival order (M/G/c: a request starts on the first slot free). The draws are seeded, so the server's own service
times are known (`service_draws`): the truth a `size` answer is checked against is a queue simulation from them
(benchmarks/size_truth.py). By default (CV 0, one slot) the server is as before.
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.harness.hash_embedder import hash_vector
from tests.load.fixture_server import OPENAI_PATHS, Handler, Server, openai_body

CHARACTERS_PER_TOKEN = 4


def service_draws(service_ms: float, cv: float, count: int, seed: int = 0) -> np.ndarray:
    """`count` service times (s) of mean `service_ms` and coefficient of variation `cv` (lognormal; all equal at
    CV 0), in the order the server draws them with `--service-seed seed`."""
    if cv <= 0:
        return np.full(count, service_ms / 1000.0)
    sigma = math.sqrt(math.log(1.0 + cv * cv))
    mu = math.log(service_ms / 1000.0) - sigma * sigma / 2.0
    return np.random.default_rng(seed).lognormal(mu, sigma, count)


class QueueServer(Server):
    def __init__(self, args):
        super().__init__(args)
        self.free_at = 0.0
        self.slots = [0.0] * max(1, int(getattr(args, "slots", 1) or 1))  # when each slot is free next
        self.draws = iter(())  # the seeded service draws (--service-cv), a block at a time
        self.drawn = 0

    def service_s(self, service_ms: float) -> float:
        """One request's service: `service_ms`, or the next seeded lognormal draw of that mean with --service-cv."""
        cv = float(getattr(self.args, "service_cv", 0.0) or 0.0)
        if cv <= 0:
            return service_ms / 1000.0
        value = next(self.draws, None)
        if value is None:  # the next block of the one seeded sequence
            block = service_draws(service_ms, cv, self.drawn + 10_000, int(getattr(self.args, "service_seed", 0)))
            self.draws = iter(block[self.drawn :].tolist())
            value = next(self.draws)
        self.drawn += 1
        return float(value)

    def due(self, arrived: float) -> float:
        """FIFO single server: work starts when the previous request is done."""
        if self.args.busy_iterations:
            busy(self.args.busy_iterations)  # the loop is blocked meanwhile: the next request waits its turn
            return time.monotonic()
        return self.fifo_end(arrived, self.service_s(self.args.service_ms))

    def fifo_end(self, arrived: float, service_s: float) -> float:
        """When a request that arrived at `arrived` and needs `service_s` is done: on the first slot free, after every
        one before it. The clock is virtual (an answer late by the event loop does not delay the next), so the queue
        is deterministic."""
        start = max(arrived, heapq.heappop(self.slots))
        heapq.heappush(self.slots, start + service_s)
        self.free_at = start + service_s
        return self.free_at


class OpenAIHandler(Handler):
    """The fixture server's TEI routes, and OpenAI's `/embeddings` served in the FIFO (the module's docstring)."""

    def on_message_complete(self):
        if self.url.split(b"?")[0] not in OPENAI_PATHS or self.parser.get_method() != b"POST":
            super().on_message_complete()
            return
        s, a = self.server, self.server.args
        request, self.body = json.loads(b"".join(self.body)), []
        texts = request["input"] if isinstance(request["input"], list) else [request["input"]]
        tokens = sum(len(text) for text in texts) / CHARACTERS_PER_TOKEN
        due = s.fifo_end(self.arrived, s.service_s(a.service_ms) + a.per_token_ms * tokens / 1000)
        reply = openai_body([hash_vector(t) for t in texts], request.get("model", "hash"), round(tokens))
        self.loop.call_at(
            self.loop.time() + max(0.0, due - time.monotonic()),
            self.write,
            200,
            json.dumps(reply).encode(),
            "application/json",
        )


def busy(iterations: int) -> None:
    """Fixed CPU work: what takes longer when the CPU is shared."""
    for _ in range(iterations):
        pass


async def main(args) -> None:
    server = QueueServer(args)
    loop = asyncio.get_running_loop()
    srv = await loop.create_server(lambda: OpenAIHandler(server), "127.0.0.1", args.port, backlog=1024)
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
    parser.add_argument("--per-token-ms", type=float, default=0.0, help="/embeddings: + this a token (characters/4)")
    parser.add_argument("--slots", type=int, default=1, help="requests served at once, in arrival order (M/G/c)")
    parser.add_argument("--service-cv", type=float, default=0.0, help="lognormal service of this CV (0: fixed)")
    parser.add_argument("--service-seed", type=int, default=0, help="the seed of the lognormal service draws")
    asyncio.run(main(_Off(**vars(parser.parse_args()))))

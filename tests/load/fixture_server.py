"""A TEI-shaped loopback server with a known service time, a periodic stall and scripted faults.

Run as a subprocess (so a test can kill it mid-sweep):
    python tests/load/fixture_server.py --port P [--service-ms 2] [--stall-ms 100 --period-ms 500]
        [--overload-s 1.0] [--reset-every N] [--max-batch 32]

- service: every answer is written `service-ms` after its request arrived (requests are served in
  parallel: no queue of its own, so the analytic latency is exact);
- stall: during the first `stall-ms` of every `period-ms` (clocked from start), answers wait for the
  stall's end, then take the service time;
- requests are numbered without ragbench's preflight and drain probes (texts "warm-up text"): the first a point sends
  is request 1;
- `--overload-s`: for that long from the `--overload-from`-th request (default 1),
  answer 429 `{"error":"Model is overloaded","error_type":"Overloaded"}`
  (`--overload-status 500`, `401`, ...: that status instead, the same body);
- `--hang-after N`: the requests after the N-th, probes included, are never answered (the connection stays open: a
  hung server);
- `--bad-answer KIND` from the `--bad-from`-th request (default 1): 200 with a body of the
  right shape but wrong content: `nan` (a NaN in every vector or score), `empty` (`[[]]`, vectors of no
  dimension), `strings` (`[["a", ...]]`), `dim` (the dimension changes from 4 to 5);
- `--reset-every N`: every N-th request the connection is reset (RST) instead of answered;
- `--wrong-shape-every N`: every N-th answer is 200 with valid JSON in the wrong shape;
- OpenAI's `POST /embeddings` (or `/v1/embeddings`) is answered on the same clock, with the same faults, in OpenAI's
  shape (benchmarks/peers.py's stall comparison: tools that speak only OpenAI's shape meet the same stall);
- `--max-batch M`: more inputs than M -> 422 `batch size N > maximum allowed batch size M` (TEI 1.9);
- `--per-text-ms X`: each text adds X ms to the service time (a batch of 32 takes 32 X more);
- `--serial 1`: one request at a time, in arrival order (a queue, as a GPU server's): a request the client gave up
  on (timeout) is still served, and what arrives after it waits; `--serial N`: N such slots, one FIFO queue (M/G/N).
Successes carry TEI's timing headers; `/metrics` serves TEI's te_* families (shapes from
../shared/contracts/README.md) counting what this server did.
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import json
import socket
import time

import httptools

WARM_UP = {"warm-up text", "another warm-up text"}  # what ragbench's preflight and drain probes send
OPENAI_PATHS = (b"/embeddings", b"/v1/embeddings")  # OpenAI's route, with and without a /v1 base


def openai_body(vectors: list, model: str, tokens: int) -> dict:
    """OpenAI's `/embeddings` answer holding `vectors`: `{object, data: [{object, index, embedding}], model, usage}`."""
    data = [{"object": "embedding", "index": i, "embedding": vector} for i, vector in enumerate(vectors)]
    usage = {"prompt_tokens": tokens, "total_tokens": tokens}
    return {"object": "list", "data": data, "model": model, "usage": usage}


class Server:
    def __init__(self, args):
        self.args = args
        self.started = time.monotonic()
        self.first_request: float | None = None
        self.count = 0
        self.success = 0
        self.failures: dict[str, int] = {}
        self.duration_sum = 0.0
        self.duration_buckets = {0.005: 0, 0.05: 0, 0.5: 0, float("inf"): 0}
        self.slots_free = [0.0] * max(1, args.serial)  # --serial N: when each slot's request ends (a heap)

    def due(self, arrived: float) -> float:
        """When the answer to a request that arrived at `arrived` (monotonic) is written."""
        a = self.args
        phase = (arrived - self.started) % (a.period_ms / 1000) if a.stall_ms else 1e9
        start = arrived + (a.stall_ms / 1000 - phase) if phase < a.stall_ms / 1000 else arrived
        return start + a.service_ms / 1000

    def answer_at(self, arrived: float, texts: int) -> float:
        """`due`, plus --per-text-ms for each text, after what is ahead of it in --serial's queue."""
        a = self.args
        end = self.due(arrived) + a.per_text_ms * texts / 1000
        if a.serial:
            end = max(end, heapq.heappop(self.slots_free) + (a.service_ms + a.per_text_ms * texts) / 1000)
            heapq.heappush(self.slots_free, end)
        return end

    def metrics(self) -> str:
        lines = [
            "# HELP te_request_count Total number of requests",
            "# TYPE te_request_count counter",
            f'te_request_count{{method="batch"}} {self.count}',
            "# TYPE te_request_success counter",
            f'te_request_success{{method="batch"}} {self.success}',
            "# TYPE te_request_failure counter",
        ]
        lines += [f'te_request_failure{{err="{k}"}} {v}' for k, v in sorted(self.failures.items())]
        lines += ["# TYPE te_request_duration histogram"]
        for le, n in self.duration_buckets.items():
            lines.append(f'te_request_duration_bucket{{le="{"+Inf" if le == float("inf") else le}"}} {n}')
        lines += [
            f"te_request_duration_sum {self.duration_sum}",
            f"te_request_duration_count {self.success}",
            "# TYPE te_queue_size gauge",
            "te_queue_size 0",
        ]
        return "\n".join(lines) + "\n"


class Handler(asyncio.Protocol):
    def __init__(self, server: Server):
        self.server = server
        self.parser = httptools.HttpRequestParser(self)
        self.transport = None
        self.url = b""
        self.body: list[bytes] = []
        self.loop = asyncio.get_running_loop()

    def connection_made(self, transport):
        self.transport = transport
        sock = transport.get_extra_info("socket")
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data):
        self.arrived = time.monotonic()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self.transport.close()

    def on_url(self, url):
        self.url = url

    def on_body(self, body):
        self.body.append(body)

    def on_message_complete(self):
        s, a = self.server, self.server.args
        body, self.body = b"".join(self.body), []
        if self.url == b"/metrics":
            self.write(200, s.metrics().encode(), "text/plain; version=0.0.4")
            return
        if self.parser.get_method() == b"GET":
            info = {"model_id": "fixture", "model_dtype": "float32", "max_client_batch_size": a.max_batch or 32}
            self.write(200, json.dumps(info).encode() if self.url == b"/info" else b"", "application/json")
            return
        try:
            request = json.loads(body)
        except ValueError:
            request = None
        fields = ("inputs", "texts", "input")  # TEI's /embed, its /rerank, OpenAI's /embeddings
        inputs = next((request[f] for f in fields if request.get(f)), []) if isinstance(request, dict) else []
        # ragbench's preflight and its drain probes (bench/load/endpoint.py) are not counted: `count` numbers the
        # requests a point sends, so `--overload-from 1` is its first. Once hung, they hang too.
        probe = isinstance(inputs, list) and bool(inputs) and set(map(str, inputs)) <= WARM_UP
        if not probe:
            s.count += 1
        if s.first_request is None and s.count >= a.overload_from and not probe:
            s.first_request = self.arrived
        if a.hang_after and s.count >= a.hang_after and (s.count > a.hang_after or probe):
            return  # never answered
        if a.reset_every and not probe and s.count % a.reset_every == 0:
            self.transport.abort()  # RST: the client sees a connection reset mid-request
            return
        if request is None:
            self.refuse(400, "broken JSON", "Empty")
            return
        n = len(inputs) if isinstance(inputs, list) else 1
        if a.overload_s and s.first_request is not None and self.arrived - s.first_request < a.overload_s:
            self.refuse(a.overload_status, "Model is overloaded", "Overloaded")
            return
        if a.max_batch and n > a.max_batch:
            self.refuse(422, f"batch size {n} > maximum allowed batch size {a.max_batch}", "Validation")
            return
        bad = a.bad_answer if a.bad_answer and s.count >= a.bad_from else None
        if a.wrong_shape_every and not probe and s.count % a.wrong_shape_every == 0:
            payload = {"embeddings": [[0.5] * 4] * n}  # valid JSON, not TEI's shape
        elif self.url == b"/rerank":
            payload = [{"index": i, "score": float("nan") if bad == "nan" else 1.0 / (i + 1)} for i in range(n)]
        else:
            vector = {
                None: [0.5] * 4,
                "nan": [float("nan")] + [0.5] * 3,
                "empty": [],
                "strings": ["a", "b", "c", "d"],
                "dim": [0.5] * 5,
            }[bad]
            payload = [vector] * n
            if self.url.split(b"?")[0] in OPENAI_PATHS:  # the same vectors, on the same clock, in OpenAI's shape
                payload = openai_body(payload, str(request.get("model", "fixture")), 3 * n)
        arrived = self.arrived
        due = s.answer_at(arrived, n)

        def answer():
            took = time.monotonic() - arrived
            queue_ms = max(0.0, due - arrived - a.service_ms / 1000) * 1000
            headers = {
                "x-compute-type": "cpu",
                "x-compute-tokens": str(3 * n),
                "x-compute-characters": str(10 * n),
                "x-total-time": f"{took * 1000:.0f}",
                "x-compute-time": f"{took * 1000:.0f}",
                "x-queue-time": f"{queue_ms:.0f}",
                "x-tokenization-time": "0",
                "x-inference-time": f"{a.service_ms:.0f}",
            }
            s.success += 1
            s.duration_sum += took
            for le in s.duration_buckets:
                if took <= le:
                    s.duration_buckets[le] += 1
            self.write(200, json.dumps(payload).encode(), "application/json", headers)

        self.loop.call_at(self.loop.time() + max(0.0, due - time.monotonic()), answer)

    def refuse(self, status: int, message: str, error_type: str) -> None:
        self.server.failures[error_type.lower()] = self.server.failures.get(error_type.lower(), 0) + 1
        self.write(status, json.dumps({"error": message, "error_type": error_type}).encode(), "application/json")

    def write(self, status: int, payload: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        if self.transport.is_closing():
            return
        reason = {
            200: "OK",
            400: "Bad Request",
            401: "Unauthorized",
            422: "Unprocessable Entity",
            429: "Too Many Requests",
            500: "Internal Server Error",
        }.get(status, "Error")
        lines = [
            f"HTTP/1.1 {status} {reason}",
            f"Content-Type: {content_type}",
            f"Content-Length: {len(payload)}",
            *(f"{k}: {v}" for k, v in (headers or {}).items()),
        ]
        self.transport.write(("\r\n".join(lines) + "\r\n\r\n").encode() + payload)


async def main(args) -> None:
    server = Server(args)
    loop = asyncio.get_running_loop()
    srv = await loop.create_server(lambda: Handler(server), "127.0.0.1", args.port, backlog=1024)
    print("ready", flush=True)
    async with srv:
        await srv.serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--service-ms", type=float, default=2.0)
    parser.add_argument("--stall-ms", type=float, default=0.0)
    parser.add_argument("--period-ms", type=float, default=500.0)
    parser.add_argument("--overload-s", type=float, default=0.0)
    parser.add_argument("--overload-from", type=int, default=1)
    parser.add_argument("--reset-every", type=int, default=0)
    parser.add_argument("--max-batch", type=int, default=0)
    parser.add_argument("--wrong-shape-every", type=int, default=0)
    parser.add_argument("--overload-status", type=int, default=429)
    parser.add_argument("--hang-after", type=int, default=0)
    parser.add_argument("--bad-answer", choices=["nan", "empty", "strings", "dim"], default=None)
    parser.add_argument("--bad-from", type=int, default=1)
    parser.add_argument("--per-text-ms", type=float, default=0.0)
    parser.add_argument("--serial", type=int, default=0)
    import uvloop

    uvloop.run(main(parser.parse_args()))

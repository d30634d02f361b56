"""The stall server of tests/load/fixture_server.py (every request served in parallel in `service-ms`, except that
during the first `stall-ms` of every `period-ms` answers wait for the stall's end), with OpenAI's `/v1/embeddings`
answered on the same clock, so that tools which speak only OpenAI's shape (AIPerf, GuideLLM) meet the same stall.

    python benchmarks/peers_stall_server.py --port P --service-ms 2 --stall-ms 200 --period-ms 1000
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.load.fixture_server import Server
from tests.sizing.queue_server import OpenAIHandler, _Off


class StallServer(Server):
    """The fixture's clock behind the queue server's OpenAI route: no queue, the stall only."""

    def service_s(self, service_ms: float) -> float:
        return service_ms / 1000.0

    def fifo_end(self, arrived: float, service_s: float) -> float:  # the fixture's clock decides, not service_s
        return self.due(arrived)


async def main(args: argparse.Namespace) -> None:
    server = StallServer(args)
    loop = asyncio.get_running_loop()
    srv = await loop.create_server(lambda: OpenAIHandler(server), "127.0.0.1", args.port, backlog=4096)
    print("ready", flush=True)
    async with srv:
        await srv.serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--service-ms", type=float, default=2.0)
    parser.add_argument("--stall-ms", type=float, default=200.0)
    parser.add_argument("--period-ms", type=float, default=1000.0)
    import uvloop

    uvloop.run(main(_Off(**vars(parser.parse_args()))))

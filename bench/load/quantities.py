"""The timed quantities of a load point: each a histogram key in its record and a block of its summaries.

`latency_block(point.latency_ms, quantity)` reads a `LatencyQuantity`'s summary through one explicit mapping,
so a quantity's name is checked where it is read.
"""

from __future__ import annotations

from enum import StrEnum

from bench.results.schema import Latencies, LatencySummary, ServerTimes


class LatencyQuantity(StrEnum):
    """What the client times of each answer (`Latencies`' fields)."""

    SERVICE = "service"  # send -> last byte
    SCHEDULED = "scheduled"  # intended send -> last byte (open loop and burst)
    DISPATCH_DELAY = "dispatch_delay"  # intended send -> actual send (open loop and burst)


class ServerQuantity(StrEnum):
    """TEI's own split of each answer, from its response headers (`ServerTimes`' fields)."""

    QUEUE = "queue"
    TOKENIZATION = "tokenization"
    INFERENCE = "inference"


def latency_block(latencies: Latencies, quantity: LatencyQuantity | str) -> LatencySummary | None:
    """The summary of `quantity` (a LatencyQuantity or its name) in a point's `latency_ms`."""
    blocks = {
        LatencyQuantity.SERVICE: latencies.service,
        LatencyQuantity.SCHEDULED: latencies.scheduled,
        LatencyQuantity.DISPATCH_DELAY: latencies.dispatch_delay,
    }
    return blocks[LatencyQuantity(quantity)]


def server_times(summaries: dict[ServerQuantity, LatencySummary | None]) -> ServerTimes:
    """`ServerTimes` from each server quantity's summary."""
    return ServerTimes(
        queue=summaries[ServerQuantity.QUEUE],
        tokenization=summaries[ServerQuantity.TOKENIZATION],
        inference=summaries[ServerQuantity.INFERENCE],
    )

"""A load point whose window was the machine's, not the endpoint's (issue 45): what `compare` and `history` ask
before they judge its texts/s and p99.

`load` records each point's client loop lag (`client.loop_lag_p99_ms`) and the host during the window
(`machine`, bench/core/machine.py); a lag past a tenth of the point's median answer means every answer it timed
holds the machine's stall: `load` names such a point BUSY, `compare` does not gate its speed and p99 on it (neither
a pass nor a failure of the endpoint, said with the host's figures), and `history` neither draws a bound from it
nor fails it.
"""

from __future__ import annotations

from bench.load.points import machine_too_busy
from bench.results.schema import LoadPointRecord


def point_too_busy(point: LoadPointRecord) -> str | None:
    """Why a point's window was the machine's (`this machine was too busy: …`, with its figures), or None: the
    client carried it, or the run recorded no lag (written before issue 45)."""
    block = point.latency_ms.scheduled or point.latency_ms.service
    if block is None or block.p50 is None:
        return None
    return machine_too_busy(point, block.p50)

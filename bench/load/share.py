"""What one worker is given for its share of a sweep point (`SharePlan`) and what it gives back (`ShareResult`).

Both are plain serialisable values: the pool sends a plan to a worker process or a Ray actor and merges the
results (`bench.load.merge.merge_shares`).
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bench.core.http import DEFAULT_CAP, BodyCap
from bench.endpoints.base import EmbedWire, RerankWire
from bench.load.client import Target
from bench.results.schema import Loop


@dataclass
class SharePlan:
    worker: int
    mode: Loop
    target: Target | None  # None for in-process endpoints
    requests: list[bytes]  # pre-encoded requests (HTTP) or pickled call arguments' indexes (in-process)
    inputs: list[int]  # texts per request (parallel to `requests`)
    tokens: list[int]  # estimated tokens per request, used when the server does not count them
    start_at: float  # perf_counter (CLOCK_MONOTONIC, shared by the processes of one machine)
    warmup_s: float
    duration_s: float | None  # measured seconds after the warm-up, or None with `count`
    count: int | None = None  # measured requests (this share's part of --requests), closed loop
    users: int = 1  # closed: virtual users; burst: in-flight cap (0 = none)
    offsets: np.ndarray = field(default_factory=lambda: np.zeros(0))  # open/burst: intended offsets from start_at (s)
    max_inflight: int | None = None
    timeout_s: float = 30.0
    wire: EmbedWire | RerankWire | None = None  # the endpoint kind's wire (parse) for validating sampled answers
    call: Callable[[int], Any] | None = None  # in-process endpoints: call(request index) runs one request
    log_requests: bool = False  # keep one row per measured request (load --requests-csv); off: nothing kept
    answer_cap: BodyCap = DEFAULT_CAP  # the most of an answer's body read (the largest request's cap)


@dataclass
class ShareResult:
    worker: int
    sent: int = 0
    ok: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    error_examples: dict[str, str] = field(default_factory=dict)
    unsent: int = 0
    validated: int = 0  # 2xx answers whose body was parsed in full (the rest: status only)
    texts_ok: int = 0
    tokens_counted: int = 0  # from x-compute-tokens
    tokens_estimated: int = 0  # from the workload, for answers without the header
    first_measured: float | None = None  # perf_counter of the first measured intended/sent time
    last_end: float | None = None  # perf_counter of the last measured request's end: answer, error or timeout
    histograms: dict[str, str | None] = field(default_factory=dict)  # quantity -> HDR encoding
    cpu_s: float = 0.0
    idle_cpu_s: float = 0.0  # CPU spent yielding until an intended send time (open loop): waiting, not work
    handled: int = 0  # requests this worker sent over `cpu_s`, warm-up included: the client's cost per request
    wall_s: float = 0.0
    loop_lag: str | None = None  # HDR of the loop-lag probe
    host: str = field(default_factory=socket.gethostname)  # the machine this share ran on (Ray: any of a cluster)
    warmup_longest_s: float | None = None  # the longest answer to a request sent before the window (warm-up)
    scheduled: int | None = None  # open loop: sends its schedule set in the measured window
    scheduled_s: float | None = None  # open loop: that window's seconds (the pool's stop time may cut it)
    request_log: dict[str, list[Any]] | None = None  # plan.log_requests: REQUEST_COLUMNS -> one value per request


# One row per measured request (load --requests-csv): times in seconds from the point's start (intended: NaN in the
# closed loop), the outcome `ok` or the error class, texts, and tokens (the server's count, else the workload's).
REQUEST_COLUMNS = ("index", "intended_s", "sent_s", "end_s", "outcome", "texts", "tokens")

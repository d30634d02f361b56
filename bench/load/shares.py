"""Each point's share plans: its requests encoded once, its schedule built and split over the workers.

    start_at, plans = plans_starting(endpoint, point, workload)   # one SharePlan per active worker

The limits a point's plans must keep (schedule length, request memory) are checked here before anything is sent.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from time import perf_counter
from typing import TypeVar

import numpy as np

from bench.core import values
from bench.load.client import encode_request, target_of
from bench.load.endpoint import InProcessCall, LoadEndpoint
from bench.load.lengths import LengthsFrom
from bench.load.points import PointConfig, point_label
from bench.load.schedule import open_schedule, share, split_count
from bench.load.share import SharePlan
from bench.load.workload import DISTINCT_REQUESTS, Workload
from bench.results.schema import Loop, Op

START_LEAD_S = 0.25  # time for the plans to reach the worker processes before the first intended send


def share_plans(endpoint: LoadEndpoint, point: PointConfig, workload: Workload, start_at: float) -> list[SharePlan]:
    """One SharePlan per active worker: requests encoded once, the schedule split as `schedule.share` says."""
    workload = workload.with_length(point.length)
    payloads = _payloads(point, workload)
    template = SharePlan(
        worker=0,
        mode=point.loop,
        target=None,
        requests=[],
        inputs=[len(texts) for _, texts in payloads],
        tokens=_tokens(point, workload, payloads),
        start_at=start_at,
        warmup_s=point.warmup_s,
        duration_s=point.duration_s,
        timeout_s=point.timeout_s,
        wire=endpoint.wire,
        log_requests=point.log_requests,
    )
    if endpoint.in_process:
        template.call = InProcessCall(endpoint.spec, point.op, payloads)
    else:
        wired = [endpoint.request(payload) for payload in payloads]
        template.target = target = target_of(wired[0].url)
        template.requests = [encode_request(target, w.method, w.body(), endpoint.headers) for w in wired]
        template.answer_cap = max((w.cap for w in wired), key=lambda cap: cap.size)
    if point.loop == Loop.CLOSED:
        users = split_count(_set(point.concurrency), min(point.workers, _set(point.concurrency)))
        counts = split_count(point.requests, len(users)) if point.requests is not None else [None] * len(users)
        return [replace(template, worker=w, users=u, count=c) for w, (u, c) in enumerate(zip(users, counts))]
    if point.loop == Loop.OPEN:
        offsets = open_offsets(point)
        active = min(point.workers, point.max_inflight) if point.max_inflight else point.workers
        caps = split_count(point.max_inflight, active) if point.max_inflight else [None] * active
        # Offsets stay a numpy array: pickled to a worker in milliseconds (a list of millions of floats takes
        # seconds, in which the driver, holding the GIL, cannot even act on Ctrl-C).
        arrival = _set(point.arrival)
        shares = [share(offsets, w, active, arrival, point.seed) for w in range(active)]
        return [replace(template, worker=w, offsets=shares[w], max_inflight=caps[w]) for w in range(active)]
    return _burst_plans(endpoint, point, payloads, template)


def _burst_plans(
    endpoint: LoadEndpoint, point: PointConfig, payloads: list[tuple[str | None, list[str]]], template: SharePlan
) -> list[SharePlan]:
    """Each worker replays its own requests in order (offsets index its `requests` list), no warm-up."""
    n = len(payloads)
    cap = point.concurrency or 0
    active = min(point.workers, cap, n) if cap else min(point.workers, n)
    caps = split_count(cap, active) if cap else [0] * active
    plans = []
    for w in range(active):
        mine = list(range(w, n, active))
        plans.append(
            replace(
                template,
                worker=w,
                offsets=np.zeros(len(mine)),
                users=caps[w],
                warmup_s=0.0,
                duration_s=None,
                requests=[template.requests[i] for i in mine] if template.requests else [],
                inputs=[template.inputs[i] for i in mine],
                tokens=[template.tokens[i] for i in mine],
                call=InProcessCall(endpoint.spec, point.op, [payloads[i] for i in mine]) if template.call else None,
            )
        )
    return plans


def open_offsets(point: PointConfig) -> np.ndarray:
    check_schedule([point])  # also the probes `size` chooses as it goes
    arrival, rate = _set(point.arrival), _set(point.rate)
    if point.requests is None:
        seconds = point.warmup_s + _set(point.duration_s)
        return open_schedule(arrival, rate, seconds, None, point.seed, measured_from=point.warmup_s)
    warm = open_schedule(arrival, rate, point.warmup_s, None, point.seed) if point.warmup_s > 0 else np.zeros(0)
    measured = open_schedule(arrival, rate, None, point.requests, point.seed + 10_000)
    return np.concatenate((warm, point.warmup_s + measured))


def plans_starting(endpoint: LoadEndpoint, point: PointConfig, workload: Workload) -> tuple[float, list[SharePlan]]:
    """The point's start and plans, the start set START_LEAD_S after they are built. Building them cuts the workload
    to the point's length with the tokenizer (seconds on a busy machine): a start set before that would be past
    by the time the workers got their plans, the warm-up lost and the first measured requests sent late, their
    delay counted in `scheduled` latency as if the server had kept them waiting."""
    plans = share_plans(endpoint, point, workload, start_at=0.0)
    start_at = perf_counter() + START_LEAD_S
    return start_at, [replace(plan, start_at=start_at) for plan in plans]


T = TypeVar("T")


def _set(value: T | None) -> T:
    """A setting the point's loop always has (SweepConfig sets it): None here is a bug, not a user error."""
    if value is None:
        raise RuntimeError("load: a point without a setting its loop needs")
    return value


def _payloads(point: PointConfig, workload: Workload) -> list[tuple[str | None, list[str]]]:
    """Each request's query (rerank) and texts: a burst's chunks cut into batches (Open WebUI sends
    ceil(chunks / RAG_EMBEDDING_BATCH_SIZE) requests, the last one smaller), else the workload's requests."""
    if point.loop == Loop.BURST:
        burst = _set(point.burst)
        chunks = [workload.texts[i % len(workload.texts)] for i in range(burst)]
        batches = [chunks[i : i + point.batch] for i in range(0, burst, point.batch)]
        if point.op == Op.RERANK:
            return [(workload.queries[i % len(workload.queries)], docs) for i, docs in enumerate(batches)]
        return [(None, texts) for texts in batches]
    if point.op == Op.RERANK:
        return [(query, docs) for query, docs in workload.rerank_requests(point.batch, point.documents_draw)]
    return [(None, texts) for texts in workload.embed_batches(point.batch)]


def _tokens(point: PointConfig, workload: Workload, payloads: list[tuple[str | None, list[str]]]) -> list[int]:
    """Estimated tokens per request (the server's own count replaces them where it sends one)."""
    if point.op == Op.RERANK:
        q_tokens = workload.count_tokens([q or "" for q, _ in payloads])
        return [sum(q_tokens[i] + t for t in workload.count_tokens(docs)) for i, (_, docs) in enumerate(payloads)]
    return [sum(workload.count_tokens(texts)) for _, texts in payloads]


def check_schedule(points: Sequence[PointConfig]) -> None:
    """An open loop's send times are computed before its point starts: at most values.SCHEDULED_REQUESTS."""
    for p in points:
        if p.loop == Loop.OPEN:
            scheduled = _set(p.rate) * (p.warmup_s + (p.duration_s or 0.0)) + (p.requests or 0)
            values.at_most(
                f"load: {point_label(p)} over {p.warmup_s:g} s of warm-up and "
                + (f"{p.requests} requests" if p.requests else f"{p.duration_s:g} s measured"),
                scheduled,
                values.SCHEDULED_REQUESTS,
                "lower --rate, --duration or --warmup",
            )


def _per_text(workload: Workload, length: int | LengthsFrom, per_word: float) -> float:
    """Bytes a text of `length` takes: at most `length` words', or the mean of the texts cut to a drawn length."""
    if isinstance(length, int):
        return length * per_word
    cut = workload.with_length(length).texts  # made now, kept for the run: drawn lengths are known once cut
    return sum(len(json.dumps(t, ensure_ascii=False).encode()) for t in cut) / len(cut)


def check_request_memory(points: Sequence[PointConfig], workload: Workload) -> None:
    """Each point's requests are encoded before it starts and copied to every worker: all copies together
    within values.REQUEST_MEMORY, estimated from the workload before anything is sent or written."""
    texts = workload.texts
    body = sum(len(json.dumps(t, ensure_ascii=False).encode()) for t in texts)  # what a wire body holds per text
    per_word = body / max(1, sum(len(t.split()) for t in texts))  # a text of N tokens has at most N words
    for p in points:
        per_text = body / len(texts) if p.length is None else _per_text(workload, p.length, per_word)
        ring = workload.with_length(p.length).ring(p.batch) if p.length is not None else DISTINCT_REQUESTS
        if p.loop == Loop.BURST:
            count = _set(p.burst)
        elif p.documents_draw is not None:
            count = sum(p.documents_draw.counts(ring))
        else:
            count = ring * p.batch
        copies = 2 if p.loop == Loop.BURST else 1 + p.workers  # a burst's requests are split among the workers
        values.at_most(
            f"load: {point_label(p)} encodes {count:,} texts of about {per_text:,.0f} bytes, {copies} copies",
            count * per_text * copies,
            values.REQUEST_MEMORY,
            "lower --batch, --documents, --lengths, --burst or --workers",
        )

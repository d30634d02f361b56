"""Climbing the ladder: at each rung each target takes the increment, then answers every query one at a time;
one `grow_rung` record per rung and target, written as it finishes (a stop keeps every finished rung).

A target whose increment fails to ingest is recorded failed and climbs no further; the others go on. Open WebUI
and LightRAG keep their knowledge base between rungs, and their `prepare` sends only the documents not there yet
(incremental); the local engines index the whole larger corpus again (rebuild), as their records say."""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from contextlib import nullcontext, suppress
from dataclasses import dataclass, field

import numpy as np

from bench.core.errors import UserError
from bench.core.machine import LagProbe, MachineView, MachineWatch
from bench.core.progress import ProgressFactory, no_progress
from bench.datasets.model import Qrels
from bench.endpoints.meter import Meter
from bench.grow.increment import INCREMENTAL, Grown, grow_to
from bench.grow.ladder import Corpora, Rung
from bench.grow.metering import RungCalls, Window
from bench.grow.resources import Resources, measure
from bench.quality.metrics import Measure, evaluate
from bench.quality.runs import run_from_results
from bench.results.schema import GrowRungRecord, RungStatus
from bench.results.schema.grow import GrowUnit, IngestMode
from bench.results.schema.kinds import ErrorKind, TargetKind, error_key
from bench.results.schema.run import STORE_PARAM
from bench.targets.base import QueryResult, Target, TargetSpec

DEPTH = 100  # documents ranked per query: R@100's depth


@dataclass(frozen=True)
class Climb:
    """What every rung of one run shares."""

    corpora: Corpora
    queries: dict[str, str]
    qrels: Qrels  # the dataset's (or derived from its answers on its own documents): distractors are never relevant
    measures: list[Measure]
    percentiles: dict[str, float]  # latency_ms key -> percentile (p50, p99, the SLO's)
    unit: str
    resources: dict[str, Resources]  # target name -> what to read of the app after each rung
    meter: Meter | None  # --meter-upstream: the app's provider calls per rung; None: not metered


def climb(
    climb: Climb,
    targets: list[tuple[TargetSpec, Target]],
    start: int,
    write: Callable[[GrowRungRecord], None],
    failed: set[str],
    grown: dict[str, Grown],
    progress: ProgressFactory = no_progress,
) -> None:
    """Rungs from index `start` (1-based; after --resume the first not finished) for every target not in `failed`
    (those whose ingest failed, from here or a resumed run's records); `grown`: how far each target's base has
    grown (a resumed run's from its records), updated here; `write` takes each record as it finishes."""
    for rung in climb.corpora.rungs[start - 1 :]:
        for spec, target in targets:
            if spec.name in failed:
                continue
            state = grown.setdefault(spec.name, Grown())
            resumed = rung.index == start and start > 1
            record = measure_rung(climb, (spec, target), state, rung, resumed, progress)
            write(record)
            if record.status == RungStatus.FAILED:
                failed.add(spec.name)


def measure_rung(
    climb: Climb,
    built: tuple[TargetSpec, Target],
    grown: Grown,
    rung: Rung,
    resumed: bool,
    progress: ProgressFactory = no_progress,
) -> GrowRungRecord:
    spec, target = built
    window = Window(climb.meter)
    increment = grow_to(climb.corpora, window, spec, target, grown, rung, progress)
    timed = _timed_queries(climb, spec, target, window, rung, progress) if increment.error is None else _Timed()
    results, latencies, asked = timed.results, timed.latencies, timed.asked
    errors, examples = error_kinds(results)
    rss, disk = measure(climb.resources.get(spec.name, Resources(None, None)))
    chunks_unit = climb.unit == GrowUnit.CHUNKS
    return GrowRungRecord(
        target=spec.name,
        kind=TargetKind(spec.kind),
        store=spec.params.get(STORE_PARAM) or None,
        rung=rung.index,
        size=(grown.chunks or 0) if chunks_unit and increment.error is None else rung.size,
        unit=GrowUnit(climb.unit),
        added=increment.added,
        ingest_mode=IngestMode.INCREMENTAL if spec.kind in INCREMENTAL else IngestMode.REBUILD,
        status=RungStatus.FAILED if increment.error else (RungStatus.ERRORS if errors else RungStatus.OK),
        ingest_seconds=increment.seconds,
        app_ingest_seconds=increment.app_seconds,
        docs_per_s=_rate(increment.sent, increment.seconds) if increment.error is None else None,
        queries=len(results),
        latency_ms=latency_percentiles(latencies, climb.percentiles),
        metrics=_scores(climb, results) if results else {},
        errors=errors,
        error_examples=examples,
        error=increment.error,
        resumed=resumed,
        app_rss_bytes=rss,
        store_bytes=disk,
        docs=grown.docs if chunks_unit else None,
        chunks=grown.chunks if increment.error is None else None,
        ingest_calls=increment.calls.calls if increment.calls else {},
        query_calls=asked.calls if asked else {},
        machine=timed.machine,
        lag_p99_ms=timed.lag_p99_ms,
    )


@dataclass
class _Timed:
    """A rung's queries as timed: their results, latencies and calls, the host meanwhile, the client's lag."""

    results: list[QueryResult] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    asked: RungCalls | None = None
    machine: MachineView | None = None
    lag_p99_ms: float | None = None


def _timed_queries(
    climb: Climb, spec: TargetSpec, target: Target, window: Window, rung: Rung, progress: ProgressFactory
) -> _Timed:
    watch = MachineWatch.start()
    probe = LagProbe()
    # The host while the queries are timed: a stalled machine is no law of the app's growth. Only a server's
    # queries are probed for lag: a local engine searches in this process, holding the interpreter, and the
    # probe would time its own wait for it, not the machine.
    with probe if spec.kind in INCREMENTAL else nullcontext():
        asking = progress(f"rung {rung.index} {spec.name}: querying", len(climb.queries))
        results, latencies, asked = _ask(target, climb.queries, window, asking)
    machine = watch.stop()
    lag = probe.p99_ms()
    return _Timed(results, latencies, asked, machine, None if lag is None else round(lag, 2))


def _rate(docs: int, seconds: float) -> float | None:
    """Documents ingested per second; None where none was sent (a base that held them all: no ingest to rate)."""
    return docs / seconds if seconds > 0 and docs > 0 else None


def _ask(
    target: Target, queries: dict[str, str], window: Window, advance: Callable[[int], None] = lambda n: None
) -> tuple[list[QueryResult], list[float], RungCalls | None]:
    """Each query on its own, timed around the target's search: its latency is what a user waits; the first query
    is sent once before, untimed (its provider calls are no rung's). A server that went away fails the rest of the
    queries with its reason (each would wait out the same timeout)."""
    results, latencies = [], []
    gone: str | None = None
    with suppress(UserError):  # warm-up, untimed and unscored: a first call's one-off costs are no rung's latency
        target.search(dict([next(iter(queries.items()))]), DEPTH, no_progress)
    mark, began = window.mark(), time.perf_counter()
    for qid, text in queries.items():
        if gone is not None:
            results.append(QueryResult(qid, [], None, error=gone))
            continue
        start = time.perf_counter()
        try:
            result = target.search({qid: text}, DEPTH, no_progress)[0]
        except UserError as exc:  # TargetFailed, ServerUnreachable: the server is gone
            gone = str(exc)
            result = QueryResult(qid, [], None, error=gone)
        elapsed = time.perf_counter() - start
        results.append(result)
        if result.error is None:  # a fast refusal is no latency of an answer
            latencies.append(elapsed * 1000.0)
        advance(1)
    return results, latencies, window.read(target, mark, time.perf_counter() - began)


def latency_percentiles(latencies: list[float], percentiles: dict[str, float]) -> dict[str, float]:
    """Each percentile of the answered queries' latencies (numpy's linear interpolation); {} when none answered."""
    if not latencies:
        return {}
    values = np.asarray(latencies)
    return {name: float(np.percentile(values, p)) for name, p in percentiles.items()} | {"n": float(len(values))}


_STATUS = re.compile(r"\bHTTP (\d{3})\b|\b(?:status|answered) (\d{3})\b", re.IGNORECASE)


def error_kinds(results: list[QueryResult]) -> tuple[dict[str, int], dict[str, str]]:
    """Failed queries by kind (http-NNN, timeout, error) and each kind's first message, as the server said it."""
    counts: dict[str, int] = {}
    examples: dict[str, str] = {}
    for result in results:
        if result.error is None:
            continue
        kind = error_kind(result.error)
        counts[kind] = counts.get(kind, 0) + 1
        examples.setdefault(kind, result.error[:500])
    return counts, examples


def error_kind(message: str) -> str:
    """The class a query's error is counted under: http-NNN where the message names a status, else timeout or
    error (bench.results.schema.kinds.ErrorKind)."""
    match = _STATUS.search(message)
    if match:
        return error_key(ErrorKind.HTTP, int(match.group(1) or match.group(2)))
    timed_out = "timed out" in message.lower() or "timeout" in message.lower()
    return error_key(ErrorKind.TIMEOUT if timed_out else ErrorKind.ERROR)


def _scores(climb: Climb, results: list[QueryResult]) -> dict[str, float]:
    """Each measure's mean over every judged query asked, a failed or empty one as zero (trec_eval -c)."""
    run, _ = run_from_results(results)
    qrels = {qid: judged for qid, judged in climb.qrels.items() if qid in climb.queries}
    if not any(run.get(qid) for qid in qrels):  # nothing ranked: every measure is zero
        return {m.label: 0.0 for m in climb.measures}
    scores = evaluate(qrels, run, climb.measures, complete=True)
    return {m.label: scores.means[m.trec_name] for m in climb.measures if math.isfinite(scores.means[m.trec_name])}

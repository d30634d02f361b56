"""`compare --benchmark-json`: pytest-benchmark JSON of the current run's latency and throughput, which trend
tools chart over commits."""

from __future__ import annotations

import platform
from dataclasses import asdict
from typing import TYPE_CHECKING, TypedDict, cast

from bench.core.errors import InputError
from bench.gate.figures import as_number, figure_text
from bench.gate.points import checked_points, p99_quantity
from bench.load.points import point_label
from bench.results.frame import now_iso
from bench.results.schema import LoadPointRecord
from bench.results.store import Results

if TYPE_CHECKING:  # imported where used: only --benchmark-json needs pytest-benchmark
    from pytest_benchmark.stats import Stats

# An entry's `extra_info` value: a figure or label of the record, or a count by cause (an ingest's retries, splits).
ExtraValue = str | int | float | bool | None | dict[str, int]
Extra = dict[str, ExtraValue]


class BenchmarkEntry(TypedDict):
    """One benchmark of pytest-benchmark's JSON, as trend tools read it."""

    group: str
    name: str
    fullname: str
    params: None
    param: None
    extra_info: Extra
    options: dict[str, str]
    stats: dict[str, float]  # pytest-benchmark's Stats.as_dict(), with `iterations`


class BenchmarkDocument(TypedDict):
    """pytest-benchmark's JSON document (`--benchmark-json`)."""

    machine_info: dict[str, str]
    commit_info: dict[str, str]
    benchmarks: list[BenchmarkEntry]
    datetime: str
    version: str


def benchmark_json(runs: list[tuple[str, Results]]) -> BenchmarkDocument:
    """pytest-benchmark's JSON for the current run, figures computed by pytest-benchmark's own `Stats`:
    - per quality target, its per-query latency (a round is a query);
    - per load sweep point, its latency (a round is a request; values from the point's HDR histogram, to
      HDR's 0.1%: scheduled latency in the open loop, service latency otherwise) and its throughput (one
      round, the measured window, of as many iterations as texts: ops is texts per second)."""
    from pytest_benchmark import __version__ as pb_version

    entries: list[BenchmarkEntry] = []
    for source, results in runs:
        prefix = f"{source}/" if source else ""
        entries += _quality_entries(results, prefix)
        entries += _ingest_entries(results, prefix)
        entries += _load_entries(results, prefix)
    return {
        "machine_info": _machine_info(),
        "commit_info": {},
        "benchmarks": entries,
        "datetime": now_iso("auto"),  # pytest-benchmark's precision
        "version": pb_version,
    }


def _quality_entries(results: Results, prefix: str) -> list[BenchmarkEntry]:
    """Per quality target, its per-query latency (a round is a query)."""
    from pytest_benchmark.stats import Stats

    entries = []
    for target in results.targets:
        stats = Stats()
        for q in results.queries:
            if q.target == target.name and not q.error and q.latency_ms is not None:  # None: ranked in a batch
                if as_number(q.latency_ms) is None or q.latency_ms < 0:
                    raise InputError(
                        results.path,
                        f"query record {q.qid!r} of {q.target}: latency_ms is "
                        f"{figure_text(q.latency_ms)}, not a finite number >= 0",
                        results.line(q),
                    )
                stats.update(q.latency_ms / 1000)
        if stats:
            extra: Extra = {
                "unit": "seconds per query",
                "dataset": results.header.dataset_info.name,
                "spec": target.spec,
                "errors": target.errors,
            }
            entries.append(
                _entry(f"{prefix}{target.name} query latency", f"quality/{prefix}{target.name}", stats, 1, extra)
            )
    return entries


def _ingest_entries(results: Results, prefix: str) -> list[BenchmarkEntry]:
    """Per quality target with an `ingest` cost block, its ingest throughput: one round, the ingest's wall
    time, of as many iterations as texts sent to the endpoint (ops is texts per second, as for a load point)."""
    from pytest_benchmark.stats import Stats

    entries = []
    for target in results.targets:
        block = target.cost_block("ingest")
        sent = (block.get("texts") or 0) - (block.get("from_cache") or 0)
        seconds = as_number(block.get("wall_s"))
        if not isinstance(sent, int) or sent <= 0 or seconds is None or seconds <= 0:
            continue  # nothing sent (everything from the cache) or no wall time: no throughput measured
        window = Stats()
        window.update(seconds / sent)
        extra: Extra = {"unit": "seconds per text", "spec": target.spec}
        extra |= {k: cast(ExtraValue, block.get(k)) for k in INGEST_EXTRA}  # the block's figures, null where absent
        group = f"quality/{prefix}{target.name}"
        entries.append(_entry(f"{prefix}{target.name} ingest throughput", group, window, sent, extra))
    return entries


INGEST_EXTRA = ("texts", "from_cache", "tokens", "texts_per_s", "tokens_per_s", "retries", "splits")


def _load_entries(results: Results, prefix: str) -> list[BenchmarkEntry]:
    """Per load sweep point, its latency and its throughput (see benchmark_json)."""
    from pytest_benchmark.stats import Stats

    entries = []
    for point in checked_points(results).values():  # a figure it cannot read is an input error, never dropped
        label, group = point_label(point, point.endpoint), f"load/{prefix}{point.endpoint}"
        quantity = p99_quantity(point)
        extra: Extra = {
            "loop": point.loop,
            "batch": point.batch,
            "concurrency": point.concurrency,
            "rate": point.rate,
            "client_saturated": point.client.saturated,
            **asdict(point.throughput),
        }
        latency = _histogram_stats(point.histograms.get(quantity), Stats, results, point)
        if latency:
            unit = {"unit": "seconds per request", "quantity": quantity}
            entries.append(_entry(f"{prefix}{label} latency", group, latency, 1, {**extra, **unit}))
        texts_per_s, seconds = as_number(point.throughput.texts_per_s), as_number(point.duration_s)
        if texts_per_s is None or seconds is None or texts_per_s <= 0 or seconds <= 0:
            continue  # no throughput measured: no throughput entry
        texts = round(texts_per_s * seconds)
        if texts:
            window = Stats()
            window.update(seconds / texts)
            entries.append(
                _entry(f"{prefix}{label} throughput", group, window, texts, {**extra, "unit": "seconds per text"})
            )
    return entries


def _histogram_stats(
    encoded: str | None, stats_class: type[Stats], results: Results, point: LoadPointRecord
) -> Stats | None:
    """A `Stats` holding every request of an HDR histogram (microseconds), in seconds."""
    if not encoded:
        return None
    from bench.load.histograms import decode, median_equivalent, recorded

    try:
        histogram = decode(encoded)
    except Exception:  # hdrh raises several kinds (base64, zlib, its own) on a damaged encoding
        raise InputError(
            results.path, "load_point record: a latency histogram cannot be decoded", results.line(point)
        ) from None
    stats = stats_class()
    for value, count in recorded(histogram):
        stats.data.extend([median_equivalent(histogram, value) / 1e6] * count)
    return stats if stats else None


def _entry(name: str, group: str, stats: Stats, iterations: int, extra: Extra) -> BenchmarkEntry:
    figures = stats.as_dict()
    figures["iterations"] = iterations
    return {
        "group": group,
        "name": name,
        "fullname": f"ragbench::{name}",
        "params": None,
        "param": None,
        "extra_info": extra,
        "options": {},
        "stats": figures,
    }


def _machine_info() -> dict[str, str]:
    return {
        "node": platform.node(),
        "processor": platform.processor(),
        "machine": platform.machine(),
        "python_implementation": platform.python_implementation(),
        "python_version": platform.python_version(),
        "release": platform.release(),
        "system": platform.system(),
    }

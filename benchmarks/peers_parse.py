"""Reading each tool's own output into one shape (docs/peers.md): pure functions over text, tested in
tests/benchmarks/test_peers_parse.py against outputs of the pinned versions."""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field


@dataclass
class ToolResult:
    """What one run of one tool reported, in its own words mapped to ours; None where it reports no such figure."""

    requests_per_s: float | None = None
    requests: int | None = None
    errors: int | None = None
    p50_ms: float | None = None
    p95_ms: float | None = None
    p99_ms: float | None = None
    texts_per_s: float | None = None
    tokens_per_s: float | None = None
    server_timing: bool = False  # the tool read the server's own split (queue/inference) of each request
    errors_by_class: dict[str, int] = field(default_factory=dict)
    scheduled_p99_ms: float | None = None  # a second p99 the tool reports from the intended send (AIPerf's)


_UNITS_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}


def wrk_duration_ms(text: str) -> float:
    """One of wrk's durations ('812.00us', '1.20ms', '2.01s') in ms."""
    match = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text.strip())
    if match is None:
        raise ValueError(f"not a wrk duration: {text!r}")
    return float(match.group(1)) * _UNITS_MS[match.group(2)]


def parse_wrk(out: str) -> ToolResult:
    """wrk's (or wrk2's) summary: Requests/sec, the request count, socket errors and non-2xx, --latency's
    percentiles."""
    rate = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if rate is None:
        raise ValueError("no 'Requests/sec:' in wrk's output")
    result = ToolResult(requests_per_s=float(rate.group(1)))
    count = re.search(r"(\d+) requests in", out)
    result.requests = int(count.group(1)) if count else None
    errors: dict[str, int] = {}
    socket = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    if socket:
        for name, value in zip(("connect", "read", "write", "timeout"), socket.groups(), strict=True):
            if int(value):
                errors[name] = int(value)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if non2xx:
        errors["non-2xx"] = int(non2xx.group(1))
    result.errors, result.errors_by_class = sum(errors.values()), errors
    for name, attr in (("50", "p50_ms"), ("99", "p99_ms")):
        found = re.search(rf"^\s+{name}(?:\.000)?%\s+(\S+)", out, re.MULTILINE)
        if found:
            setattr(result, attr, wrk_duration_ms(found.group(1)))
    return result


def parse_locust_stats(text: str) -> ToolResult:
    """Locust's `--csv PREFIX` PREFIX_stats.csv: its 'Aggregated' row (response times in ms)."""
    rows = [row for row in csv.DictReader(io.StringIO(text)) if row.get("Name") == "Aggregated"]
    if not rows:
        raise ValueError("no 'Aggregated' row in Locust's stats CSV")
    row = rows[0]

    def number(key: str) -> float | None:
        value = row.get(key, "N/A")
        return None if value in ("", "N/A") else float(value)

    return ToolResult(
        requests_per_s=number("Requests/s"),
        requests=int(row["Request Count"]),
        errors=int(row["Failure Count"]),
        p50_ms=number("50%"),
        p95_ms=number("95%"),
        p99_ms=number("99%"),
    )


def parse_locust_failures(text: str) -> dict[str, int]:
    """Locust's PREFIX_failures.csv: occurrences by error message (its only error classes)."""
    return {row["Error"]: int(row["Occurrences"]) for row in csv.DictReader(io.StringIO(text))}


def parse_ragbench(jsonl: str) -> ToolResult:
    """`ragbench load`'s results.jsonl: its one load_point (open loop: latency from the intended send, `scheduled`;
    closed loop: `service`)."""
    points = [json.loads(line) for line in jsonl.splitlines() if line.strip()]
    points = [p for p in points if p.get("record") == "load_point"]
    if len(points) != 1:
        raise ValueError(f"expected one load_point record, found {len(points)}")
    point = points[0]
    latency = point["latency_ms"]["scheduled"] or point["latency_ms"]["service"]
    errors = point["requests"]["errors"]
    return ToolResult(
        requests_per_s=point["throughput"]["requests_per_s"],
        requests=point["requests"]["ok"] + sum(errors.values()),
        errors=sum(errors.values()),
        p50_ms=latency["p50"],
        p99_ms=latency["p99"],
        texts_per_s=point["throughput"]["texts_per_s"],
        tokens_per_s=point["throughput"]["tokens_per_s"],
        server_timing=any(isinstance(v, dict) and v.get("count") for v in (point.get("server_ms") or {}).values()),
        errors_by_class=dict(errors),
    )


def parse_size(jsonl: str) -> tuple[float | None, str]:
    """`ragbench size`'s results.jsonl: (its saturation rate, its interval in words: `first failure X/s`)."""
    records = [json.loads(line) for line in jsonl.splitlines() if line.strip()]
    sizing = next(r for r in records if r.get("record") == "sizing")["saturation"]
    failure = sizing.get("first_failure")
    return sizing.get("rate"), (f"first failure at {failure:.2f}/s" if failure else "no failure decided")


def parse_aiperf(text: str) -> ToolResult:
    """AIPerf's profile_export_aiperf.json: request_latency (from the request's actual send) and, where present,
    effective_latency (from the credit AIPerf issued, its scheduled send); errors from its error_summary."""
    export = json.loads(text)
    latency = export["request_latency"]
    errors = {
        str(e.get("error_details", {}).get("type", "error")): int(e.get("count", 1)) for e in export["error_summary"]
    }
    effective = export.get("effective_latency") or {}
    return ToolResult(
        requests_per_s=export["request_throughput"]["avg"],
        requests=int(export["request_count"]["avg"]),
        errors=sum(errors.values()),
        p50_ms=latency.get("p50"),
        p95_ms=latency.get("p95"),
        p99_ms=latency.get("p99"),
        tokens_per_s=(export.get("input_token_throughput") or {}).get("avg"),
        server_timing=bool((export.get("telemetry_data") or {}).get("endpoints")),
        errors_by_class=errors,
        scheduled_p99_ms=effective.get("p99"),
    )


def aiperf_rate(text: str) -> float | None:
    """The request rate an AIPerf export was run at (its input_config's load settings), None in a closed loop."""
    config = json.dumps(json.loads(text).get("input_config", {}))
    found = re.search(r'"(?:request_)?rate":\s*([\d.]+)', config)
    return float(found.group(1)) if found else None


def _guidellm_ms(metric: dict | None, key: str) -> float | None:
    """One of GuideLLM's latency percentiles (seconds) of successful requests, in ms."""
    if not metric or not metric.get("successful") or not metric["successful"].get("count"):
        return None
    return 1000.0 * metric["successful"]["percentiles"][key]


def guidellm_benchmark(benchmark: dict) -> ToolResult:
    """One benchmark of GuideLLM's JSON output: request_latency from the actual send, request_scheduled_latency
    (where its strategy schedules) from the intended one."""
    metrics, totals = benchmark["metrics"], benchmark["metrics"]["request_totals"]
    latency = metrics["request_latency"]
    return ToolResult(
        requests_per_s=metrics["requests_per_second"]["successful"]["mean"],
        requests=int(totals["total"]),
        errors=int(totals["errored"]),
        p50_ms=_guidellm_ms(latency, "p50"),
        p95_ms=_guidellm_ms(latency, "p95"),
        p99_ms=_guidellm_ms(latency, "p99"),
        tokens_per_s=((metrics.get("prompt_tokens_per_second") or {}).get("successful") or {}).get("mean"),
        errors_by_class={"errored": int(totals["errored"])} if totals["errored"] else {},
        scheduled_p99_ms=_guidellm_ms(metrics.get("request_scheduled_latency"), "p99"),
    )


def parse_guidellm(text: str) -> list[tuple[float | None, ToolResult]]:
    """GuideLLM's `--output kind=json` file: (the benchmark's target rate, where it has one; what it measured) for
    each benchmark it ran (one, or a sweep's several)."""
    benchmarks = json.loads(text)["benchmarks"]
    if not benchmarks:
        raise ValueError("GuideLLM ran no benchmark")
    return [(_guidellm_rate(b), guidellm_benchmark(b)) for b in benchmarks]


def _guidellm_rate(benchmark: dict) -> float | None:
    strategy = benchmark.get("config", {}).get("strategy", {})
    rate = strategy.get("rate")
    return float(rate) if isinstance(rate, int | float) else None

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
    """AIPerf's profile_export_aiperf.json (filled in from the pinned version's output)."""
    raise ValueError("AIPerf's export is not read yet")


def parse_guidellm(text: str) -> ToolResult:
    """GuideLLM's benchmarks JSON (filled in from the pinned version's output)."""
    raise ValueError("GuideLLM's output is not read yet")

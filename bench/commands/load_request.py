"""`ragbench load`'s options, declared once: the command line's flags and a suite's [[load]] keys."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from bench.commands.options import (
    ARRIVAL_SEED,
    ENDPOINTS,
    MAX_ERROR_RATE_FLAG,
    OP,
    OVERWRITE,
    RAY,
    ROUTE,
    TEXTS,
    TIMEOUT,
    WORKERS,
    Flag,
    option,
)
from bench.gate.options import MAX_P99_INCREASE, MIN_THROUGHPUT_RATIO
from bench.load.points import MAX_ERROR_RATE
from bench.results.provenance import Origin


@dataclass
class LoadRequest:
    """`ragbench load`'s options and a suite's [[load]] entry, each declared once, here; `out` is the command
    line's --out or the suite's folder for the entry."""

    endpoints: list[str] = field(metadata=option(ENDPOINTS))
    out: Path
    op: str = field(default="", metadata=option(OP))
    batch: str | None = field(
        default=None, metadata=option(Flag(("--batch",), "Texts per request, comma list (embed). Default 1."))
    )
    concurrency: str | None = field(
        default=None,
        metadata=option(
            Flag(("--concurrency",), "Closed loop users (burst: in-flight cap, 0 = none), comma list. Default 1.")
        ),
    )
    rate: str | None = field(
        default=None, metadata=option(Flag(("--rate",), "Open loop instead: offered requests/s, comma list."))
    )
    arrival: str = field(
        default="constant", metadata=option(Flag(("--arrival",), "Open-loop arrivals: constant, poisson or gamma:CV."))
    )
    max_inflight: int | None = field(
        default=None,
        metadata=option(
            Flag(("--max-inflight",), "Open loop: at most N requests in flight; due ones wait in the client.")
        ),
    )
    burst: int | None = field(
        default=None,
        metadata=option(
            Flag(("--burst",), "Open WebUI ingestion: N texts as ceil(N/batch) requests at once, then drain.")
        ),
    )
    duration: str | None = field(
        default=None,
        metadata=option(Flag(("--duration",), "Measured time per point, e.g. 30s, 500ms, 2m. Default 10s.")),
    )
    requests: int | None = field(
        default=None, metadata=option(Flag(("--requests",), "Measured requests per point instead of --duration."))
    )
    warmup: str = field(
        default="2s", metadata=option(Flag(("--warmup",), "Warm-up per point, excluded from every figure."))
    )
    workers: int = field(default=1, metadata=option(WORKERS))
    texts: Path | None = field(default=None, metadata=option(TEXTS))
    dataset: Path | None = field(
        default=None,
        metadata=option(
            Flag(("--dataset",), "A dataset folder (corpus texts; queries for rerank). Default: builtin:numpy-docs.")
        ),
    )
    lengths: str | None = field(
        default=None,
        metadata=option(
            Flag(
                ("--lengths",),
                "Cut texts to N tokens (words without --tokenizer), comma list; from:DATASET draws each length from "
                "that dataset's corpus texts (seeded).",
            )
        ),
    )
    documents: str | None = field(
        default=None,
        metadata=option(
            Flag(
                ("--documents",),
                "Rerank: candidates per query, comma list; A..B (uniform) or poisson:M drawn per request. Default 10.",
            )
        ),
    )
    tokenizer: Path | None = field(
        default=None,
        metadata=option(Flag(("--tokenizer",), "Model folder with tokenizer.json for token counts and --lengths.")),
    )
    timeout: str = field(default="30s", metadata=option(TIMEOUT))
    seed: int = field(default=0, metadata=option(ARRIVAL_SEED))
    overwrite: bool = field(default=False, metadata=option(OVERWRITE))
    max_error_rate: float = field(default=MAX_ERROR_RATE, metadata=option(MAX_ERROR_RATE_FLAG))
    repeat: int = field(
        default=1,
        metadata=option(
            Flag(
                ("--repeat",),
                "Measure each point N times, interleaved (A, B, C, A, B, C, ...): one record per point with its "
                "repeats and 95% bootstrap intervals, which compare gates on (docs/ci.md).",
            )
        ),
    )  # bench/load/repeats.py
    ray: str | None = field(default=None, metadata=option(RAY))
    requests_csv: Path | None = field(
        default=None,
        metadata=option(
            Flag(
                ("--requests-csv",),
                "Also write one row per measured request to this CSV file: point, worker, intended / actual send "
                "and end times, outcome, texts, tokens (docs/load.md).",
            )
        ),
    )  # bench.load.requests_csv.RequestsCsv
    # `--interleave` (bench/load/interleave.py): two endpoints, A then B, measured in alternating windows, paired
    interleave: bool = field(
        default=False,
        metadata=option(
            Flag(
                ("--interleave",),
                "Two endpoints (-e A=... -e B=...): each point measured on A and B in alternating windows, the order "
                "randomised per round (--seed); the ratio B/A per round, its paired interval and compare's verdict "
                "(exit 1 when it fails; docs/load.md).",
            )
        ),
    )
    rounds: int = field(
        default=10,
        metadata=option(Flag(("--rounds",), "--interleave: rounds (a window per endpoint each); not with --max-time.")),
    )
    window: str = field(
        default="2s",
        metadata=option(Flag(("--window",), "--interleave: measured time of each window (after its --warmup).")),
    )
    slice: str | None = field(
        default=None,
        metadata=option(
            Flag(
                ("--slice",),
                "--interleave: cut each window into slices this long, A's and B's alternated (A B B A ...) so both "
                "share the same seconds; warm-up once per point (docs/load.md).",
            )
        ),
    )  # bench/load/interleave_slices.py
    max_time: str | None = field(
        default=None,
        metadata=option(
            Flag(
                ("--max-time",),
                "--interleave: instead of --rounds, add rounds until the paired interval (anytime-valid) clears "
                "the limit either way or this budget is spent, e.g. 120s (docs/load.md).",
                suite=False,
            )
        ),
    )  # bench/load/interleave_budget.py
    too_busy: str = field(
        default="pass",
        metadata=option(
            Flag(
                ("--too-busy",),
                "--interleave: what a 'too busy to decide' verdict exits as: pass (0, the default) or fail (1).",
                suite=False,
            )
        ),
    )
    # compare's limits, B against A (a suite's [gate] gives them: no [[load]] key)
    min_throughput_ratio: str | None = field(default=None, metadata=option(replace(MIN_THROUGHPUT_RATIO, suite=False)))
    max_p99_increase: str | None = field(default=None, metadata=option(replace(MAX_P99_INCREASE, suite=False)))
    # `--trace` (bench/load/trace_replay.py): a recorded trace replayed open-loop, compared with its recording
    trace: Path | None = field(
        default=None,
        metadata=option(
            Flag(
                ("--trace",),
                "Replay a trace (ragbench meter --record, or a CSV/JSONL of the same columns) open-loop at its "
                "recorded arrival times, texts per call and lengths; compared per route with the recording "
                "(docs/traffic.md).",
                suite=False,
            )
        ),
    )
    speed: float = field(
        default=1.0,
        metadata=option(Flag(("--speed",), "--trace: arrivals this many times faster (2: twice).", suite=False)),
    )
    loop: bool = field(
        default=False,
        metadata=option(
            Flag(("--loop",), "--trace: play the trace end to end again until --duration has passed.", suite=False)
        ),
    )
    route: list[str] | None = field(default=None, metadata=option(ROUTE))
    origin: Origin = field(default_factory=Origin)  # --label NAME=VALUE and the suite file: the header's provenance

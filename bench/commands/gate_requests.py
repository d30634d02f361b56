"""The requests of `compare` and `history`, declared on the gate's options (bench/gate/options.py): light, so
that the CLI lists their options without importing the gate's engine."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from bench.commands.options import Flag, option
from bench.gate.options import MAX_DROP, MAX_P99_INCREASE, MIN_THROUGHPUT_RATIO, GateOptions, GateOutputs


@dataclass(frozen=True, kw_only=True)
class CompareRequest(GateOutputs, GateOptions):
    baseline: Path  # alone (current None): an interleaved run, gated on its own paired rounds
    current: Path | None = None
    output_format: str = field(
        default="text", metadata=option(Flag(("--format",), "Output on stdout: text, md or json.", suite=False))
    )
    overwrite: bool = field(
        default=False,
        metadata=option(
            Flag(
                ("--overwrite",),
                "Replace --junit and --benchmark-json files an earlier compare wrote (only those).",
                suite=False,
            )
        ),
    )


@dataclass(frozen=True)
class HistoryRequest:
    runs: list[str] = field(default_factory=list)  # results files, folders or globs
    by: str = field(
        default="created",
        metadata=option(
            Flag(("--by",), "Run order: created (the header's stamp) or label:KEY (a --label of the runs).")
        ),
    )
    out: Path | None = field(
        default=None,
        metadata=option(Flag(("--out",), "Write history.md, history.json and a PNG page per job here.")),
    )
    overwrite: bool = field(
        default=False,
        metadata=option(
            Flag(("--overwrite",), "Replace the history files an earlier history --out wrote (only those).")
        ),
    )
    max_drop: list[str] | None = field(default=None, metadata=option(MAX_DROP))
    min_throughput_ratio: str | None = field(default=None, metadata=option(MIN_THROUGHPUT_RATIO))
    max_p99_increase: str | None = field(default=None, metadata=option(MAX_P99_INCREASE))
    max_p99_ratio: str | None = field(  # the published spelling before --max-p99-increase: after / before (1.1)
        default=None,
        metadata=option(Flag(("--max-p99-ratio",), "Largest allowed p99 after/before (1.1).", hidden=True)),
    )
    alpha: str = field(
        default="0.01",
        metadata=option(
            Flag(("--alpha",), "Each split's significance level: a series without a change gets a false one.")
        ),
    )
    seed: int = field(
        default=0, metadata=option(Flag(("--seed",), "Seed of the permutation tests and bootstrap intervals."))
    )
    output_format: str = field(default="md", metadata=option(Flag(("--format",), "Output on stdout: md or json.")))

"""The plain function behind `ragbench compare`: the gate's options checked, the comparison, its outputs."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from bench.core import values
from bench.core.errors import UserError
from bench.core.values import parse_allowance, parse_error_rate, parse_ratio
from bench.gate.compare import (
    GateConfig,
    check_calibration,
    compare_paths,
    load_calibration,
    locate_results,
    parse_inconclusive,
    parse_matches,
    parse_max_drops,
    parse_primary,
)
from bench.gate.outputs import check_output_paths, render_json, render_markdown, render_text, write_outputs

RENDERERS = {"text": render_text, "md": render_markdown, "json": render_json}


@dataclass
class CompareRequest:
    baseline: Path
    current: Path
    max_drop: list[str] | None = None
    alpha: str = "0.05"
    no_significance: bool = False
    max_p99_increase: str | None = None
    min_throughput_ratio: str | None = None
    max_error_rate: str = "0"
    inconclusive: str = "pass"  # what an inconclusive load or quality gate counts as
    primary: list[str] | None = None  # MEASURE or TARGET:MEASURE: the gated quality checks (Holm's family)
    min_ingest_ratio: str | None = None
    max_query_p99_increase: str | None = None
    match: list[str] | None = None
    junit: Path | None = None
    summary: Path | None = None  # default: $GITHUB_STEP_SUMMARY when set
    benchmark_json: Path | None = None
    output_format: str = "text"
    seed: int = 0
    calibration: list[Path] | None = None  # A/A load runs on this runner: the noise between runs (docs/ci.md)
    overwrite: bool = False  # replace --junit / --benchmark-json files an earlier compare wrote (only those)


def gate_config(request: CompareRequest) -> GateConfig:
    """Every gate option checked: one line, exit 2."""
    level = parse_ratio(request.alpha, "--alpha")
    if not 0 < level < 1:
        raise UserError(f"--alpha {request.alpha!r}: must be between 0 and 1")
    p99, ratio = request.max_p99_increase, request.min_throughput_ratio
    ingest, query_p99 = request.min_ingest_ratio, request.max_query_p99_increase
    config = GateConfig(
        max_drop=parse_max_drops(request.max_drop or []),
        alpha=level,
        significance=not request.no_significance,
        max_p99_increase=parse_allowance(p99, "--max-p99-increase", percent_only=True) if p99 else None,
        min_throughput_ratio=parse_ratio(ratio, "--min-throughput-ratio") if ratio else None,
        max_error_rate=parse_error_rate(request.max_error_rate, "--max-error-rate"),
        min_ingest_ratio=parse_ratio(ingest, "--min-ingest-ratio") if ingest else None,
        max_query_p99_increase=(
            parse_allowance(query_p99, "--max-query-p99-increase", percent_only=True) if query_p99 else None
        ),
        match=parse_matches(request.match or []),
        seed=values.number("--seed", request.seed, values.SEED),
        inconclusive=parse_inconclusive(request.inconclusive, "--inconclusive"),
        primary=parse_primary(request.primary or []),
        calibration=load_calibration(request.calibration or []),
    )
    check_calibration(config.calibration, request.baseline, request.current, config.match)
    return config


def compare_command(request: CompareRequest) -> bool:
    """Print the verdict, then write the outputs asked for; whether every check passed."""
    if request.output_format not in RENDERERS:
        raise UserError(f"--format {request.output_format!r}: expected one of {', '.join(RENDERERS)}")
    config = gate_config(request)
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    summary = request.summary or (Path(step_summary) if step_summary else None)
    check_output_paths(
        {"--junit": request.junit, "--summary": summary, "--benchmark-json": request.benchmark_json},
        [
            *locate_results(request.baseline).values(),
            *locate_results(request.current).values(),
            *(f for path in request.calibration or [] for f in locate_results(path).values()),
        ],
        overwrite=request.overwrite,
    )
    comparison = compare_paths(request.baseline, request.current, config)
    # the verdict first: a file that cannot be written must not hide it
    print(RENDERERS[request.output_format](comparison), end="", flush=True)
    write_outputs(comparison, comparison.runs, junit=request.junit, summary=summary, benchmark=request.benchmark_json)
    return comparison.passed

"""The plain function behind `ragbench compare`: the gate's options checked, the comparison, its outputs."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from bench.core.errors import UserError
from bench.gate.calibration import check_calibration
from bench.gate.compare import compare_paths
from bench.gate.config import GateConfig, build_gate_config
from bench.gate.history_floor import with_history
from bench.gate.inputs import locate_results
from bench.gate.interleaved import compare_interleaved
from bench.gate.markdown import render_markdown
from bench.gate.output_files import SUMMARY, check_output_paths, write_outputs
from bench.gate.text import OutputFormat, parse_output_format, render_json, render_text
from bench.results.store import read_results

RENDERERS = {OutputFormat.TEXT: render_text, OutputFormat.MD: render_markdown, OutputFormat.JSON: render_json}


@dataclass
class CompareRequest:
    baseline: Path  # alone (current None): an interleaved run, gated on its own paired rounds
    current: Path | None
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
    history: str | None = None  # earlier results (folder or glob): their runs since the last change point calibrate
    overwrite: bool = False  # replace --junit / --benchmark-json files an earlier compare wrote (only those)


def gate_config(request: CompareRequest) -> GateConfig:
    """Every gate option checked: one line, exit 2."""
    if request.current is None and (request.calibration or request.history is not None):
        raise UserError(
            "compare RUN: an interleaved run is gated on its own paired rounds; --calibration and --history "
            "calibrate the noise between two runs (give BASELINE CURRENT)"
        )
    config = build_gate_config(
        max_drop=request.max_drop or [],
        alpha=request.alpha,
        significance=not request.no_significance,
        max_p99_increase=request.max_p99_increase or None,
        min_throughput_ratio=request.min_throughput_ratio or None,
        max_error_rate=request.max_error_rate,
        inconclusive=request.inconclusive,
        primary=request.primary or [],
        min_ingest_ratio=request.min_ingest_ratio or None,
        max_query_p99_increase=request.max_query_p99_increase or None,
        match=request.match or [],
        seed=request.seed,
        calibration=request.calibration or [],
        history=request.history,
    )
    if request.current is None:
        return config
    check_distinct(request.baseline, request.current)
    check_calibration(config.calibration, request.baseline, request.current, config.match)
    return with_history(config, request.baseline, request.current)


def check_distinct(baseline: Path, current: Path) -> None:
    """A run compared with itself passes whatever it measured: refused, one line, exit 2."""
    base = {path.resolve() for path in locate_results(baseline).values()}
    if base and base == {path.resolve() for path in locate_results(current).values()}:
        for path in sorted(base):
            read_results(path)  # a damaged file is said first: FILE:LINE names what to fix
        raise UserError(
            f"compare: BASELINE {baseline} and CURRENT {current} are the same results ({min(base)}): a run compared "
            "with itself passes whatever it measured; give the run to gate as CURRENT"
        )


def compare_command(request: CompareRequest) -> bool:
    """Print the verdict, then write the outputs asked for; whether every check passed."""
    output_format = parse_output_format(request.output_format)
    config = gate_config(request)
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    summary = request.summary or (Path(step_summary) if step_summary else None)
    check_output_paths(
        {"--junit": request.junit, SUMMARY: summary, "--benchmark-json": request.benchmark_json},
        [
            *locate_results(request.baseline).values(),
            *(locate_results(request.current).values() if request.current is not None else ()),
            *(f for path in request.calibration or [] for f in locate_results(path).values()),
            *(Path(run) for run in config.calibration.runs if config.history is not None),  # the history's files
        ],
        overwrite=request.overwrite,
    )
    if request.current is None:
        comparison = compare_interleaved(request.baseline, config)
    else:
        comparison = compare_paths(request.baseline, request.current, config)
    # the verdict first: a file that cannot be written must not hide it
    print(RENDERERS[output_format](comparison), end="", flush=True)
    write_outputs(comparison, comparison.runs, junit=request.junit, summary=summary, benchmark=request.benchmark_json)
    return comparison.passed

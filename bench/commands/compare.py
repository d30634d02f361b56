"""The plain function behind `ragbench compare`: the gate's options checked, the comparison, its outputs."""

from __future__ import annotations

from pathlib import Path

from bench.commands.gate_requests import CompareRequest
from bench.core.errors import UserError
from bench.gate.calibration import check_calibration
from bench.gate.compare import compare_paths
from bench.gate.config import GateConfig, build_gate_config
from bench.gate.history_floor import with_history
from bench.gate.inputs import locate_results
from bench.gate.interleaved import compare_interleaved
from bench.gate.markdown import render_markdown
from bench.gate.output_files import check_output_paths, write_outputs
from bench.gate.text import OutputFormat, parse_output_format, render_json, render_text
from bench.results.store import read_results

RENDERERS = {OutputFormat.TEXT: render_text, OutputFormat.MD: render_markdown, OutputFormat.JSON: render_json}


def gate_config(request: CompareRequest) -> GateConfig:
    """Every gate option checked: one line, exit 2."""
    if request.current is None and (request.calibration or request.history is not None):
        raise UserError(
            "compare RUN: an interleaved run is gated on its own paired rounds; --calibration and --history "
            "calibrate the noise between two runs (give BASELINE CURRENT)"
        )
    config = build_gate_config(request)
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
    outputs = request.paths()
    check_output_paths(
        outputs,
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
    summary = outputs["--summary"]
    write_outputs(comparison, comparison.runs, junit=request.junit, summary=summary, benchmark=request.benchmark_json)
    return comparison.passed

"""`ragbench quality` and `ragbench demo`. Quality's options are `QualityRequest`'s declared fields
(bench/commands/quality.py); --out and --resume, which choose its folder, are the command line's own."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from bench.cli.app import app
from bench.cli.declared import command, field_option
from bench.cli.options import Labels
from bench.commands.quality import QualityRequest

if TYPE_CHECKING:
    from bench.results.store import Results

Out = Annotated[Path | None, typer.Option("--out", help="Output folder (default reports/quality).")]
Resume = Annotated[
    Path | None,
    typer.Option(
        "--resume",
        help="Continue the interrupted run in this folder (same options): finished targets and queries are kept.",
    ),
]
Overwrite = Annotated[bool, field_option(QualityRequest, "overwrite")]


def quality(options: dict[str, Any]) -> None:
    out, resume = options.pop("out"), options.pop("resume")
    folder = _out_folder(out, resume, options["overwrite"])
    _run_and_summarise(QualityRequest(**options, out=folder, resume=resume is not None))


def _cli_only(name: str, annotation: Any) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation)


command(
    "quality",
    QualityRequest,
    quality,
    "Rank every judged query with every target; write run files, results, per-query CSV and a report.",
    extra=(("split", _cli_only("out", Out)), ("overwrite", _cli_only("resume", Resume))),
)


def _out_folder(out: Path | None, resume: Path | None, overwrite: bool) -> Path:
    """Where quality writes: the --resume folder, else --out, else reports/quality."""
    from bench.core.errors import UserError

    if resume is not None and out is not None and out != resume:
        raise UserError(f"--resume {resume} writes into that folder; drop --out {out}")
    if resume is not None and overwrite:
        raise UserError("--resume continues a run, --overwrite replaces it: give one of them")
    return resume or out or Path("reports/quality")


@app.command()
def demo(
    out: Annotated[Path, typer.Option("--out", help="Output folder.")] = Path("reports/demo"),
    max_docs: Annotated[int, typer.Option("--max-docs", min=0, help="Corpus sample size (0: the whole corpus).")] = 0,
    overwrite: Overwrite = False,
    labels: Labels = None,
) -> None:
    """Quality of bm25, dense and hybrid on numpy-docs: numpy's docstrings as a known-item search, built at run time."""
    from bench.datasets import DEMO_DATASET
    from bench.results.provenance import Origin, parse_labels
    from bench.results.schema import RunCommand

    _run_and_summarise(
        QualityRequest(
            dataset=Path(DEMO_DATASET),
            targets=["bm25", "dense", "hybrid"],
            out=out,
            max_docs=max_docs or None,
            command=RunCommand.DEMO,
            overwrite=overwrite,
            origin=Origin(parse_labels(labels)),
        )
    )


def _run_and_summarise(request: QualityRequest) -> None:
    """Run, then print the results tables and the report's path; also when a measurement failed (everything
    is written then too), before the error line and its exit code 3."""
    from bench.commands.quality import quality_command

    quality_command(request, show=_summary)


def _summary(results: Results, report: Path) -> None:
    from bench.report.quality_tables import print_console_summary

    print_console_summary(results)
    typer.echo(f"report: {report}")

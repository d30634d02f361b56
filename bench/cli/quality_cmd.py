"""`ragbench quality` and `ragbench demo`. Quality's options are `QualityRequest`'s declared fields
(bench/commands/quality.py); --out and --resume, which choose its folder, are the command line's own."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from bench.cli.app import app
from bench.cli.declared import command, field_option
from bench.cli.options import Labels, Resume, cli_only, resumable
from bench.commands.quality import QualityRequest

if TYPE_CHECKING:
    from bench.results.store import Results

Out = Annotated[Path | None, typer.Option("--out", help="Output folder (default reports/quality).")]
Overwrite = Annotated[bool, field_option(QualityRequest, "overwrite")]


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
    from bench.report.quality_answer import answer_heading, answer_lines
    from bench.report.quality_tables import print_console_summary

    answer = answer_lines(results)
    if answer:  # the answer first, then the tables it rests on
        typer.echo(f"{answer_heading(results)}:")
        for line in answer:
            typer.echo(f"  {line}")
    print_console_summary(results)
    typer.echo(f"report: {report}")


command(
    "quality",
    QualityRequest,
    _run_and_summarise,
    "Rank every judged query with every target; write run files, results, per-query CSV and a report.",
    extra=(("split", cli_only("out", Out)), ("overwrite", cli_only("resume", Resume))),
    build=resumable(QualityRequest, Path("reports/quality")),
)

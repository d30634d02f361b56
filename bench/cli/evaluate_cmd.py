"""`ragbench evaluate QRELS RUN -m MEASURE ...`: trec_eval's output for a run file."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from bench.cli.app import app

DEFAULT_MEASURES = ("ndcg_cut.10", "recall.100", "map")


class ScoresFormat(StrEnum):
    """How `evaluate` prints its scores: trec_eval's columns, or JSON."""

    TREC = "trec"
    JSON = "json"


@app.command()
def evaluate(
    qrels: Annotated[
        Path,
        typer.Argument(
            help=(
                "TREC qrels (qid 0 docno rel), BEIR qrels TSV with header, "
                "or a dataset (folder or qa.jsonl; needed for Answer@k)."
            )
        ),
    ],
    run: Annotated[Path, typer.Argument(help="TREC run file (qid Q0 docno rank score tag).")],
    measure: Annotated[
        list[str],
        typer.Option(
            "-m",
            "--measure",
            help=(
                "trec_eval measure, e.g. ndcg_cut.10, map, P.10; or nDCG@10, MRR@10; "
                "Answer@5, AnswerMRR@10 with a dataset."
            ),
            # A factory, not a list default: a fresh list per call (Typer reads the default from here).
            default_factory=lambda: list(DEFAULT_MEASURES),
            show_default=", ".join(DEFAULT_MEASURES),
        ),
    ],
    per_query: Annotated[bool, typer.Option("-q", help="Also print every query's values (trec_eval -q).")] = False,
    complete: Annotated[
        bool, typer.Option("-c", help="Average over every qrels query; missing ones count as zero (trec_eval -c).")
    ] = False,
    output_format: Annotated[str, typer.Option("--format", help="trec (trec_eval's columns) or json.")] = "trec",
) -> None:
    """Score a run with trec_eval's exact semantics (ties: score, then docno, descending)."""
    from bench.core.errors import UserError
    from bench.quality.evaluation import evaluate_files

    if output_format not in tuple(ScoresFormat):
        raise UserError(f"--format {output_format!r}: expected trec or json")
    scores = evaluate_files(qrels, run, measure, complete)
    if output_format == ScoresFormat.JSON:
        from bench.quality.metrics import scores_to_json

        typer.echo(json.dumps(scores_to_json(scores, per_query), indent=2))
    else:
        from bench.quality.metrics import format_trec

        typer.echo(format_trec(scores, per_query))

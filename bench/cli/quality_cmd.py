"""`ragbench quality`, `ragbench demo` and `ragbench report`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from bench.cli.app import app
from bench.cli.options import Labels

if TYPE_CHECKING:
    from bench.results.store import Results

Dataset = Annotated[Path, typer.Option("--dataset", help="BEIR folder, TREC folder, or JSONL Q&A.")]
Targets = Annotated[
    list[str],
    typer.Option(
        "--target",
        "-t",
        help="[NAME=]kind[:variant][+rerank][@url][?k=v&...]; NAME is what reports, run files and compare use. Repeat.",
    ),
]
Split = Annotated[str | None, typer.Option("--split", help="qrels split.")]
Out = Annotated[Path | None, typer.Option("--out", help="Output folder (default reports/quality).")]
Measures = Annotated[
    list[str] | None,
    typer.Option(
        "-m",
        "--measure",
        help=(
            "Measures (default: nDCG@10, R@100, MRR@10, MAP@100 with qrels; Answer@1, Answer@5, Answer@20, "
            "AnswerMRR@10 with answers)."
        ),
    ),
]
Depth = Annotated[int, typer.Option("--depth", help="Documents ranked per query (at least the deepest cut-off).")]
EmbeddingModel = Annotated[
    str | None, typer.Option("--embedding-model", help="Local sentence-transformers model folder for dense/hybrid.")
]
CrossEncoder = Annotated[
    str | None, typer.Option("--cross-encoder", help="Local cross-encoder folder for '+rerank' targets.")
]
RerankDepth = Annotated[int, typer.Option("--rerank-depth", help="First-stage documents the cross-encoder re-scores.")]
MaxQueries = Annotated[
    int | None, typer.Option("--max-queries", min=1, help="Evaluate a seeded sample of judged queries.")
]
MaxDocs = Annotated[
    int | None,
    typer.Option("--max-docs", min=1, help="Sample the corpus: judged docs of the queries + random distractors."),
]
Seed = Annotated[int, typer.Option("--seed", min=0, help="Seed for sampling, bootstrap and randomization tests.")]
Generate = Annotated[
    str | None,
    typer.Option(
        "--generate",
        help=(
            "Answer each question and score EM/F1/Contains: chat@URL?model=NAME (an OpenAI-compatible chat "
            "endpoint fed each target's top texts) or native (LightRAG's /query)."
        ),
    ),
]
Overwrite = Annotated[
    bool, typer.Option("--overwrite", help="Replace an earlier run in --out (only ragbench's files there).")
]
Resume = Annotated[
    Path | None,
    typer.Option(
        "--resume",
        help="Continue the interrupted run in this folder (same options): finished targets and queries are kept.",
    ),
]
Endpoints = Annotated[
    list[str] | None,
    typer.Option(
        "--endpoint",
        "-e",
        help=(
            "NAME=SPEC, as for identity and load (tei@URL, openai@URL?model=M, reference, tei-rerank@URL, "
            "cohere@URL, reference-rerank?model=PATH); targets name it: dense?embedder=NAME, "
            "bm25+rerank?reranker=NAME. Repeat."
        ),
    ),
]
NoCache = Annotated[
    bool, typer.Option("--no-cache", help="Embed every text again: no embedding cache read or written.")
]
Background = Annotated[
    str | None,
    typer.Option(
        "--background",
        help=(
            "ENDPOINT@rate=R1,R2[&batch=N&arrival=poisson|constant&duration=5s&warmup=1s&max_error_rate=0.001]: "
            "every target again while an open-loop stream of the corpus' texts runs at the -e endpoint ENDPOINT, "
            "one rate at a time (rate 0, idle, first); targets are named NAME@bgRATE. A stream that fails or is "
            "past max_error_rate leaves its rate's runs not measured under load (exit 3)."
        ),
    ),
]
HourlyUsd = Annotated[
    float | None,
    typer.Option(
        "--hourly-usd",
        help="Price per hour of the hardware that serves the targets: $ per 1k queries and per 1M texts ingested.",
    ),
]
BackgroundFrom = Annotated[
    Path | None,
    typer.Option(
        "--background-from",
        help="A `ragbench size` results file: --background rates such as 0.5x,0.9x are fractions of its saturation.",
    ),
]


@app.command()
def quality(
    dataset: Dataset,
    target: Targets,
    split: Split = None,
    out: Out = None,
    measure: Measures = None,
    depth: Depth = 100,
    embedding_model: EmbeddingModel = None,
    cross_encoder: CrossEncoder = None,
    rerank_depth: RerankDepth = 100,
    max_queries: MaxQueries = None,
    max_docs: MaxDocs = None,
    seed: Seed = 0,
    generate: Generate = None,
    overwrite: Overwrite = False,
    resume: Resume = None,
    endpoint: Endpoints = None,
    no_cache: NoCache = False,
    background: Background = None,
    background_from: BackgroundFrom = None,
    hourly_usd: HourlyUsd = None,
    labels: Labels = None,
) -> None:
    """Rank every judged query with every target; write run files, results, per-query CSV and a report."""
    from bench.commands.quality import QualityRequest
    from bench.results.provenance import Origin, parse_labels

    _run_and_summarise(
        QualityRequest(
            dataset=dataset,
            split=split,
            targets=target,
            out=_out_folder(out, resume, overwrite),
            resume=resume is not None,
            measures=measure,
            depth=depth,
            embedding_model=embedding_model,
            cross_encoder=cross_encoder,
            rerank_depth=rerank_depth,
            max_queries=max_queries,
            max_docs=max_docs,
            seed=seed,
            generate=generate,
            overwrite=overwrite,
            endpoints=endpoint,
            no_cache=no_cache,
            background=background,
            background_from=background_from,
            hourly_usd=hourly_usd,
            origin=Origin(parse_labels(labels)),
        )
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
    from bench.commands.quality import QualityRequest
    from bench.datasets import DEMO_DATASET
    from bench.results.provenance import Origin, parse_labels

    _run_and_summarise(
        QualityRequest(
            dataset=Path(DEMO_DATASET),
            targets=["bm25", "dense", "hybrid"],
            out=out,
            max_docs=max_docs or None,
            command="demo",
            overwrite=overwrite,
            origin=Origin(parse_labels(labels)),
        )
    )


def _run_and_summarise(request) -> None:
    """Run, then print the results tables and the report's path; also when a measurement failed (everything
    is written then too), before the error line and its exit code 3."""
    from bench.commands.quality import quality_command

    quality_command(request, show=_summary)


def _summary(results: Results, report: Path) -> None:
    from bench.report.quality_tables import print_console_summary

    print_console_summary(results)
    typer.echo(f"report: {report}")


@app.command()
def report(
    results: Annotated[
        Path,
        typer.Argument(
            help="A results.jsonl (quality, demo, identity, doctor, ...) or a folder: every results.jsonl below it."
        ),
    ],
    out: Annotated[Path | None, typer.Option("--out", help="Output folder (default: beside the results).")] = None,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace the report files already in another --out folder.")
    ] = False,
) -> None:
    """Rebuild report.md and report.html (and plots, per_query.csv) from results files."""
    from bench.report import write_reports

    for path in write_reports(results, out, overwrite):
        typer.echo(f"report: {path}")

"""The plain function behind `ragbench quality` and `ragbench demo`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from bench.commands.options import OVERWRITE, SPLIT, Flag, option
from bench.commands.specs import endpoints_by_name as endpoint_specs
from bench.commands.specs import target_specs
from bench.core.errors import MeasurementFailed, UserError
from bench.core.progress import console
from bench.datasets import load_dataset
from bench.datasets.model import Dataset
from bench.datasets.sample import sample_dataset
from bench.endpoints.spec import EndpointSpec
from bench.quality.background import background_load
from bench.quality.background_spec import (
    BackgroundSpec,
    background_spec,
    check_background,
    expand_targets,
    past_saturation,
)
from bench.quality.config import QualityConfig
from bench.quality.generation import GenerateSpec, parse_generate
from bench.quality.metrics import Measure, default_measures, parse_measure
from bench.quality.pipeline import run_quality
from bench.quality.under_load import not_under_load
from bench.results.lifecycle import Output
from bench.results.provenance import Origin
from bench.results.schema import RunCommand
from bench.results.store import Results
from bench.targets.base import TargetOptions, TargetSpec
from bench.targets.endpoint_refs import check_endpoint_refs


def _option(flag: str, help: str, min: int | None = None, suite: bool = True, short: str = "") -> dict[str, Flag]:
    return option(Flag((short, flag) if short else (flag,), help, min=min, suite=suite))


@dataclass
class QualityRequest:
    """`ragbench quality`'s options and a suite's [[quality]] entry, each declared once, here; `out`, `resume`
    and `command` are set by the command (the CLI's --out and --resume folders, or `ragbench run`)."""

    dataset: Path = field(metadata=_option("--dataset", "BEIR folder, TREC folder, or JSONL Q&A."))
    targets: list[str] = field(
        metadata=_option(
            "--target",
            "[NAME=]kind[:variant][+rerank][@url][?k=v&...]; NAME is what reports, run files and compare use. Repeat.",
            short="-t",
        )
    )
    out: Path
    # from the suite's [datasets] entry, checked by these options
    split: str | None = field(default=None, metadata=option(SPLIT))
    measures: list[str] | None = field(
        default=None,
        metadata=_option(
            "--measure",
            "Measures (default: nDCG@10, R@100, MRR@10, MAP@100 with qrels; Answer@1, Answer@5, Answer@20, "
            "AnswerMRR@10 with answers).",
            short="-m",
        ),
    )
    depth: int = field(
        default=100, metadata=_option("--depth", "Documents ranked per query (at least the deepest cut-off).")
    )
    embedding_model: str | None = field(
        default=None,
        metadata=_option("--embedding-model", "Local sentence-transformers model folder for dense/hybrid."),
    )
    cross_encoder: str | None = field(
        default=None, metadata=_option("--cross-encoder", "Local cross-encoder folder for '+rerank' targets.")
    )
    rerank_depth: int = field(
        default=100, metadata=_option("--rerank-depth", "First-stage documents the cross-encoder re-scores.")
    )
    max_queries: int | None = field(
        default=None,
        metadata=_option("--max-queries", "Evaluate a seeded sample of judged queries.", min=1, suite=False),
    )
    max_docs: int | None = field(
        default=None,
        metadata=_option(
            "--max-docs", "Sample the corpus: judged docs of the queries + random distractors.", min=1, suite=False
        ),
    )
    seed: int = field(
        default=0, metadata=_option("--seed", "Seed for sampling, bootstrap and randomization tests.", min=0)
    )
    generate: str | None = field(
        default=None,
        metadata=_option(
            "--generate",
            "Answer each question and score EM/F1/Contains: chat@URL?model=NAME (an OpenAI-compatible chat "
            "endpoint fed each target's top texts) or native (LightRAG's /query).",
        ),
    )  # bench/quality/generation.py
    command: RunCommand = RunCommand.QUALITY
    overwrite: bool = field(
        default=False,
        metadata=option(OVERWRITE),
    )
    resume: bool = False  # continue the interrupted run in `out`
    endpoints: list[str] | None = field(
        default=None,
        metadata=_option(
            "--endpoint",
            "NAME=SPEC, as for identity and load (tei@URL, openai@URL?model=M, reference, tei-rerank@URL, "
            "cohere@URL, reference-rerank?model=PATH); targets name it: dense?embedder=NAME, "
            "bm25+rerank?reranker=NAME. Repeat.",
            short="-e",
        ),
    )
    no_cache: bool = field(
        default=False,
        metadata=_option("--no-cache", "Embed every text again: no embedding cache read or written."),
    )
    background: str | None = field(
        default=None,
        metadata=_option(
            "--background",
            "ENDPOINT@rate=R1,R2[&batch=N&arrival=poisson|constant&duration=5s&warmup=1s&max_error_rate=0.001]: "
            "every target again while an open-loop stream of the corpus' texts runs at the -e endpoint ENDPOINT, "
            "one rate at a time (rate 0, idle, first); targets are named NAME@bgRATE. A stream that fails or is "
            "past max_error_rate leaves its rate's runs not measured under load (exit 3).",
        ),
    )
    background_from: Path | None = field(
        default=None,
        metadata=_option(
            "--background-from",
            "A `ragbench size` results file: --background rates such as 0.5x,0.9x are fractions of its saturation.",
        ),
    )
    hourly_usd: float | None = field(
        default=None,
        metadata=_option(
            "--hourly-usd",
            "Price per hour of the hardware that serves the targets: $ per 1k queries and per 1M texts ingested.",
        ),
    )
    origin: Origin = field(default_factory=Origin)  # --label NAME=VALUE and the suite file: the header's provenance


@dataclass(frozen=True)
class QualityPlan:
    """A quality request checked: each option parsed once, into what the run consumes."""

    measures: list[Measure]  # as asked; the defaults the dataset calls for are chosen once it is read
    targets: list[TargetSpec]
    endpoints: dict[str, EndpointSpec]  # -e NAME=SPEC by name
    generate: GenerateSpec | None
    background: BackgroundSpec | None


def check_quality(
    request: QualityRequest,
    targets: Mapping[str, TargetSpec] | None = None,
    endpoints_known: Mapping[str, EndpointSpec] | None = None,
) -> QualityPlan:
    """Every option checked without reading the dataset (cheap): the CLI and a suite's validation use
    this one function; `targets`, `endpoints_known`: the suite's specs, parsed when it was read."""
    from bench.core import values

    values.number("--seed", request.seed, values.SEED)  # a suite file's seed is checked here, like the option
    values.number("--depth", request.depth, values.RANKED_DOCUMENTS)
    values.number("--rerank-depth", request.rerank_depth, values.RERANKED_DOCUMENTS)
    if request.hourly_usd is not None:
        values.number("--hourly-usd", request.hourly_usd, values.HOURLY_USD)
    measures = [parse_measure(m) for m in request.measures or ()]
    specs = target_specs(request.targets, targets)
    endpoints = endpoint_specs(request.endpoints or [], endpoints_known)
    for spec in specs:
        check_endpoint_refs(spec, endpoints)
    background = None
    if request.background is not None:
        background = background_spec(request.background, request.background_from)
        check_background(background, endpoints)
    elif request.background_from is not None:
        raise UserError("--background-from gives --background's rates as fractions: give --background too")
    generate = parse_generate(request.generate) if request.generate else None
    if not generate and any(m.generated for m in measures):
        raise UserError(
            f"measure {next(m.label for m in measures if m.generated)} scores generated answers: "
            "add --generate chat@URL?model=NAME or --generate native"
        )
    _check_depth(request.depth, measures)
    return QualityPlan(measures, specs, endpoints, generate, background)


def _check_depth(depth: int, measures: list[Measure]) -> None:
    deepest = max((m.cutoff or m.truncate or 0) for m in measures) if measures else 0
    if depth < deepest:
        raise UserError(f"--depth {depth} is below the deepest cut-off ({deepest})")


def quality_command(
    request: QualityRequest, show: Callable[[Results, Path], None] | None = None, plan: QualityPlan | None = None
) -> Path:
    """Validate everything first (cheap), then run; the report is written even after a failure or Ctrl-C.
    Returns the report; `show` gets the results read back and the report once the run ended, however it ended
    (the CLI's summary). A run that measured everything but not every query or generated answer (a
    failed target, failed queries, failed generations) or not every loaded run under its load (a `--background`
    stream that failed or was past its error limit) raises MeasurementFailed once the report is written."""
    from bench.report import write_report

    plan = plan or check_quality(request)  # a suite's job keeps the plan checked when the suite was loaded
    if request.out.exists() and not request.out.is_dir():
        raise UserError(f"--out {request.out}: is a file, not a folder")
    dataset = load_dataset(request.dataset, split=request.split)
    measures = _measures(dataset, plan.measures, plan.generate, request.depth)
    if request.max_queries is not None or request.max_docs is not None:
        dataset = sample_dataset(dataset, request.max_queries, request.max_docs, request.seed)
    for note in dataset.notes:
        console.print(f"[dim]{note}[/dim]")
    options = TargetOptions(
        embedding_model=request.embedding_model,
        cross_encoder=request.cross_encoder,
        rerank_depth=request.rerank_depth,
        endpoints=plan.endpoints,
        cache=not request.no_cache,
    )
    report = request.out / "report.html"
    output = Output(
        request.out,
        request.overwrite,
        request.resume,
        report=write_report,
        # Shown however the run ends: after Ctrl-C too, the finished targets' table is on stdout.
        show=None if show is None else lambda results: show(results, report),
        progress=True,
        origin=request.origin,
    )
    config = QualityConfig(measures, request.depth, request.seed, plan.generate, hourly_usd=request.hourly_usd)
    results = _run(request, plan, dataset, options, config, output)
    said = _shortfalls(results, report)
    if said:
        raise MeasurementFailed(". ".join(said), report)
    return report


def _shortfalls(results: Results, report: Path) -> list[str]:
    """What the run left unmeasured: runs without their load, failed targets (scored as zero)."""
    failures = [
        f"target {t.name}: {'; '.join(found)}" for t in results.targets if (found := results.target_failures(t))
    ]
    unloaded: dict[str, list[str]] = {}  # why -> the runs it left without their load (one stream, its rate's runs)
    for name, why in not_under_load(results).items():
        unloaded.setdefault(why, []).append(name)
    said = [f"{', '.join(names)} not measured under load: {why}" for why, names in unloaded.items()]
    if failures:
        said.append(f"{'. '.join(failures)} (scored as zero; report: {report})")
    elif said:
        said[-1] += f" (report: {report})"
    return said


def _run(
    request: QualityRequest,
    plan: QualityPlan,
    dataset: Dataset,
    options: TargetOptions,
    config: QualityConfig,
    output: Output,
) -> Results:
    """run_quality, with `--background`: every target once per rate, each search under that rate's stream."""
    if plan.background is None:
        return run_quality(dataset, plan.targets, options, config, output, command=request.command)
    for warning in past_saturation(plan.background):  # before any stream starts
        console.print(f"[yellow]{warning}[/yellow]", soft_wrap=True)
    specs, rates = expand_targets(plan.targets, plan.background.rates)
    with background_load(plan.background, options.endpoints, dataset, rates) as load:
        if request.resume:
            load.resume(output.results)  # so a rate run again is planned to outlast its searches too
        config.around_search = load.around_search
        return run_quality(dataset, specs, options, config, output, command=request.command)


def _measures(dataset: Dataset, measures: list[Measure], generate: GenerateSpec | None, depth: int) -> list[Measure]:
    """The measures asked for, or the defaults the set calls for; refused where the set lacks what they need."""
    if not measures:
        measures = [
            parse_measure(m) for m in default_measures(bool(dataset.qrels), bool(dataset.answers), bool(generate))
        ]
    needs_answers = "--generate" if generate else next((m.label for m in measures if m.answer_based), None)
    if not dataset.answers and needs_answers:
        raise UserError(
            f"{dataset.source}: {needs_answers} needs reference answers ('answers' on each query); this set has none"
        )
    _check_depth(depth, measures)  # the default measures too
    return measures

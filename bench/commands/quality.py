"""The plain function behind `ragbench quality` and `ragbench demo`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bench.commands.background import background_load, background_spec, check_background, expand_targets
from bench.core.errors import MeasurementFailed, UserError
from bench.core.progress import console
from bench.datasets import load_dataset
from bench.datasets.model import Dataset
from bench.datasets.sample import sample_dataset
from bench.endpoints.spec import EndpointSpec, parse_endpoint_spec
from bench.quality.generation import GenerateSpec, parse_generate
from bench.quality.metrics import Measure, default_measures, parse_measure
from bench.quality.pipeline import QualityConfig, run_quality
from bench.quality.under_load import not_under_load
from bench.results.lifecycle import Output
from bench.results.store import read_results
from bench.targets.endpoint_refs import check_endpoint_refs
from bench.targets.registry import TargetOptions, TargetSpec, parse_target_spec


@dataclass
class QualityRequest:
    dataset: Path
    targets: list[str]
    out: Path
    split: str | None = None
    measures: list[str] | None = None
    depth: int = 100
    embedding_model: str | None = None
    cross_encoder: str | None = None
    rerank_depth: int = 100
    max_queries: int | None = None
    max_docs: int | None = None
    seed: int = 0
    generate: str | None = None  # --generate SPEC (bench/quality/generation.py)
    command: str = "quality"
    overwrite: bool = False  # replace an earlier run in `out` (only ragbench's files there)
    resume: bool = False  # continue the interrupted run in `out`
    endpoints: list[str] | None = None  # -e NAME=SPEC: what `?embedder=` / `?reranker=` name
    no_cache: bool = False  # embed every text again (no embedding cache read or written)
    background: str | None = None  # --background ENDPOINT@rate=...: every target again under each rate
    background_from: Path | None = None  # a `size` results file: rates `0.5x` are fractions of its saturation
    hourly_usd: float | None = None  # --hourly-usd: the serving hardware's price, for $ per 1k queries / 1M texts


def check_quality(request: QualityRequest) -> tuple[list[Measure], list[TargetSpec], GenerateSpec | None]:
    """Every option checked without reading the dataset (cheap): the CLI and a suite's validation use
    this one function."""
    from bench.core import values

    values.number("--seed", request.seed, values.SEED)  # a suite file's seed is checked here, like the option
    values.number("--depth", request.depth, values.RANKED_DOCUMENTS)
    values.number("--rerank-depth", request.rerank_depth, values.RERANKED_DOCUMENTS)
    if request.hourly_usd is not None:
        values.number("--hourly-usd", request.hourly_usd, values.HOURLY_USD)
    measures = [parse_measure(m) for m in request.measures or ()]
    specs = [parse_target_spec(t) for t in request.targets]
    endpoints = endpoint_specs(request.endpoints or [])
    for spec in specs:
        check_endpoint_refs(spec, endpoints)
    if request.background is not None:
        check_background(background_spec(request.background, request.background_from), endpoints)
    elif request.background_from is not None:
        raise UserError("--background-from gives --background's rates as fractions: give --background too")
    generate = parse_generate(request.generate) if request.generate else None
    if not generate and any(m.generated for m in measures):
        raise UserError(
            f"measure {next(m.label for m in measures if m.generated)} scores generated answers: "
            "add --generate chat@URL?model=NAME or --generate native"
        )
    _check_depth(request.depth, measures)
    return measures, specs, generate


def endpoint_specs(given: list[str]) -> dict[str, EndpointSpec]:
    """`-e NAME=SPEC` options by name; a name given twice is an error."""
    endpoints: dict[str, EndpointSpec] = {}
    for text in given:
        spec = parse_endpoint_spec(text)
        if spec.name in endpoints:
            raise UserError(f"endpoint {spec.name}: given twice (-e NAME=SPEC, one per name)")
        endpoints[spec.name] = spec
    return endpoints


def _check_depth(depth: int, measures: list[Measure]) -> None:
    deepest = max((m.cutoff or m.truncate or 0) for m in measures) if measures else 0
    if depth < deepest:
        raise UserError(f"--depth {depth} is below the deepest cut-off ({deepest})")


def quality_command(request: QualityRequest) -> Path:
    """Validate everything first (cheap), then run; the report is written even after a failure or Ctrl-C.
    Returns the report; a run that measured everything but not every query or generated answer (a
    failed target, failed queries, failed generations) or not every loaded run under its load (a `--background`
    stream that failed or was past its error limit) raises MeasurementFailed once the report is written."""
    from bench.report import write_report

    measures, specs, generate = check_quality(request)
    if request.out.exists() and not request.out.is_dir():
        raise UserError(f"--out {request.out}: is a file, not a folder")
    dataset = load_dataset(request.dataset, split=request.split)
    measures = _measures(dataset, measures, generate, request.depth)
    if request.max_queries is not None or request.max_docs is not None:
        dataset = sample_dataset(dataset, request.max_queries, request.max_docs, request.seed)
    for note in dataset.notes:
        console.print(f"[dim]{note}[/dim]")
    options = TargetOptions(
        embedding_model=request.embedding_model,
        cross_encoder=request.cross_encoder,
        rerank_depth=request.rerank_depth,
        endpoints=endpoint_specs(request.endpoints or []),
        cache=not request.no_cache,
    )
    output = Output(request.out, request.overwrite, request.resume, report=write_report, progress=True)
    config = QualityConfig(measures, request.depth, request.seed, generate, hourly_usd=request.hourly_usd)
    results = read_results(_run(request, dataset, specs, options, config, output))
    report = request.out / "report.html"
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
    if said:
        raise MeasurementFailed(". ".join(said), report)
    return report


def _run(
    request: QualityRequest,
    dataset: Dataset,
    specs: list[TargetSpec],
    options: TargetOptions,
    config: QualityConfig,
    output: Output,
) -> Path:
    """run_quality, with `--background`: every target once per rate, each search under that rate's stream."""
    if request.background is None:
        return run_quality(dataset, specs, options, config, output, command=request.command)
    spec = background_spec(request.background, request.background_from)
    specs, rates = expand_targets(specs, spec.rates)
    with background_load(spec, options.endpoints, dataset, rates) as load:
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

"""The plain function behind `ragbench grow`: one knowledge base grown in rungs through each target, measured at
every rung, and the answer: what breaks first, how latency grows, at what size it reaches the SLO."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from bench.commands.options import (
    KEEP,
    METER_HOST,
    METER_PORT,
    METER_UPSTREAM,
    OVERWRITE,
    SLO,
    SPLIT,
    Flag,
    option,
    target_flag,
)
from bench.core.errors import MeasurementFailed, UserError
from bench.datasets.model import Dataset
from bench.results.provenance import Origin
from bench.results.schema import GrowLadder, RungStatus
from bench.results.schema.kinds import TargetKind
from bench.results.store import Results
from bench.targets.base import TargetSpec

if TYPE_CHECKING:
    from bench.grow.metering import MeterPlan
    from bench.grow.resources import Resources

SYNTHETIC_DEFAULT = "synthetic:0"


@dataclass
class GrowRequest:
    """`ragbench grow`'s options, each declared once, here; `out` and `resume` are the command line's folder."""

    dataset: Path = field(
        metadata=option(Flag(("--dataset",), "The query set: BEIR folder, TREC folder, JSONL Q&A or builtin:NAME."))
    )
    targets: list[str] = field(
        metadata=option(target_flag("bm25|dense|hybrid|openwebui[:MODE]@URL|lightrag[:MODE]@URL"))
    )
    rungs: str = field(
        metadata=option(Flag(("--rungs",), "Knowledge-base sizes, increasing: 1k,10k,30k (k = 1,000, M = 1,000,000)."))
    )
    out: Path
    distractors: str = field(
        default=SYNTHETIC_DEFAULT,
        metadata=option(
            Flag(
                ("--distractors",),
                "What fills each rung past the query set's own documents: synthetic:SEED (the dataset's vocabulary "
                "and lengths, any size) or a dataset (its qrels ignored).",
            )
        ),
    )
    unit: str = field(
        default="docs",
        metadata=option(
            Flag(
                ("--unit",),
                "What a rung counts: docs, or chunks (the app's own: Open WebUI's through --meter-upstream, "
                "LightRAG's chunks_count, one per document for a local engine).",
            )
        ),
    )
    slo: str | None = field(default=None, metadata=option(SLO))
    queries: int | None = field(
        default=None,
        metadata=option(
            Flag(
                ("--queries",),
                "A seeded sample of N judged queries; the first rung then holds only their judged documents.",
                min=1,
            )
        ),
    )
    meter_upstream: list[str] | None = field(default=None, metadata=option(METER_UPSTREAM))
    meter_host: str = field(default="127.0.0.1", metadata=option(METER_HOST))
    meter_port: int = field(default=9600, metadata=option(METER_PORT))
    split: str | None = field(default=None, metadata=option(SPLIT))
    seed: int = field(default=0, metadata=option(Flag(("--seed",), "Seed of the --queries sample.", min=0)))
    keep: bool = field(default=False, metadata=option(KEEP))
    overwrite: bool = field(default=False, metadata=option(OVERWRITE))
    resume: bool = False  # continue the interrupted run in `out`
    origin: Origin = field(default_factory=Origin)


def check_targets(given: list[str]) -> list[TargetSpec]:
    """The specs parsed; their kinds' settings are checked once grow's own `pid=` and `data_dir=` are off them."""
    from bench.commands.specs import target_grammar

    if not given:
        raise UserError("--target: give at least one target (bm25, openwebui:hybrid@URL, ...)")
    specs = target_grammar(given)
    names = [s.name for s in specs]
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice is not None:
        raise UserError(f"--target: {twice} given twice (give each its own NAME=SPEC)")
    for spec in specs:
        if spec.rerank or any(k in spec.params for k in ("embedder", "reranker")):
            raise UserError(f"--target {spec.public_text!r}: grow measures targets without -e endpoints or +rerank")
    return specs


def check_metering(request: GrowRequest, specs: list[TargetSpec], unit: str) -> MeterPlan:
    """--meter-upstream parsed; Open WebUI's chunks (--unit chunks) are the texts its embedding calls carry through
    the meter's embedding route, which must then be given."""
    from bench.commands.ingest import meter_upstreams
    from bench.grow.metering import MeterPlan

    upstreams = meter_upstreams(request.meter_upstream or [])
    openwebui = next((s for s in specs if s.kind == TargetKind.OPENWEBUI), None)
    if unit == "chunks" and openwebui is not None and "embedding" not in upstreams:
        raise UserError(
            f"--unit chunks: Open WebUI ({openwebui.public_text}) is counted in the chunks its embedding calls carry: "
            "give --meter-upstream embedding=URL of its embedder and point its embedding base URL at the meter"
        )
    return MeterPlan(upstreams, request.meter_host, request.meter_port)


def grow_dataset(request: GrowRequest) -> Dataset:
    """The query set: every judged query, or a seeded sample of --queries whose base is their judged documents."""
    from dataclasses import replace

    from bench.datasets import load_dataset
    from bench.datasets.sample import sample_dataset

    dataset = load_dataset(request.dataset, split=request.split)
    if request.queries is not None:
        dataset = sample_dataset(dataset, request.queries, None, request.seed)
        judged = {d for judged in dataset.qrels.values() for d in judged if d in dataset.corpus}
        if judged:
            note = f"grow: the first rung's own documents are the {len(judged)} judged by the sampled queries"
            corpus = {d: doc for d, doc in dataset.corpus.items() if d in judged}
            dataset = replace(dataset, corpus=corpus, notes=[*dataset.notes, note])
    queries = dataset.evaluated_queries()
    return replace(dataset, queries={q: dataset.queries[q] for q in queries})


def checked_targets(targets: list[str]) -> tuple[list[TargetSpec], dict[str, Resources]]:
    """Each -t spec parsed, grow's own pid=/data_dir= taken off (the app's resources to read), then the kind's
    settings checked on what is left."""
    from bench.grow.resources import split_resources
    from bench.targets.registry import check_settings

    split = [split_resources(spec) for spec in check_targets(targets)]
    return [check_settings(spec) for spec, _ in split], {spec.name: found for spec, found in split}


def grow_command(request: GrowRequest) -> Path:
    """Check every option, then climb; the report of what finished is written also after an error or Ctrl-C.
    Raises MeasurementFailed (exit 3) once the report is written when a target failed a rung or queries failed."""
    from bench.datasets.distractors import Distractors, parse_distractors
    from bench.grow.ladder import check_unit, parse_rungs
    from bench.grow.session import GrowPlan, run_grow
    from bench.quality.metrics import parse_measure
    from bench.report import write_report
    from bench.results.lifecycle import Output
    from bench.sizing.slo import parse_slo

    specs, resources = checked_targets(request.targets)
    rungs = parse_rungs(request.rungs)
    unit = check_unit(request.unit)
    metering = check_metering(request, specs, unit)
    slo = parse_slo(request.slo, None, 0.0) if request.slo is not None else None
    source = parse_distractors(request.distractors)
    if request.out.exists() and not request.out.is_dir():
        raise UserError(f"--out {request.out}: is a file, not a folder")
    dataset = grow_dataset(request)
    qrels = dataset.qrels or dataset.answer_qrels()  # on the dataset's own documents: distractors are never relevant
    settings = GrowLadder(
        rungs=rungs,
        unit=unit,
        distractors=request.distractors,
        queries=request.queries,
        seed=request.seed,
        slo=request.slo,
    )
    measures = [parse_measure("nDCG@10"), parse_measure("R@100")]
    distractors = Distractors(source, dataset)
    plan = GrowPlan(specs, rungs, unit, distractors, measures, slo, request.keep, settings, resources, metering)
    output = Output(
        request.out,
        request.overwrite,
        request.resume,
        report=write_report,
        show=show_answer,
        say=print,
        progress=True,  # bars on a terminal; in a log a line every 10 s while a rung ingests or queries
        origin=request.origin,
    )
    with locked_out(request.out):  # a second grow on this --out refuses while this one runs
        results = run_grow(plan, dataset, qrels, output)
    report = request.out / "report.html"
    broken = [r for r in (results.grow_rungs if results else []) if r.status != RungStatus.OK]
    if broken:
        named = "; ".join(f"{r.target} at {r.size:,}: {r.error or r.errors}" for r in broken[:3])
        raise MeasurementFailed(f"{len(broken)} rung(s) failed or had failed queries: {named} (report: {report})")
    return report


LOCK_FILE = ".ragbench-grow.lock"


@contextmanager
def locked_out(out: Path) -> Iterator[None]:
    """Hold --out for the run (bench/core/pidlock.py: a live run's lock refused with one line, a killed run's taken
    over); a folder made here only for the lock goes again if the run wrote nothing in it."""
    from bench.core.pidlock import pid_lock

    made = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"--out {out}: {exc.strerror or exc}") from None
    try:
        with pid_lock(out / LOCK_FILE, f"--out {out}"):
            yield
    finally:
        if made and out.is_dir() and not any(out.iterdir()):
            out.rmdir()


def show_answer(results: Results) -> None:
    """The answer per target on the console, once the run ended (however it ended)."""
    for summary in results.grow_summaries:
        print(summary.answer)

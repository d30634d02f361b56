"""One `ragbench ingest` run: the corpus loaded, the meter started, each target's combinations measured into the
results file, the recommendation per target, the meter stopped."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bench.core.errors import ServerError, UserError
from bench.core.http import HttpClient
from bench.core.progress import console
from bench.datasets import load_dataset
from bench.endpoints.meter import Meter
from bench.ingest.lightrag import LABEL, ingest_lightrag
from bench.ingest.recommend import recommend
from bench.ingest.record import Combination, failed_record, target_name
from bench.ingest.settings import SettingAxis
from bench.ingest.sweep import IngestMetering, OpenWebUISweep
from bench.results.lifecycle import OpenRun, Output, open_run
from bench.results.schema import IngestPointRecord, RunCommand, RunHeader
from bench.results.schema.run import DatasetBlock
from bench.targets.base import TargetKind, TargetOptions, TargetSpec
from bench.targets.http_shared import DedupedCorpus
from bench.targets.lightrag import LightRAGTarget
from bench.targets.openwebui import OpenWebUITarget


@dataclass(frozen=True)
class IngestPlan:
    """The checked options of one ingest run."""

    specs: list[TargetSpec]
    axes: list[SettingAxis]
    upstreams: dict[str, str]  # meter route -> upstream URL; empty: no meter
    meter_host: str
    meter_port: int
    direct: bool
    keep: bool
    timeout_s: float
    max_docs: int | None
    record: Path | None = None  # --record: the meter's trace (bench/endpoints/meter_trace.py)


UPSTREAM_PROBE_S = 10.0  # an upstream that does not answer a GET within this is taken for unreachable


def check_upstreams(plan: IngestPlan) -> None:
    """Each meter upstream answers (any HTTP status: only whether it is there is asked), before anything is written:
    an unreachable embedder would fail every document of every combination."""
    for route, url in plan.upstreams.items():
        probe = HttpClient(f"--meter-upstream {route}={url}", url, timeout_s=min(UPSTREAM_PROBE_S, plan.timeout_s))
        try:
            probe.send("GET", "")
        finally:
            probe.close()


def start_meter(plan: IngestPlan) -> Meter | None:
    if not plan.upstreams:
        return None
    check_upstreams(plan)
    try:
        meter = Meter(
            plan.upstreams, plan.meter_host, plan.meter_port, plan.timeout_s, log_calls=True, record=plan.record
        )
    except ValueError as exc:
        raise UserError(f"--meter-upstream: {exc}") from None
    except OSError as exc:
        if plan.record is not None and exc.filename == str(plan.record):
            raise UserError(f"--record {plan.record}: {exc.strerror or exc}") from None
        raise UserError(
            f"--meter-port: cannot listen on {plan.meter_host}:{plan.meter_port}: {exc.strerror or exc}"
        ) from None
    for route in meter.upstreams:
        print(f"meter: {meter.url}/{route} -> the {route} upstream")
    if plan.record is not None:
        print(f"meter: recording a trace in {plan.record}")
    return meter.start()


@dataclass(frozen=True)
class IngestOutcome:
    points: list[IngestPointRecord]
    failures: list[str]  # per target whose sweep stopped: the combination and why


def run_ingest(plan: IngestPlan, dataset_path: Path, split: str | None, output: Output) -> IngestOutcome:
    dataset = load_dataset(dataset_path, split=split)
    documents = dict(list(dataset.corpus.items())[: plan.max_docs] if plan.max_docs else dataset.corpus.items())
    corpus = DedupedCorpus.of(documents)
    header = _header(plan, DatasetBlock(name=dataset.name, source=str(dataset_path)), len(documents), corpus)
    if corpus.duplicate_count:
        note = dedupe_note(len(documents), len(corpus.documents))
        console.print(f"ingest: {note}", markup=False, highlight=False, soft_wrap=True)
    meter = start_meter(plan)
    metering = IngestMetering(meter, plan.upstreams, plan.direct, plan.timeout_s)
    points: list[IngestPointRecord] = []
    failures: list[str] = []
    targets: list[Prepared] = []
    try:
        # Keys, parameters, servers and settings checked before anything is written.
        for given in plan.specs:
            targets.append(_prepared(given, corpus, metering, plan))
        with open_run(output, header) as run:
            for target in targets:
                try:
                    found, failure = _measure(target, corpus, metering, run, plan)
                finally:
                    target.close()  # and again below, harmlessly: a target is closed once it is done
                points += found
                spec = _spec(target)
                if failure is not None:
                    failures.append(f"{spec}: {failure}")
                run.write(recommend(spec, found))
    finally:
        for target in targets:
            target.close()
        if meter is not None:
            meter.close()
    return IngestOutcome(points, failures)


def dedupe_note(documents: int, distinct: int) -> str:
    """What the run says of a corpus whose documents repeat one another's text."""
    return (
        f"{documents - distinct} of {documents} documents repeat another's text: {distinct} distinct texts are "
        "ingested (the apps refuse identical content), and every figure counts those"
    )


def _header(plan: IngestPlan, dataset: DatasetBlock, documents: int, corpus: DedupedCorpus) -> RunHeader:
    import bench
    from bench.results.frame import now_iso

    counts = DatasetBlock(documents=documents)
    if corpus.duplicate_count:
        counts |= DatasetBlock(distinct_texts=len(corpus.documents), identical_copies=corpus.duplicate_count)
    return RunHeader(
        command=RunCommand.INGEST,
        created=now_iso(),
        ragbench_version=bench.__version__,
        dataset={**dataset, **counts},
        targets=[f"{s.given_name}={s.public_text}" if s.given_name else s.public_text for s in plan.specs],
    )


Prepared = OpenWebUISweep | LightRAGTarget


def _prepared(spec: TargetSpec, corpus: DedupedCorpus, metering: IngestMetering, plan: IngestPlan) -> Prepared:
    if spec.kind == TargetKind.OPENWEBUI:
        sweep = OpenWebUISweep(OpenWebUITarget(spec, TargetOptions()), corpus, metering, plan.keep)
        sweep.prepare(plan.axes)
        return sweep
    target = LightRAGTarget(spec, TargetOptions())
    target.http.json("GET", "/health")
    return target


def _spec(target: Prepared) -> str:
    return target_name((target.target if isinstance(target, OpenWebUISweep) else target).spec)


def _measure(
    target: Prepared, corpus: DedupedCorpus, metering: IngestMetering, run: OpenRun, plan: IngestPlan
) -> tuple[list[IngestPointRecord], str | None]:
    """The target's points and why its measuring stopped (None: it did not)."""
    if isinstance(target, OpenWebUISweep):
        return target.run(run.write, run.progress)
    try:
        point = ingest_lightrag(
            target, corpus, metering.meter, plan.upstreams, run.progress, direct=plan.direct, timeout_s=plan.timeout_s
        )
    except ServerError as exc:
        run.write(failed_record(Combination(target_name(target.spec), TargetKind.LIGHTRAG, {}, LABEL), exc.args[0]))
        return [], f"{LABEL}: {exc.args[0]}"
    run.write(point)
    return [point], None

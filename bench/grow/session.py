"""One grow run from its checked plan: the targets built once, the ladder climbed inside the results lifecycle,
each target's answer written however the run ends, what ragbench made on the servers removed unless --keep."""

from __future__ import annotations

import errno
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

import bench
from bench.core.errors import UserError
from bench.datasets.distractors import Distractors
from bench.datasets.model import Dataset
from bench.grow.answer import rung_too_busy, summarise
from bench.grow.increment import Grown
from bench.grow.ladder import Corpora
from bench.grow.metering import MeterPlan, start_meter
from bench.grow.resources import Resources
from bench.grow.resume import check_resume, checked_records, engine
from bench.grow.run import DEPTH, Climb, climb
from bench.quality.metrics import Measure
from bench.results.frame import now_iso
from bench.results.lifecycle import Output, open_run
from bench.results.schema import GrowLadder, GrowRungRecord, RunCommand, RungStatus, RunHeader
from bench.results.schema.grow import IngestMode
from bench.results.store import Results, read_results
from bench.sizing.slo import Slo, sig3
from bench.targets.base import Target, TargetKind, TargetOptions, TargetSpec


@dataclass(frozen=True)
class GrowPlan:
    specs: list[TargetSpec]
    rungs: list[int]
    unit: str
    distractors: Distractors
    measures: list[Measure]
    slo: Slo | None
    keep: bool
    settings: GrowLadder  # what --resume must match (the header's `grow`)
    resources: dict[str, Resources]  # target name -> the app's process and store, where this host can read them
    metering: MeterPlan  # --meter-upstream: the meter between the apps and their providers (no upstream: none)


def run_grow(plan: GrowPlan, dataset: Dataset, qrels: dict[str, dict[str, int]], output: Output) -> Results | None:
    """Climb every rung with every target; returns the results read back (None where the output shows nothing)."""
    corpora = Corpora(dataset, plan.distractors, plan.rungs, plan.unit)  # a source too small: refused here
    header = _header(plan, dataset)
    if output.resume:  # the ladder's own options named before the lifecycle's generic ones (--queries, not
        _check_resumable(output, header, plan)  # --max-queries), and another engine under a name refused
    meter = start_meter(plan.metering)  # each upstream probed, the port taken: refused before anything is written
    try:
        targets = _build(plan, dataset.fingerprint())  # offline: a bad mode or parameter is refused before anything
        shared = Climb(
            corpora, dict(dataset.queries), qrels, plan.measures, _percentiles(plan), plan.unit, plan.resources, meter
        )
        return _climb_all(plan, shared, targets, header, output)
    finally:
        if meter is not None:
            meter.close()


def _percentiles(plan: GrowPlan) -> dict[str, float]:
    return {"p50": 50.0, "p99": 99.0} | ({plan.slo.name: plan.slo.percentile} if plan.slo else {})


def _climb_all(
    plan: GrowPlan, shared: Climb, targets: list[tuple[TargetSpec, Target]], header: RunHeader, output: Output
) -> Results | None:
    """The ladder climbed inside the results lifecycle; every target's answer written however it ends; what the run
    made on the servers removed (unless --keep or stopped) and each target closed."""
    records: list[GrowRungRecord] = []
    stopped = False
    # the Open WebUI bases grow named (no `kb=` given)
    owned = {s.name for s in plan.specs if s.kind == TargetKind.OPENWEBUI and "kb" not in s.params}
    try:
        with _disk_full(output), open_run(output, header, lambda previous: _carried(previous, header, plan)) as run:
            records += [r for r in run.kept if isinstance(r, GrowRungRecord)]
            failed = {r.target for r in records if r.status == RungStatus.FAILED}
            start = _next_rung(records, plan) if run.resumed else 1
            grown = {s.name: _grown(_of(records, s.name)) for s in plan.specs if _of(records, s.name)}

            def write(record: GrowRungRecord) -> None:
                run.write(record)
                records.append(record)
                _say(record, len(plan.rungs))

            try:
                climb(shared, targets, start, write, failed, grown, run.progress)
            except KeyboardInterrupt:
                stopped = True
                raise
            finally:  # the answer of what finished, also after Ctrl-C or a failure
                run.write(*(summarise(s.name, _of(records, s.name), plan.slo, plan.unit) for s in plan.specs))
    finally:
        # Last built, first closed: each Open WebUI target puts back the settings it found, which for a second mode
        # on the same server are the first mode's; in reverse order the server ends as it was.
        for _, target in reversed(targets):
            removing = not (plan.keep or stopped)  # a stopped run keeps its knowledge bases for --resume
            _say_cleanup(target, removing)
            if removing:
                remove_made(target, owned=target.name in owned)
            close(target)
    return run.read_back


@contextmanager
def _disk_full(output: Output) -> Iterator[None]:
    """A results file that cannot be written (a full disk, a quota, a read-only mount): one line; what was written
    before (every finished rung: each record is synced as it is written) stays."""
    try:
        yield
    except OSError as exc:
        if exc.errno not in NO_ROOM:
            raise
        raise UserError(
            f"--out {output.folder}: cannot write the results ({exc.strerror}); the rungs finished before are kept "
            f"in {output.results.name}"
        ) from exc


NO_ROOM = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG}


def close(target: Target) -> None:
    """The target's close (Open WebUI: its settings put back); a server gone since says so in one line, and the
    run's figures and exit code stand (the rung it died in is recorded failed)."""
    from bench.core.progress import console

    try:
        target.close()
    except UserError as exc:
        console.print(f"{target.name}: {exc}", markup=False, highlight=False, soft_wrap=True)


def _build(plan: GrowPlan, fingerprint: str) -> list[tuple[TargetSpec, Target]]:
    """Each target once, for the whole ladder: an Open WebUI mode in a knowledge base of its own (two modes in one
    would share its documents and time one ingest twice); LightRAG deletes the documents it inserted unless --keep."""
    from bench.results.outdir import safe_filename
    from bench.targets.registry import build_target

    built: list[tuple[TargetSpec, Target]] = []
    options = TargetOptions(fresh_queries=True)  # the same queries at every rung: none answered from the cache
    try:
        for spec in plan.specs:
            # parameters grow adds keep the target's name: records and the answer are under the name given
            if spec.kind == TargetKind.LIGHTRAG and not plan.keep and "cleanup" not in spec.params:
                spec = replace(spec, params={**spec.params, "cleanup": "true"}, given_name=spec.name)
            if spec.kind == TargetKind.OPENWEBUI and "kb" not in spec.params:
                kb = f"ragbench-grow-{safe_filename(spec.name)}-{fingerprint}"
                spec = replace(spec, params={**spec.params, "kb": kb}, given_name=spec.name)
            built.append((spec, build_target(spec, options)))
    except BaseException:
        for _, target in built:
            target.close()
        raise
    return built


def remove_made(target: Target, owned: bool) -> None:
    """What an Open WebUI target made on its server (`ragbench ingest`'s removal): in a knowledge base grow named
    (`owned`) every file of the corpus there and the base itself, also what an interrupted run before a --resume
    put there; in a `kb=` the user named, only the files this run uploaded, and the base only if this run made it.
    A server that refuses is said in one line: the run's figures stand."""
    from bench.core.progress import console
    from bench.ingest.openwebui import MadeOnServer, remove_knowledge
    from bench.targets.openwebui import OpenWebUITarget

    if not isinstance(target, OpenWebUITarget) or target.kb_id is None:
        return
    made_kb = owned or any(line.startswith(f"knowledge base '{target.kb_name}' (") for line in target.created)
    files = list(dict.fromkeys([*target.uploaded_ids, *(target.file_to_doc if owned else [])]))
    try:
        remove_knowledge(target.http, MadeOnServer(target.kb_id if made_kb else None, files))
    except UserError as exc:
        console.print(
            f"{target.name}: not removed from the server: {exc}", markup=False, highlight=False, soft_wrap=True
        )


def _grown(kept: list[GrowRungRecord]) -> Grown:
    """How far a resumed target's base had grown: its last finished rung's documents and chunks."""
    last = kept[-1]
    return Grown(last.docs if last.docs is not None else last.size, last.chunks)


def _of(records: list[GrowRungRecord], name: str) -> list[GrowRungRecord]:
    return sorted((r for r in records if r.target == name), key=lambda r: r.rung)


def _say(record: GrowRungRecord, rungs: int) -> None:
    """One line per rung and target, as CI logs show it."""
    from bench.core.progress import console

    latency = record.latency_ms
    said = f"p50 {latency['p50']:.1f} ms p99 {latency['p99']:.1f} ms" if latency else "no query answered"
    quality = " ".join(f"{k} {v:.3f}" for k, v in record.metrics.items())
    errors = f" errors {record.errors}" if record.errors else ""
    rate = f"{sig3(record.docs_per_s)} docs/s" if record.docs_per_s is not None else "-"
    if (
        record.docs_per_s is None
        and record.status != RungStatus.FAILED
        and record.ingest_mode == IngestMode.INCREMENTAL
    ):
        rate = "none sent: the base held them"
    size = f"{record.size:,} {record.unit}" + (f" ({record.docs:,} docs)" if record.docs is not None else "")
    calls = "".join(
        f", {route} {c.calls:,} calls {c.texts:,} texts" for route, c in record.ingest_calls.items() if c.calls
    )
    line = (
        f"rung {record.rung}/{rungs} {size} {record.target}: "
        f"ingest {record.ingest_mode} {record.ingest_seconds:.2f} s ({rate}{calls}), {said}, {quality}{errors}"
    )
    if record.machine is not None:
        line += f"; {record.machine.text()}"
    busy = rung_too_busy(record)
    if busy is not None:
        line += f"; {busy}: not fitted"
    if record.status == RungStatus.FAILED:
        line = f"rung {record.rung}/{rungs} {size} {record.target}: FAILED {record.error}"
    console.print(line, markup=False, highlight=False, soft_wrap=True)


def _header(plan: GrowPlan, dataset: Dataset) -> RunHeader:
    return RunHeader(
        command="grow",
        created=now_iso(),
        ragbench_version=bench.__version__,
        dataset=dataset.header(len(dataset.queries)),
        measures=[m.trec_name for m in plan.measures],
        measure_labels={m.trec_name: m.label for m in plan.measures},
        depth=DEPTH,
        targets=[s.name for s in plan.specs],
        grow=plan.settings
        | GrowLadder(distractor_source=plan.distractors.describe(), engines={s.name: engine(s) for s in plan.specs}),
    )


def _check_resumable(output: Output, header: RunHeader, plan: GrowPlan) -> None:
    """--resume of a grow run: the same ladder and engines, or one line naming what differs (a file that cannot be
    read, or of another command, is the lifecycle's to say)."""
    try:
        previous = read_results(output.results)
    except UserError:
        return
    if previous.header.command == RunCommand.GROW and header.grow is not None:
        check_resume(output.folder, previous.header.grow or {}, header.grow, previous.grow_rungs, plan.specs)


def _carried(previous: Results, header: RunHeader, plan: GrowPlan) -> list[GrowRungRecord]:
    """--resume: the same ladder, or one line; the rungs every target finished are kept (the summaries are made
    again at the end), each checked against the ladder first (a changed file is refused, never fitted)."""
    folder = previous.path.parent
    ladder = header.grow or {}
    check_resume(folder, previous.header.grow or {}, ladder, previous.grow_rungs, plan.specs)
    rungs = checked_records(folder, previous.grow_rungs, ladder)
    last = _last_finished(rungs, plan)
    return [r for r in rungs if r.rung <= last]


def _say_cleanup(target: Target, removing: bool) -> None:
    """A server's target says what it is about to clean up (its files can take minutes to remove): never a silent
    wait at the end of a run."""
    from bench.core.progress import console
    from bench.targets.lightrag import LightRAGTarget
    from bench.targets.openwebui import OpenWebUITarget

    what = []
    if isinstance(target, OpenWebUITarget):
        if removing and target.kb_id is not None:
            what.append(f"removing what this run made in knowledge base '{target.kb_name}'")
        if target.saved_settings is not None:
            what.append("putting its retrieval settings back")
    elif isinstance(target, LightRAGTarget) and target.cleanup and target.inserted_ids:
        what.append(f"deleting the {len(target.inserted_ids):,} document(s) it inserted")
    if what:
        console.print(f"cleaning up: {target.name}: {', '.join(what)}", markup=False, highlight=False, soft_wrap=True)


def _last_finished(rungs: list[GrowRungRecord], plan: GrowPlan) -> int:
    """The last rung every target still climbing finished (a target that failed climbs no further)."""
    done = {s.name: max((r.rung for r in rungs if r.target == s.name), default=0) for s in plan.specs}
    failed = {r.target for r in rungs if r.status == RungStatus.FAILED}
    climbing = [n for name, n in done.items() if name not in failed]
    return min(climbing) if climbing else max(done.values(), default=0)


def _next_rung(kept: list[GrowRungRecord], plan: GrowPlan) -> int:
    return _last_finished(kept, plan) + 1

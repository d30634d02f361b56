"""`quality`: rank every judged query with every target, score with trec_eval semantics, compare.

Everything is checked before `--out` is touched: target specs (each target is built, which runs its
own configuration checks), the corpus, the output folder. Then each target runs prepare → search →
close (close also on error or Ctrl-C, so server settings are restored). The moment a target finishes,
its run file and its target, query and metric records are written together, uninterruptibly; the
comparisons and the `end` record are written together last. So the results file is true at every
instant: each record once, and an `end` record that says how the run ended (complete, failed,
interrupted), also after Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import bench
from bench.core.errors import UserError
from bench.core.interrupt import uninterruptible
from bench.datasets.answers import AnswerJudge
from bench.datasets.model import Dataset, Qrels
from bench.quality.checkpoint import Checkpoint
from bench.quality.evaluation import ranked_texts
from bench.quality.generation import ChatGenerator, Generated, GenerateSpec, generate_answers
from bench.quality.metrics import Measure, evaluate
from bench.quality.runs import Run, run_from_results, write_run
from bench.quality.scoring import comparisons, metric_records
from bench.results.lifecycle import OpenRun, Output, open_run
from bench.results.outdir import QRELS_FILE, checkpoint_file, run_file
from bench.results.schema import LoadPointRecord, MetricRecord, QueryRecord, RunHeader, TargetRecord
from bench.results.store import Results, now_iso
from bench.targets.base import ProgressFactory, QueryResult, Target, TargetFailed, TargetSpec
from bench.targets.embed_cost import Metered, percentiles_ms
from bench.targets.registry import TargetOptions, build_target

SEARCH_BATCH = 16  # queries per search call: each finished batch is kept (bench/quality/checkpoint.py)


@dataclass
class QualityConfig:
    measures: list[Measure]
    depth: int = 100
    seed: int = 0
    generate: GenerateSpec | None = None  # answer every question from what each target retrieved
    hourly_usd: float | None = None  # the serving hardware's price per hour: the report's $ costs
    # Wraps each target's search (`--background`: the load stream it runs under); the list it yields takes
    # records to write with the target's own (the stream's load_point), filled when the context ends.
    around_search: Callable[[str], AbstractContextManager[list[Any]]] = field(
        default=lambda name: nullcontext([]), repr=False
    )


def _percentiles(values_ms: list[float]) -> dict[str, float]:
    if not values_ms:
        return {}
    arr = np.array(values_ms)
    return {
        "p50": float(np.percentile(arr, 50)),
        "p90": float(np.percentile(arr, 90)),
        "p99": float(np.percentile(arr, 99)),
        "mean": float(arr.mean()),
        "max": float(arr.max()),
    }


def _target_record(
    spec: TargetSpec,
    name: str,
    config: dict,
    results: list[QueryResult],
    index_s: float,
    search_s: float,
    replaced: bool,
    generated: dict[str, Generated],
    cost_blocks: dict[str, dict[str, Any]],
) -> TargetRecord:
    cost_keys = sorted({k for r in results for k in r.cost})
    warnings: dict[str, int] = {}
    for r in results:
        for w in set(r.warnings):
            warnings[w] = warnings.get(w, 0) + 1
    return TargetRecord(
        name=name,
        spec=spec.public_text,
        status="ok",
        config=config,
        index_seconds=index_s,
        search_seconds=search_s,
        queries=len(results),
        errors=sum(1 for r in results if r.error),
        empty=sum(1 for r in results if not r.hits and not r.error),
        latency_ms=_percentiles([r.latency_s * 1000 for r in results if not r.error and r.latency_s is not None]),
        cost={k: float(np.mean([r.cost.get(k, 0.0) for r in results])) for k in cost_keys},
        warnings=warnings,
        scores_replaced=replaced,
        run_file=run_file(name),
        answer_errors=sum(1 for g in generated.values() if g.error is not None),
        latency_parts_ms=_parts(results),
        cost_blocks=cost_blocks,
    )


def _parts(results: list[QueryResult]) -> dict[str, dict[str, float]]:
    """p50 and p99 of each measured part of the queries' latency (failed queries left out, as for latency_ms)."""
    names = sorted({k for r in results for k in r.parts_ms})
    kept = [r for r in results if not r.error]
    return {n: percentiles_ms([r.parts_ms[n] for r in kept if n in r.parts_ms]) for n in names}


def _write_qrels(path: Path, qrels: Qrels) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for qid, docs in qrels.items():
            fh.writelines(f"{qid} 0 {doc_id} {grade}\n" for doc_id, grade in docs.items())


def _build_targets(specs: list[TargetSpec], options: TargetOptions) -> list[Target]:
    built: list[Target] = []
    try:
        for spec in specs:
            built.append(build_target(spec, options))
    except BaseException:
        for target in built:
            target.close()
        raise
    return built


@dataclass
class _Scoring:
    """What scoring a finished target needs besides its run."""

    dataset: Dataset
    config: QualityConfig
    judge: AnswerJudge
    labels: dict[str, str]
    relevance: dict[str, str]


def run_quality(
    dataset: Dataset,
    specs: list[TargetSpec],
    options: TargetOptions,
    config: QualityConfig,
    output: Output,
    command: str = "quality",
) -> Path:
    """Run every target and write results, qrels and run files into `output` (bench.results.lifecycle);
    returns the results path. Nothing is written before every check passed. `output.resume`: the folder holds
    an interrupted run of the same dataset, targets and settings; its finished targets and the finished
    queries of the others are kept, and only the rest is run."""
    names = [s.name for s in specs]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise UserError(f"targets named twice: {', '.join(sorted(duplicates))} (give each its own NAME=SPEC)")
    if not dataset.corpus:
        raise UserError(f"{dataset.source}: no corpus to rank (quality needs one; evaluate needs only a run)")
    scoring = _Scoring(
        dataset,
        config,
        AnswerJudge(dataset.answers),
        labels={m.trec_name: _label(dataset, m) for m in config.measures},
        relevance={m.trec_name: relevance_source(dataset, m) for m in config.measures},
    )
    header = _header(scoring, names, command)
    targets = _build_targets(specs, options)
    waiting = list(targets)  # built but not started: closed at the end (a started one closes itself)
    try:
        with open_run(output, header, _finished_targets) as run:
            metrics = [r for r in run.kept if isinstance(r, MetricRecord)]
            run.closing = lambda status: comparisons(metrics, [m.trec_name for m in config.measures], config.seed)
            if not run.resumed:
                _write_qrels(output.folder / QRELS_FILE, _judgments(dataset, config))
            finished = {m.target for m in metrics}
            for spec, target in zip(specs, targets):
                waiting.remove(target)
                if spec.name in finished:
                    target.close()
                    continue
                metrics += _run_target(spec, target, scoring, output.folder, run)
    finally:
        for target in waiting:  # release their clients
            target.close()
    return output.results


def _judgments(dataset: Dataset, config: QualityConfig) -> Qrels:
    """What the ranking measures are scored against: the qrels, or judgments derived from the answers (a pass
    over the corpus: only when a ranking measure needs them)."""
    ranking = any(not m.answer_based for m in config.measures)
    return dataset.qrels or (dataset.answer_qrels() if ranking else {})


def _header(scoring: _Scoring, names: list[str], command: str) -> RunHeader:
    dataset, config = scoring.dataset, scoring.config
    return RunHeader(
        command=command,
        created=now_iso(),
        ragbench_version=bench.__version__,
        dataset={
            "name": dataset.name,
            "source": dataset.source,
            "format": dataset.format,
            "split": dataset.split,
            "fingerprint": dataset.fingerprint(),
            "documents": len(dataset.corpus),
            "queries": len(dataset.evaluated_queries()),
            "notes": dataset.notes,
        },
        measures=[m.trec_name for m in config.measures],
        measure_labels=scoring.labels,
        measure_relevance=scoring.relevance,
        depth=config.depth,
        seed=config.seed,
        targets=names,
        hourly_usd=config.hourly_usd,
    )


def _finished_targets(previous: Results) -> list[object]:
    """What `--resume` keeps of the interrupted run: each finished target with its queries, its metrics and the
    records written with it (`--background`: the stream of the rate it closed). A target cut between its records
    runs again (its finished queries are in its checkpoint)."""
    kept: list[object] = []
    written_with = _written_with(previous)
    for target in previous.targets:
        own = [m for m in previous.metrics if m.target == target.name]
        if {m.measure for m in own} != set(previous.header.measures):
            continue
        kept += [target, *[q for q in previous.queries if q.target == target.name], *own]
        kept += written_with.get(target.name, [])
    return kept


def _written_with(previous: Results) -> dict[str, list[LoadPointRecord]]:
    """The load points of a quality run by the target whose batch they were written in: the last target before
    them in the file (each target's records, and what `around_search` adds, are written as one batch)."""
    targets = sorted((previous.line(t) or 0, t.name) for t in previous.targets)
    lines = [line for line, _ in targets]
    found: dict[str, list[LoadPointRecord]] = {}
    for point in previous.load_points:
        before = bisect.bisect_left(lines, previous.line(point) or 0)
        if before:
            found.setdefault(targets[before - 1][1], []).append(point)
    return found


def _run_target(spec: TargetSpec, target: Target, scoring: _Scoring, out_dir: Path, run: OpenRun) -> list[MetricRecord]:
    dataset, config, judge = scoring.dataset, scoring.config, scoring.judge
    queries = {qid: dataset.queries[qid] for qid in dataset.evaluated_queries()}
    checkpoint = Checkpoint(out_dir / checkpoint_file(run_file(spec.name)))
    try:
        index_s, failure = _prepare(target, dataset, run.progress)
        results: list[QueryResult] = []
        search_s = 0.0
        extra: list[Any] = []
        if failure is None:
            with config.around_search(spec.name) as extra:
                results, search_s, failure = _search(target, queries, config.depth, run.progress, checkpoint)
        described = target.describe()
        generated = _generate(config, target, spec.name, dataset, results, run.progress, judge, described)
        blocks = target.cost_blocks() if isinstance(target, Metered) else {}
    finally:
        target.close()
    query_run, replaced = run_from_results(results)
    judge.judge(spec.name, _returned_texts(dataset, results, query_run, config))
    per_query = _per_query(dataset, spec.name, query_run, config, judge)
    metrics = metric_records(
        spec.name,
        {m.trec_name: per_query[m.trec_name] for m in config.measures},
        scoring.labels,
        scoring.relevance,
        config.seed,
    )
    record = _target_record(spec, spec.name, described, results, index_s, search_s, replaced, generated, blocks)
    if failure:
        record.status, record.error = "failed", failure
    with uninterruptible():  # run file and records: all of them or none
        write_run(out_dir / record.run_file, query_run, tag=spec.name)
        run.write(record, *_query_records(spec.name, results, generated), *metrics, *extra)
        checkpoint.remove()
    return metrics


def _query_records(name: str, results: list[QueryResult], generated: dict[str, Generated]) -> list[QueryRecord]:
    return [
        QueryRecord(
            target=name,
            qid=r.qid,
            latency_ms=None if r.latency_s is None else r.latency_s * 1000,
            hits=len(r.hits),
            error=r.error,
            cost=r.cost,
            warnings=r.warnings,
            answer=generated[r.qid].text if r.qid in generated else None,
            answer_error=generated[r.qid].error if r.qid in generated else None,
            parts_ms=r.parts_ms,
        )
        for r in results
    ]


def _prepare(target: Target, dataset: Dataset, progress: ProgressFactory) -> tuple[float, str | None]:
    """Seconds spent indexing, and why the target ended there (None when it did not): a server that went
    away while ingesting fails the target, with what it finished kept (an endpoint's cache)."""
    start = time.perf_counter()
    try:
        target.prepare(dataset, progress)
    except TargetFailed as exc:
        return time.perf_counter() - start, str(exc)
    return time.perf_counter() - start, None


def _search(
    target: Target, queries: dict[str, str], depth: int, progress: ProgressFactory, checkpoint: Checkpoint
) -> tuple[list[QueryResult], float, str | None]:
    """Every query's result, in query order, the seconds spent searching, and why the target ended
    part-way (None when it did not): queries a resumed run already finished come from the checkpoint,
    the rest are searched in batches, each kept as it finishes. A target whose server went away
    (TargetFailed) keeps what finished; its unfinished queries have no result."""
    done = checkpoint.load()
    remaining = [qid for qid in queries if qid not in done]
    batches = [remaining[i : i + SEARCH_BATCH] for i in range(0, len(remaining), SEARCH_BATCH)]
    shared = _one_bar_each(progress, len(remaining) / len(batches[0])) if batches else progress
    seconds = 0.0
    failure = None
    for batch in batches:
        start = time.perf_counter()
        try:
            results = target.search({qid: queries[qid] for qid in batch}, depth, shared)
        except TargetFailed as exc:
            results, failure = exc.finished, str(exc)
        seconds += time.perf_counter() - start
        checkpoint.add(results)
        done.update((r.qid, r) for r in results)
        if failure:
            break
    return [done[qid] for qid in queries if qid in done], seconds, failure


def _one_bar_each(progress: ProgressFactory, scale: float) -> ProgressFactory:
    """The batches of one search share one bar per description, sized for the whole search."""
    bars: dict[str, Callable[[int], None]] = {}

    def factory(description: str, total: int | None) -> Callable[[int], None]:
        if description not in bars:
            bars[description] = progress(description, None if total is None else round(total * scale))
        return bars[description]

    return factory


def _generate(config, target, name, dataset, results, progress, judge, described) -> dict[str, Generated]:
    """Generated answers for the answered questions (`--generate`); their cost joins each query's cost."""
    if config.generate is None:
        return {}
    asked = {r.qid: dataset.queries[r.qid] for r in results if r.qid in judge.sets}
    passages = {
        r.qid: r.passages if r.passages is not None else [dataset.corpus[h.doc_id].full_text for h in r.hits]
        for r in results
    }
    chat = ChatGenerator(config.generate) if config.generate.kind == "chat" else None
    try:
        generated = generate_answers(config.generate, target, name, asked, passages, progress, chat)
    finally:
        if chat is not None:
            chat.close()
    described["generation"] = chat.describe() if chat else {"kind": "native", **config.generate.params}
    for r in results:
        if r.qid in generated:
            r.cost.update(generated[r.qid].cost)
    judge.generated[name] = {qid: g.text for qid, g in generated.items()}
    return generated


def relevance_source(dataset: Dataset, measure: Measure) -> str:
    """Generated-answer scores (`generated`) and answer measures use the answers; ranking measures the qrels,
    or answer-derived judgments without qrels."""
    if measure.generated:
        return "generated"
    return "answers" if measure.answer_based or not dataset.qrels else "qrels"


def _label(dataset: Dataset, measure: Measure) -> str:
    """Ranking measures on answer-derived judgments say so wherever they are shown."""
    derived = not measure.answer_based and relevance_source(dataset, measure) == "answers"
    return f"{measure.label} (answers)" if derived else measure.label


def _returned_texts(
    dataset: Dataset, results: list[QueryResult], run: Run, config: QualityConfig
) -> dict[str, list[str]]:
    """Per answered query, the texts the target returned down to the deepest answer cut-off: its own
    passages (chunks) where it returned them, else the ranked documents' texts in trec_eval's order
    (so `evaluate` on the run file gives the same figures)."""
    depth = max((m.cutoff or 0 for m in config.measures if m.answer_based), default=0)
    answered = [r for r in results if r.qid in dataset.answers]
    if not depth or not answered:
        return {}
    texts = ranked_texts(dataset, run, [r.qid for r in answered if r.passages is None], depth)
    texts.update({r.qid: r.passages[:depth] for r in answered if r.passages is not None})
    return texts


def _per_query(
    dataset: Dataset, name: str, run: Run, config: QualityConfig, judge: AnswerJudge
) -> dict[str, dict[str, float]]:
    """measure -> qid -> value for one target, each measure on its relevance source (trec_eval -c semantics:
    every judged or answered query counts; a failed or empty one scores zero)."""
    ranking = [m for m in config.measures if not m.answer_based]
    values = evaluate(dataset.qrels or dataset.answer_qrels(), run, ranking, complete=True).per_query if ranking else {}
    for m in config.measures:
        if m.answer_based:
            values[m.trec_name] = judge.scores(name, m.family, m.cutoff)
    return values

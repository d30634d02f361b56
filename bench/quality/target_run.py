"""One quality target's run: prepare, search in checkpointed batches, generate answers, score, write its records."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.core.interrupt import uninterruptible
from bench.core.progress import ProgressFactory
from bench.datasets.answers import AnswerJudge
from bench.datasets.model import Dataset
from bench.quality.checkpoint import Checkpoint
from bench.quality.config import QualityConfig, Scoring
from bench.quality.evaluation import ranked_texts
from bench.quality.generation import ChatGenerator, Generated, GenerateKind, GenerationInfo, generate_answers
from bench.quality.metrics import evaluate
from bench.quality.runs import Run, run_from_results, write_run
from bench.quality.scoring import metric_records, short_rankings
from bench.quality.target_records import query_records, target_record
from bench.results.lifecycle import OpenRun
from bench.results.outdir import checkpoint_file, run_file
from bench.results.schema import (
    MetricRecord,
    TargetStatus,
)
from bench.targets.base import QueryResult, Target, TargetFailed, TargetSpec
from bench.targets.embed_cost import Metered

SEARCH_BATCH = 16  # queries per search call: each finished batch is kept (bench/quality/checkpoint.py)


def run_target(spec: TargetSpec, target: Target, scoring: Scoring, out_dir: Path, run: OpenRun) -> list[MetricRecord]:
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
        # before generating: what the ranking met (a meter counts its calls); the record's config, a JSON object
        described = dict(target.describe())
        generated, generation = _generate(config, target, spec.name, dataset, results, run.progress, judge)
        if generation is not None:
            described = {**described, "generation": generation}
        blocks = {p: b.copy() for p, b in target.cost_blocks().items()} if isinstance(target, Metered) else {}
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
        short_rankings(
            config.measures, max((len(r.hits) for r in results if r.hits), default=None), len(dataset.corpus)
        ),
    )
    record = target_record(spec, described, results, index_s, search_s, replaced, generated, blocks)
    if failure:
        record.status, record.error = TargetStatus.FAILED, failure
    with uninterruptible():  # run file and records: all of them or none
        write_run(out_dir / record.run_file, query_run, tag=spec.name)
        run.write(record, *query_records(spec.name, results, generated), *metrics, *extra)
        checkpoint.remove()
    return metrics


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


def _generate(
    config: QualityConfig,
    target: Target,
    name: str,
    dataset: Dataset,
    results: list[QueryResult],
    progress: ProgressFactory,
    judge: AnswerJudge,
) -> tuple[dict[str, Generated], GenerationInfo | None]:
    """Generated answers for the answered questions (`--generate`), their cost joined to each query's cost, and
    the generator's description for the target's record (None: nothing generated)."""
    if config.generate is None:
        return {}, None
    asked = {r.qid: dataset.queries[r.qid] for r in results if r.qid in judge.sets}
    passages = {
        r.qid: r.passages if r.passages is not None else [dataset.corpus[h.doc_id].full_text for h in r.hits]
        for r in results
    }
    chat = ChatGenerator(config.generate) if config.generate.kind == GenerateKind.CHAT else None
    try:
        generated = generate_answers(config.generate, target, name, asked, passages, progress, chat)
    finally:
        if chat is not None:
            chat.close()
    generation: GenerationInfo = chat.describe() if chat else {"kind": "native", **config.generate.params}
    for r in results:
        if r.qid in generated:
            r.cost.update(generated[r.qid].cost)
    judge.generated[name] = {qid: g.text for qid, g in generated.items()}
    return generated, generation


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

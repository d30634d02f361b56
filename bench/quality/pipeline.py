"""`quality`: rank every judged query with every target, score with trec_eval semantics, compare, report.

Each target runs prepare → search → close (close also on error or Ctrl-C, so server settings are
restored). Its run file and records are written the moment it finishes; a failure or interruption
later keeps everything finished, and the report covers what finished.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

import bench
from bench.datasets.model import Dataset
from bench.errors import UserError
from bench.quality.answers import AnswerJudge
from bench.quality.generation import ChatGenerator, GenerateSpec, generate_answers
from bench.quality.metrics import Measure, evaluate
from bench.quality.runs import Run, run_from_results, trec_order, write_run
from bench.quality.significance import bootstrap_ci, compare_pairs, seeded_generator
from bench.results.schema import (
    EndRecord, MetricRecord, QueryRecord, RunHeader, TargetRecord,
)
from bench.results.store import ResultsWriter
from bench.targets.base import ProgressFactory, QueryResult, TargetSpec
from bench.targets.registry import TargetOptions, build_target

RESULTS_FILE = "results.jsonl"
PERMUTATIONS = 10_000
BOOTSTRAP = 10_000


@dataclass
class QualityConfig:
    measures: list[Measure]
    depth: int = 100
    seed: int = 0
    generate: GenerateSpec | None = None  # answer every question from what each target retrieved


def safe_filename(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._+-]+", "_", name).strip("_") or "target"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _percentiles(values_ms: list[float]) -> dict[str, float]:
    if not values_ms:
        return {}
    arr = np.array(values_ms)
    return {"p50": float(np.percentile(arr, 50)), "p90": float(np.percentile(arr, 90)),
            "p99": float(np.percentile(arr, 99)), "mean": float(arr.mean()), "max": float(arr.max())}


def _target_record(spec: TargetSpec, name: str, config: dict, results: list[QueryResult], index_s: float,
                   search_s: float, replaced: bool, run_file: str) -> TargetRecord:
    cost_keys = sorted({k for r in results for k in r.cost})
    warnings: dict[str, int] = {}
    for r in results:
        for w in set(r.warnings):
            warnings[w] = warnings.get(w, 0) + 1
    return TargetRecord(
        name=name, spec=spec.public_text, status="ok", config=config, index_seconds=index_s, search_seconds=search_s,
        queries=len(results), errors=sum(1 for r in results if r.error),
        empty=sum(1 for r in results if not r.hits and not r.error),
        latency_ms=_percentiles([r.latency_s * 1000 for r in results if not r.error]),
        cost={k: float(np.mean([r.cost.get(k, 0.0) for r in results])) for k in cost_keys},
        warnings=warnings, scores_replaced=replaced, run_file=run_file,
    )


def run_quality(
    dataset: Dataset,
    specs: list[TargetSpec],
    options: TargetOptions,
    config: QualityConfig,
    out_dir: Path,
    progress: ProgressFactory,
    command: str = "quality",
) -> Path:
    """Run every target and write results, run files and per-query CSV into `out_dir`; returns the results path."""
    names = [s.name for s in specs]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise UserError(f"targets named twice: {', '.join(sorted(duplicates))} (give each its own NAME=SPEC)")
    queries = {qid: dataset.queries[qid] for qid in dataset.evaluated_queries()}
    if not dataset.corpus:
        raise UserError(f"{dataset.source}: no corpus to rank (quality needs one; evaluate needs only a run)")
    (out_dir / "runs").mkdir(parents=True, exist_ok=True)
    writer = ResultsWriter(out_dir / RESULTS_FILE)
    writer.write(RunHeader(
        command=command, created=_now(), ragbench_version=bench.__version__,
        dataset={"name": dataset.name, "source": dataset.source, "format": dataset.format, "split": dataset.split,
                 "fingerprint": dataset.fingerprint(), "documents": len(dataset.corpus), "queries": len(queries),
                 "notes": dataset.notes},
        measures=[m.trec_name for m in config.measures],
        measure_labels={m.trec_name: _label(dataset, m) for m in config.measures},
        measure_relevance={m.trec_name: relevance_source(dataset, m) for m in config.measures},
        depth=config.depth, seed=config.seed, targets=names,
    ))
    runs: dict[str, Run] = {}
    judge = AnswerJudge(dataset.answers)
    try:
        for spec in specs:
            runs[spec.name] = _run_target(spec, options, dataset, queries, config, out_dir, writer, progress, judge)
        _score(dataset, runs, config, writer, judge)
        writer.write(EndRecord(status="complete", finished=_now()))
    except KeyboardInterrupt:
        _finish_partial(dataset, runs, config, writer, judge, "interrupted", "interrupted by the user")
        raise
    except UserError as exc:
        _finish_partial(dataset, runs, config, writer, judge, "failed", str(exc))
        raise
    finally:
        writer.close()
    return out_dir / RESULTS_FILE


def _finish_partial(dataset, runs, config, writer, judge, status: str, error: str) -> None:
    """Score what finished, so the results file and report stay useful after a failure."""
    if runs:
        _score(dataset, runs, config, writer, judge)
    writer.write(EndRecord(status=status, finished=_now(), error=error))


def _run_target(spec, options, dataset, queries, config, out_dir, writer, progress, judge) -> Run:
    target = build_target(spec, options)
    try:
        start = time.perf_counter()
        target.prepare(dataset, progress)
        index_s = time.perf_counter() - start
        start = time.perf_counter()
        results = target.search(queries, config.depth, progress)
        search_s = time.perf_counter() - start
        described = target.describe()
        generated = _generate(config, target, spec.name, dataset, results, progress, judge, described)
    finally:
        target.close()
    run, replaced = run_from_results(results)
    judge.judge(spec.name, _returned_texts(dataset, results, run, config))
    run_file = f"runs/{safe_filename(spec.name)}.trec"
    write_run(out_dir / run_file, run, tag=spec.name)
    writer.write(
        _target_record(spec, spec.name, described, results, index_s, search_s, replaced, run_file),
        *[QueryRecord(target=spec.name, qid=r.qid, latency_ms=r.latency_s * 1000, hits=len(r.hits), error=r.error,
                      cost=r.cost, warnings=r.warnings, answer=generated[r.qid].text if r.qid in generated else None,
                      answer_error=generated[r.qid].error if r.qid in generated else None) for r in results],
    )
    return run


def _generate(config, target, name, dataset, results, progress, judge, described) -> dict:
    """Generated answers for the answered questions (`--generate`); their cost joins each query's cost."""
    if config.generate is None:
        return {}
    asked = {r.qid: dataset.queries[r.qid] for r in results if r.qid in judge.sets}
    passages = {r.qid: r.passages if r.passages is not None else [dataset.corpus[h.doc_id].full_text for h in r.hits]
                for r in results}
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


def _returned_texts(dataset: Dataset, results: list[QueryResult], run: Run, config: QualityConfig) -> dict[str, list[str]]:
    """Per answered query, the texts the target returned down to the deepest answer cut-off: its own
    passages (chunks) where it returned them, else the ranked documents' texts in trec_eval's order."""
    depth = max((m.cutoff or 0 for m in config.measures if m.answer_based), default=0)
    if not depth or not dataset.answers:
        return {}
    return {r.qid: (r.passages[:depth] if r.passages is not None
                    else [dataset.corpus[d].text for d, _ in trec_order(run.get(r.qid, {}))[:depth]])
            for r in results if r.qid in dataset.answers}


def _per_query(dataset: Dataset, name: str, run: Run, config: QualityConfig, judge: AnswerJudge) -> dict[str, dict[str, float]]:
    """measure -> qid -> value for one target, each measure on its relevance source (trec_eval -c semantics:
    every judged or answered query counts; a failed or empty one scores zero)."""
    ranking = [m for m in config.measures if not m.answer_based]
    values = evaluate(dataset.qrels or dataset.answer_qrels(), run, ranking, complete=True).per_query if ranking else {}
    for m in config.measures:
        if m.answer_based:
            values[m.trec_name] = judge.scores(name, m.family, m.cutoff)
    return values


def _score(dataset: Dataset, runs: dict[str, Run], config: QualityConfig, writer: ResultsWriter, judge: AnswerJudge) -> None:
    """Metrics per target (every judged query counts; a failed or empty one scores zero: trec_eval -c)."""
    per_measure: dict[str, dict[str, dict[str, float]]] = {m.trec_name: {} for m in config.measures}
    for name, run in runs.items():
        per_query = _per_query(dataset, name, run, config, judge)
        for m in config.measures:
            values = per_query[m.trec_name]
            low, high = bootstrap_ci(np.array(list(values.values())), BOOTSTRAP, seeded_generator(config.seed, name, m.trec_name))
            writer.write(MetricRecord(target=name, measure=m.trec_name, label=_label(dataset, m),
                                      mean=sum(values.values()) / len(values), ci_low=low, ci_high=high,
                                      queries=len(values), per_query=values, relevance=relevance_source(dataset, m)))
            per_measure[m.trec_name][name] = values
    for m in config.measures:
        writer.write(*compare_pairs(per_measure[m.trec_name], m.trec_name, config.seed, PERMUTATIONS, BOOTSTRAP))

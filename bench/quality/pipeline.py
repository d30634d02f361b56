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

from pathlib import Path

import bench
from bench.core.errors import UserError
from bench.datasets.answers import AnswerJudge
from bench.datasets.model import Dataset, Qrels
from bench.quality.config import QualityConfig, Scoring
from bench.quality.metrics import Measure
from bench.quality.rerank_pairs import rerank_pairs
from bench.quality.resume import finished_targets
from bench.quality.scoring import comparisons
from bench.quality.target_run import run_target
from bench.results.frame import now_iso
from bench.results.lifecycle import Output, open_run
from bench.results.outdir import QRELS_FILE
from bench.results.schema import (
    MetricRecord,
    Relevance,
    RunCommand,
    RunHeader,
)
from bench.results.store import Results, read_results
from bench.targets.base import Target, TargetOptions, TargetSpec
from bench.targets.registry import build_target


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


def run_quality(
    dataset: Dataset,
    specs: list[TargetSpec],
    options: TargetOptions,
    config: QualityConfig,
    output: Output,
    command: RunCommand = RunCommand.QUALITY,
) -> Results:
    """Run every target and write results, qrels and run files into `output` (bench.results.lifecycle);
    returns the results file read back (once: the report's reading where `output` has one). Nothing is written
    before every check passed. `output.resume`: the folder holds an interrupted run of the same dataset, targets
    and settings; its finished targets and the finished queries of the others are kept, and only the rest is
    run."""
    names = [s.name for s in specs]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise UserError(f"targets named twice: {', '.join(sorted(duplicates))} (give each its own NAME=SPEC)")
    if not dataset.corpus:
        raise UserError(f"{dataset.source}: no corpus to rank (quality needs one; evaluate needs only a run)")
    scoring = Scoring(
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
        with open_run(output, header, finished_targets) as run:
            metrics = [r for r in run.kept if isinstance(r, MetricRecord)]
            reranked = rerank_pairs({s.name: s for s in specs})
            run.closing = lambda status: comparisons(
                metrics, [m.trec_name for m in config.measures], config.seed, reranked
            )
            if not run.resumed:
                _write_qrels(output.folder / QRELS_FILE, _judgments(dataset, config))
            finished = {m.target for m in metrics}
            for spec, target in zip(specs, targets):
                waiting.remove(target)
                if spec.name in finished:
                    target.close()
                    continue
                metrics += run_target(spec, target, scoring, output.folder, run)
    finally:
        for target in waiting:  # release their clients
            target.close()
    return run.read_back if run.read_back is not None else read_results(output.results)


def _judgments(dataset: Dataset, config: QualityConfig) -> Qrels:
    """What the ranking measures are scored against: the qrels, or judgments derived from the answers (a pass
    over the corpus: only when a ranking measure needs them)."""
    ranking = any(not m.answer_based for m in config.measures)
    return dataset.qrels or (dataset.answer_qrels() if ranking else {})


def _header(scoring: Scoring, names: list[str], command: RunCommand) -> RunHeader:
    dataset, config = scoring.dataset, scoring.config
    return RunHeader(
        command=command,
        created=now_iso(),
        ragbench_version=bench.__version__,
        dataset=dataset.header(len(dataset.evaluated_queries())),
        measures=[m.trec_name for m in config.measures],
        measure_labels=scoring.labels,
        measure_relevance=scoring.relevance,
        depth=config.depth,
        seed=config.seed,
        targets=names,
        hourly_usd=config.hourly_usd,
    )


def relevance_source(dataset: Dataset, measure: Measure) -> Relevance:
    """Generated-answer scores (`generated`) and answer measures use the answers; ranking measures the qrels,
    or answer-derived judgments without qrels."""
    if measure.generated:
        return Relevance.GENERATED
    return Relevance.ANSWERS if measure.answer_based or not dataset.qrels else Relevance.QRELS


def _label(dataset: Dataset, measure: Measure) -> str:
    """Ranking measures on answer-derived judgments say so wherever they are shown."""
    derived = not measure.answer_based and relevance_source(dataset, measure) == Relevance.ANSWERS
    return f"{measure.label} (answers)" if derived else measure.label

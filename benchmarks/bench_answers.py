"""What scoring answers costs `quality` on a 3,000-question set; prints figures (nothing is asserted).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_answers.py [--shared ../shared] [--repeats 3]

The set: xquad-en's 1,190 questions (one answer each) taken three times over under new ids, cut to 3,000,
against xquad-en's 240 paragraphs plus the bundled SciFact's 5,183 abstracts as distractors (5,423 documents).
bm25 ranks them (depth 100). Three runs of `quality` (in process, no progress bars), each repeated:
- qrels:   nDCG@10, R@100, MRR@10, MAP@100 (the qrels defaults);
- +qrels4: the same plus four more qrels measures (P@5, Success@20, R@20, MRR@20): the cost of 4 more measures;
- +answer: the same plus Answer@1, Answer@5, Answer@20, AnswerMRR@10.
It also times the answer work alone inside the +answer run (gathering the texts, DPR matching, the per-query
values) and the answer-derived judgments a set without qrels needs (DPR matching of every question on the corpus).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from bench.datasets import answers, load_dataset
from bench.datasets.model import Dataset, Document
from bench.quality import pipeline
from bench.quality.config import QualityConfig
from bench.quality.metrics import parse_measure
from bench.quality.pipeline import run_quality
from bench.results.lifecycle import Output
from bench.targets.registry import TargetOptions, parse_target_spec

REPO = Path(__file__).resolve().parents[1]
QUESTIONS = 3000

QRELS = ["nDCG@10", "R@100", "MRR@10", "MAP@100"]
VARIANTS = {
    "qrels": QRELS,
    "+qrels4": [*QRELS, "P@5", "Success@20", "R@20", "MRR@20"],
    "+answer": [*QRELS, "Answer@1", "Answer@5", "Answer@20", "AnswerMRR@10"],
}


def build_set(shared: Path) -> Dataset:
    xquad = load_dataset(shared / "datasets" / "xquad-en")
    scifact = load_dataset(
        REPO.parent / "shared" / "datasets" / "scifact-train", "train"
    )  # reference data beside the clone
    corpus = dict(xquad.corpus)
    corpus.update({f"sf-{d}": Document(f"sf-{d}", doc.title, doc.text) for d, doc in scifact.corpus.items()})
    queries, qrels, refs = {}, {}, {}
    for copy in range(3):
        for qid in xquad.queries:
            if len(queries) == QUESTIONS:
                break
            new = f"{qid}#{copy}"
            queries[new], qrels[new], refs[new] = xquad.queries[qid], xquad.qrels[qid], xquad.answers[qid]
    return Dataset(
        name="xquad-x3+scifact",
        corpus=corpus,
        queries=queries,
        qrels=qrels,
        source="bench",
        format="beir",
        answers=refs,
    )


class Stopwatch:
    """Adds up the wall time spent in wrapped functions."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def wrap(self, owner, name: str) -> None:
        original = getattr(owner, name)

        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start

        setattr(owner, name, timed)


def run_once(dataset: Dataset, measures: list[str]) -> float:
    config = QualityConfig([parse_measure(m) for m in measures], depth=100, seed=0)
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        run_quality(dataset, [parse_target_spec("bm25")], TargetOptions(), config, Output(Path(out)))
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    dataset = build_set(args.shared)
    print(f"set: {len(dataset.queries)} questions, {len(dataset.corpus)} documents; target bm25, depth 100")

    watch = Stopwatch()  # the answer work: texts of each ranking, DPR matching, per-query values
    watch.wrap(pipeline, "_returned_texts")
    watch.wrap(answers.AnswerJudge, "judge")
    watch.wrap(answers.AnswerJudge, "scores")

    times: dict[str, list[float]] = {name: [] for name in VARIANTS}
    answer_seconds: list[float] = []
    for _ in range(args.repeats):  # interleaved, so a busy spell on the machine hits every variant alike
        for name, measures in VARIANTS.items():
            watch.seconds = 0.0
            times[name].append(run_once(dataset, measures))
            if name == "+answer":
                answer_seconds.append(watch.seconds)
    base = statistics.median(times["qrels"])
    for name, values in times.items():
        median = statistics.median(values)
        print(
            f"quality {name:8s} median {median:6.2f} s over {len(values)} runs "
            f"({', '.join(f'{v:.2f}' for v in values)})"
            f"  vs qrels {100 * (median - base) / base:+5.1f}%"
        )
    answer_work = statistics.median(answer_seconds)
    plus_answer = statistics.median(times["+answer"])
    print(
        f"answer work inside +answer: median {answer_work:.3f} s = {100 * answer_work / plus_answer:.1f}% of that run "
        f"(target: answers add <= 10% to quality's own time)"
    )

    start = time.perf_counter()
    derived = answers.derived_qrels(dataset.answers, {d: doc.text for d, doc in dataset.corpus.items()})
    print(
        f"answer-derived judgments (a set without qrels): {time.perf_counter() - start:.3f} s for "
        f"{len(dataset.answers)} questions x {len(dataset.corpus)} documents "
        f"({sum(len(v) for v in derived.values())} relevant pairs)"
    )


if __name__ == "__main__":
    main()

"""Results files written with the real writer and records, from per-query scores a test chooses; a suite of one
quality job; and a real target made worse in a known way."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bench.results.schema import MetricRecord, QueryRecord
from bench.results.schema.load import InterleavedVerdict
from bench.results.writer import ResultsWriter
from bench.targets.base import QueryResult
from tests.harness.beir import write_beir
from tests.harness.records import end_record, run_header, target_record

LABELS = {"ndcg_cut_10": "nDCG@10", "recall_100": "R@100"}

ONE_JOB_SUITE = """
[datasets.d]
path = "data"

[targets]
bm25 = "bm25"

[[quality]]
dataset = "d"
measures = ["P@2"]
depth = 5
"""


def write_results(
    directory: Path,
    scores: dict[str, dict[str, dict[str, float]]],
    fingerprint: str = "f1",
    latency_ms: float = 10.0,
    status: str = "complete",
    target_fields: dict[str, dict] | None = None,
) -> Path:
    """`scores`: target -> measure (trec name) -> qid -> value; `target_fields`: target -> TargetRecord fields
    that replace the defaults (latency_ms, cost_blocks). Returns the results file."""
    measures = list(next(iter(scores.values()))) if scores else ["ndcg_cut_10"]
    qids = sorted({q for per_measure in scores.values() for values in per_measure.values() for q in values})
    writer = ResultsWriter(directory / "results.jsonl")
    writer.write(
        run_header(
            dataset={"name": "synthetic", "fingerprint": fingerprint, "documents": 100, "queries": len(qids)},
            measures=measures,
            measure_labels={m: LABELS.get(m, m) for m in measures},
            depth=100,
            seed=0,
            targets=list(scores),
        )
    )
    for target in scores:
        writer.write(
            target_record(target, **{"queries": len(qids), **(target_fields or {}).get(target, {})}),
            *[QueryRecord(target=target, qid=q, latency_ms=latency_ms + i % 7, hits=10) for i, q in enumerate(qids)],
        )
    for target, per_measure in scores.items():
        for measure, values in per_measure.items():
            writer.write(
                MetricRecord(
                    target=target,
                    measure=measure,
                    label=LABELS.get(measure, measure),
                    mean=float(np.mean(list(values.values()))),
                    ci_low=0.0,
                    ci_high=1.0,
                    queries=len(values),
                    per_query=values,
                )
            )
    writer.write(end_record(status))
    writer.close()
    return directory / "results.jsonl"


def write_suite(folder: Path, gate: str = "") -> Path:
    """A suite of one quality job (bm25 on a two-document set it writes under `folder`), then `gate`; its file."""
    write_beir(folder / "data", {"d1": "cats", "d2": "dogs"}, {"q1": "cats"}, [("q1", "d1", 1)])
    suite = folder / "suite.toml"
    suite.write_text(ONE_JOB_SUITE + gate)
    return suite


def per_query(values) -> dict[str, float]:
    return {f"q{i:04d}": float(v) for i, v in enumerate(values)}


def noisy_scores(n: int, seed: int, shift: float = 0.0) -> dict[str, float]:
    """Per-query scores in [0, 1] like nDCG's: a seeded base, optionally shifted down on every query."""
    rng = np.random.default_rng(seed)
    return per_query(np.clip(rng.beta(2, 2, size=n) - shift, 0.0, 1.0))


PUSHED_OUT = 0.10


class RelevantPushedOut:
    """A real bm25 whose rankings lose every relevant document for a seeded 10% of the queries."""

    def __init__(self, inner, share: float, seed: int):
        self.inner, self.share, self.seed = inner, share, seed
        self.name = inner.name
        self.spoiled: set[str] = set()

    def prepare(self, dataset, progress):
        self._qrels = dataset.qrels
        self.inner.prepare(dataset, progress)

    def search(self, queries, depth, progress):
        qids = sorted(queries)
        rng = np.random.default_rng(self.seed)
        self.spoiled = set(rng.choice(qids, size=round(self.share * len(qids)), replace=False).tolist())
        results = self.inner.search(queries, depth, progress)
        return [
            QueryResult(r.qid, [h for h in r.hits if self._qrels.get(r.qid, {}).get(h.doc_id, 0) <= 0], r.latency_s)
            if r.qid in self.spoiled
            else r
            for r in results
        ]

    def describe(self):
        return {**self.inner.describe(), "spoiled_queries": len(self.spoiled)}

    def close(self):
        self.inner.close()


def load_point(
    endpoint: str = "tei",
    batch: int = 8,
    concurrency: int = 4,
    texts_per_s: float = 1000.0,
    p99_ms: float = 20.0,
    saturated: bool = False,
    latencies_us: list[int] | None = None,
    sent: int = 100,
    errors: dict[str, int] | None = None,
    client_extra: dict | None = None,
    **extra,
):
    """A closed-loop `load_point` record of `sent` requests, `errors` of them failed; with `latencies_us`, its
    service histogram holds exactly those."""
    from bench.load import histograms
    from bench.results.schema import (
        ClientView,
        Latencies,
        LatencySummary,
        LoadPointRecord,
        LoadRequests,
        Loop,
        Op,
        ServerTimes,
        Throughput,
    )

    block = LatencySummary(p99_ms / 2, p99_ms * 0.9, p99_ms, p99_ms, p99_ms, p99_ms / 2, 100)
    encoded = {}
    if latencies_us is not None:
        from array import array

        encoded["service"] = histograms.encode(histograms.from_values(array("d", latencies_us)))
    return LoadPointRecord(
        endpoint=endpoint,
        op=Op.EMBED,
        loop=Loop.CLOSED,
        batch=batch,
        concurrency=concurrency,
        rate=None,
        arrival=None,
        duration_s=10.0,
        requests=LoadRequests(sent=sent, ok=sent - sum((errors or {}).values()), errors=errors or {}),
        throughput=Throughput(texts_per_s / batch, texts_per_s, float("nan"), None),
        latency_ms=Latencies(service=block),
        server_ms=ServerTimes(),
        server_metrics=None,
        client=ClientView(workers=1, cpu_percent=50.0, saturated=saturated, **(client_extra or {})),
        histograms=encoded,
        **extra,
    )


def write_load_results(directory: Path, points: list, created: str | None = None) -> Path:
    """A load run's results file; stamped now unless `created` (as a real run is: two runs are told apart by it)."""
    from bench.results.frame import now_iso

    writer = ResultsWriter(directory / "results.jsonl")
    writer.write(
        run_header(
            "load",
            created=created or now_iso("microseconds"),
            dataset={"name": "load workload"},
            measures=[],
            measure_labels={},
            depth=0,
            seed=0,
            targets=sorted({p.endpoint for p in points if hasattr(p, "endpoint")}),
        ),
        *points,
        end_record(),
    )
    writer.close()
    return directory / "results.jsonl"


def interleaved_run(folder: Path, step: float, noise: float = 0.01, seed: int = 0, rounds: int = 10) -> Path:
    """A run whose machine slows by 30% over the rounds (both sides) and whose B is `step` times A's texts/s
    (its latency 1/step times A's); the record's own verdict is left 'not gated': compare judges afresh."""
    import numpy as np

    from bench.gate import paired
    from bench.results.schema import InterleavedRecord, InterleavedRound

    rng = np.random.default_rng(seed)
    drift = np.linspace(1.0, 0.7, rounds)
    a = 1000 * drift * np.exp(rng.normal(0, noise, rounds))
    b = 1000 * step * drift * np.exp(rng.normal(0, noise, rounds))
    made = [
        InterleavedRound(i + 1, "ab"[i % 2], x, y, 8000 / x, 8000 / y, 16000 / x, 16000 / y, y / x, x / y, x / y)
        for i, (x, y) in enumerate(zip(a, b, strict=True))
    ]
    figures, _ = paired.judged_figures(made, {})
    record = InterleavedRecord(
        "a", "b", "closed batch 8 conc 4", "service", made, figures, InterleavedVerdict.NOT_GATED
    )
    folder.mkdir()
    points = [load_point("a", texts_per_s=float(a.mean())), load_point("b", texts_per_s=float(b.mean()))]
    return write_load_results(folder, [*points, record])

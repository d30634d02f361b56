"""The ladder: rungs parsed, the corpus at each rung, and climbing it with a target that notes what it was given."""

from __future__ import annotations

from typing import Any

import pytest

from bench.core.errors import ServerError, UserError
from bench.core.progress import ProgressFactory
from bench.datasets.distractors import Distractors, parse_distractors
from bench.datasets.model import Dataset, DatasetFormat, Document
from bench.grow.increment import Grown, batches
from bench.grow.ladder import Corpora, parse_rungs
from bench.grow.run import Climb, climb, error_kind
from bench.quality.metrics import parse_measure
from bench.results.schema import GrowRungRecord, RungStatus
from bench.targets.base import Hit, QueryResult, TargetSpec


def test_rungs_take_k_and_m_and_must_increase():
    assert parse_rungs("500, 2.5k,1M") == [500, 2500, 1_000_000]
    for bad, said in (("1k,1k", "must increase"), ("10k,1k", "must increase"), ("1.5,3", "whole size"), ("0", "1 to")):
        with pytest.raises(UserError, match=said):
            parse_rungs(bad)


@pytest.mark.parametrize("bad", ["750,99999999999999999999999M", "750,101M", "1" + "0" * 400, "9" * 5000 + "M"])
def test_a_rung_past_the_largest_is_one_line(bad):
    """A size no host could grow (or a typo's run of digits) is refused, never made: it made every distractor up
    front before (674 MB in 60 s for 50M, and 99999999999999999999999M accepted)."""
    with pytest.raises(UserError, match="is not a whole size from 1 to 100,000,000") as raised:
        parse_rungs(bad)
    assert len(str(raised.value)) < 240  # the option and the item cut short, never 5,000 digits


def _dataset() -> Dataset:
    corpus = {f"d{i}": Document(f"d{i}", "", f"alpha word{i} beta") for i in range(4)}
    queries = {f"q{i}": f"word{i}" for i in range(4)}
    return Dataset("toy", corpus, queries, {q: {f"d{q[1:]}": 1} for q in queries}, "toy", DatasetFormat.BEIR)


def test_each_rung_holds_the_dataset_then_the_first_distractors():
    dataset = _dataset()
    corpora = Corpora(dataset, Distractors(parse_distractors("synthetic:0"), dataset), [4, 10, 25])
    sizes = [len(corpora.prefix(rung.size).corpus) for rung in corpora.rungs]
    assert sizes == [4, 10, 25]
    small, large = (set(corpora.prefix(r.size).corpus) for r in (corpora.rungs[1], corpora.rungs[2]))
    assert set(dataset.corpus) <= small <= large


def test_distractors_are_made_when_a_rung_first_needs_them():
    """The first rung is measured before the last one's distractors are made (all were made up front before)."""
    dataset = _dataset()
    corpora = Corpora(dataset, Distractors(parse_distractors("synthetic:0"), dataset), [4, 10, 1_000])
    assert corpora.capacity == 1_000 and len(corpora._pool) == 0
    corpora.prefix(10)
    assert len(corpora._pool) == 6
    lines: list[str] = []
    full = corpora.prefix(1_000, lambda what, total: lambda n: lines.append(f"{what} {n}/{total}"))
    assert len(full.corpus) == 1_000 and lines == ["making distractors 6 to 996 990/990"]
    again = Distractors(parse_distractors("synthetic:0"), dataset).first(996)
    assert [d.doc_id for d in again] == [d.doc_id for d in corpora._pool]  # the same documents, made in slices


def test_a_ladder_whose_distractors_cannot_fit_in_memory_is_refused_before_any_is_made(monkeypatch):
    dataset = _dataset()
    monkeypatch.setattr("bench.grow.ladder.available_memory", lambda: 10**9)  # a host with 1 GB available
    distractors = Distractors(parse_distractors("synthetic:0"), dataset)
    with pytest.raises(UserError, match=r"rung \(50,000,000\) needs ~[\d.]+ GB of distractors in memory, more than"):
        Corpora(dataset, distractors, [750, 50_000_000])
    Corpora(dataset, distractors, [750, 50_000])  # ~40 MB: taken


@pytest.mark.parametrize("text", ["synthetic:²", "synthetic:٣", "synthetic:" + "9" * 5000, "synthetic:-1"])
def test_a_seed_int_cannot_read_is_one_line(text):
    """`isdigit()` is true of ² and ٣, which int() refuses: a traceback before."""
    with pytest.raises(UserError, match="expected synthetic:SEED with SEED a whole number"):
        parse_distractors(text)


def test_a_first_rung_below_the_dataset_or_a_source_too_small_is_refused(tiny):
    dataset = _dataset()
    with pytest.raises(UserError, match=r"first rung \(3\) is below the dataset's own 4 documents"):
        Corpora(dataset, Distractors(parse_distractors("synthetic:0"), dataset), [3, 10])
    with pytest.raises(UserError, match="holds 4 documents; rung 9 needs 5 besides the dataset's own 4"):
        Corpora(dataset, Distractors(parse_distractors(str(tiny)), dataset), [4, 8, 9])


def _grow_in_batches(corpora: Corpora, grown: Grown, rung_index: int, per_doc: int) -> list[int]:
    """The batches a server's base is grown in to one rung, the app cutting `per_doc` chunks from each document."""
    sizes = []
    for docs in batches(corpora, "openwebui", grown, corpora.rungs[rung_index]):
        sizes.append(docs)
        grown.docs, grown.chunks = docs, per_doc * docs
    return sizes


def test_rungs_in_chunks_grow_a_servers_base_in_batches_until_it_holds_the_rungs_chunks(tiny):
    dataset = _dataset()
    corpora = Corpora(dataset, Distractors(parse_distractors("synthetic:0"), dataset), [30, 60, 61], "chunks")
    grown = Grown()
    # the dataset's own 4 documents first (12 chunks), then 18 more chunks at 3 per document
    assert _grow_in_batches(corpora, grown, 0, 3) == [4, 10]
    assert _grow_in_batches(corpora, grown, 1, 3) == [20]
    assert _grow_in_batches(corpora, grown, 2, 3) == [21]  # one document at least
    assert grown.chunks == 63
    small = Corpora(dataset, Distractors(parse_distractors(str(tiny)), dataset), [30], "chunks")  # 4 distractors
    with pytest.raises(UserError, match="ran out at 8 documents \\(16 chunks\\), short of the rung's 30 chunks"):
        _grow_in_batches(small, Grown(), 0, 2)


def test_rungs_in_chunks_count_a_document_per_chunk_in_a_local_engine():
    target = Noting("good")
    written = _climb([(TargetSpec("bm25", "bm25", given_name="good"), target)], unit="chunks")
    assert target.prepared == [4, 10, 25]
    assert [(r.size, r.docs, r.chunks, r.unit) for r in written] == [
        (4, 4, 4, "chunks"),
        (10, 10, 10, "chunks"),
        (25, 25, 25, "chunks"),
    ]


class Noting:
    """A target that notes the corpus of each prepare and ranks the queried word's document first."""

    def __init__(self, name: str, fail_at: int | None = None, refuse: str | None = None):
        self.name = name
        self.prepared: list[int] = []
        self.fail_at, self.refuse = fail_at, refuse
        self.corpus: dict[str, Document] = {}

    def prepare(self, dataset: Dataset, progress: ProgressFactory) -> None:
        self.prepared.append(len(dataset.corpus))
        if self.fail_at is not None and len(dataset.corpus) >= self.fail_at:
            raise ServerError("http://127.0.0.1:1", "HTTP 400 from POST /files: too many SQL variables")
        self.corpus = dataset.corpus

    def search(self, queries: dict[str, str], depth: int, progress: ProgressFactory) -> list[QueryResult]:
        if self.refuse:
            return [QueryResult(q, [], None, error=self.refuse) for q in queries]
        results = []
        for qid, text in queries.items():
            found = [d for d, doc in self.corpus.items() if text in doc.text.split()]
            results.append(QueryResult(qid, [Hit(d, 1.0) for d in found[:1]], None))
        return results

    def describe(self) -> dict[str, Any]:
        return {}

    def close(self) -> None:
        pass


def _climb(targets: list[tuple[TargetSpec, Noting]], start: int = 1, unit: str = "docs"):
    dataset = _dataset()
    corpora = Corpora(dataset, Distractors(parse_distractors("synthetic:0"), dataset), [4, 10, 25], unit)
    percentiles = {"p50": 50.0, "p99": 99.0}
    shared = Climb(corpora, dataset.queries, dataset.qrels, [parse_measure("nDCG@10")], percentiles, unit, {}, None)
    written: list[GrowRungRecord] = []
    grown = {spec.name: Grown(corpora.rungs[start - 2].size, None) for spec, _ in targets} if start > 1 else {}
    climb(shared, targets, start, written.append, set(), grown)  # type: ignore[arg-type]
    return written


def test_a_target_that_fails_a_rung_is_recorded_and_the_others_go_on():
    good, bad = Noting("good"), Noting("bad", fail_at=10)
    specs = [TargetSpec("bm25", "bm25", given_name="good"), TargetSpec("openwebui@x", "openwebui", given_name="bad")]
    written = _climb(list(zip(specs, [good, bad])))
    assert good.prepared == [4, 10, 25] and bad.prepared == [4, 10]  # a failed target climbs no further
    by = {(r.target, r.rung): r for r in written}
    assert by[("bad", 2)].status == RungStatus.FAILED and "too many SQL variables" in (by[("bad", 2)].error or "")
    assert by[("bad", 2)].queries == 0 and ("bad", 3) not in by
    assert all(by[("good", i)].status == RungStatus.OK for i in (1, 2, 3))
    assert by[("good", 1)].metrics["nDCG@10"] == pytest.approx(1.0)  # each query's own document, ranked first
    assert by[("good", 3)].ingest_mode == "rebuild" and by[("good", 3)].docs_per_s is not None
    assert by[("bad", 1)].ingest_mode == "incremental"
    assert [by[("good", i)].added for i in (1, 2, 3)] == [4, 6, 15] and by[("bad", 2)].added == 6
    assert by[("good", 3)].chunks == 25 and by[("bad", 1)].chunks is None  # a local engine: a chunk per document


def test_failed_queries_are_counted_by_kind_with_the_servers_message_and_score_zero():
    message = "http://x: HTTP 400 from POST /api/v1/retrieval/query/doc: too many SQL variables"
    written = _climb([(TargetSpec("openwebui@x", "openwebui"), Noting("owui", refuse=message))])
    first = written[0]
    assert first.status == RungStatus.ERRORS and first.errors == {"http-400": 4}
    assert first.error_examples["http-400"] == message
    assert first.metrics["nDCG@10"] == 0.0 and first.latency_ms == {}


def test_a_resumed_climb_starts_at_its_rung_and_says_so():
    target = Noting("good")
    written = _climb([(TargetSpec("bm25", "bm25"), target)], start=2)
    assert target.prepared == [10, 25] and [r.rung for r in written] == [2, 3]
    assert written[0].resumed and not written[1].resumed


@pytest.mark.parametrize(
    ("message", "kind"),
    [("HTTP 500 from GET /x: boom", "http-500"), ("read timed out", "timeout"), ("no chunks", "error")],
)
def test_error_kinds(message, kind):
    assert error_kind(message) == kind

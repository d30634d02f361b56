"""Property: whatever bytes a user's files hold, the loaders and the run-file reader end in a result or in
ONE line `ragbench: error: ...` with exit code 2 — never a traceback, an abort or another exit code."""

from __future__ import annotations

import gzip
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.harness.cli import run_cli_captured

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Files are mostly well formed (so that examples reach deep into parsing and scoring), then spoiled:
# lines of awkward pieces inserted anywhere, a byte-order mark, CRLF ends — or raw bytes only.
QID = st.sampled_from(["q1", "q2", "q3"])
DOCID = st.sampled_from(["d1", "d2", "d3", "d4"])
TEXT = st.lists(st.sampled_from(["alpha", "beta", "gamma", "the", "é"]), min_size=1, max_size=4).map(" ".join)
ID = st.sampled_from(["q1", "d1", "1", "d 1", "", "\u00a0", "é", "q1\t"]) | st.text(max_size=4)
GRADE = st.sampled_from(["0", "1", "2", "-1", "1.0", "1.5", "x", "1e400", "nan", "inf", "99999999999", ""])
SCORE = st.sampled_from(["1.0", "0.5", "0", "-3", "nan", "inf", "x", "1e400"]) | st.floats().map(repr)
JUNK = st.sampled_from(
    [
        "\ufeff",
        "\x00",
        "\r",
        "\t",
        " ",
        "<DOC>",
        "</DOC>",
        "<DOCNO>",
        "</DOCNO>",
        "<top>",
        "</top>",
        "<num>",
        "<title>",
        "{",
        "}",
        "[",
        '"',
        "\\",
        "query-id\tcorpus-id\tscore",
    ]
) | st.text(max_size=6)
JSON_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | ID,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ID, inner, max_size=3),
    max_leaves=6,
)


def record(keys: list[str]) -> st.SearchStrategy[str]:
    """A JSON object over `keys` (some left out, values of any type)."""
    return st.fixed_dictionaries({}, optional=dict.fromkeys(keys, JSON_VALUE)).map(json.dumps)


def columns(*fields: st.SearchStrategy[str], sep: str = " ") -> st.SearchStrategy[str]:
    return st.tuples(*fields).map(sep.join)


def spoiled(good: st.SearchStrategy[list[str]], bad: st.SearchStrategy[str]) -> st.SearchStrategy[bytes]:
    def build(bom: str, lines: list[str], inserts: list[tuple[int, str]], newline: str) -> bytes:
        for position, line in inserts:
            lines.insert(position % (len(lines) + 1), line)
        return (bom + newline.join(lines) + newline).encode("utf-8")

    bad = bad | st.lists(JUNK, max_size=6).map("".join)
    inserts = st.one_of(st.just([]), st.just([]), st.lists(st.tuples(st.integers(0, 9), bad), min_size=1, max_size=2))
    text = st.builds(build, st.sampled_from(["", "\ufeff"]), good, inserts, st.sampled_from(["\n", "\r\n"]))
    return st.one_of(text, text, text, text, st.binary(max_size=64))


def unique(strategy: st.SearchStrategy[tuple], key=lambda t: t[0]) -> st.SearchStrategy[list[tuple]]:
    return st.lists(strategy, min_size=1, max_size=6, unique_by=key)


TREC_QRELS = spoiled(
    unique(st.tuples(QID, DOCID, st.integers(0, 2)), key=lambda t: t[:2]).map(
        lambda ts: [f"{q} 0 {d} {g}" for q, d, g in ts]
    ),
    columns(ID, st.just("0"), ID, GRADE),
)
BEIR_QRELS = spoiled(
    unique(st.tuples(QID, DOCID, st.integers(0, 2)), key=lambda t: t[:2]).map(
        lambda ts: ["query-id\tcorpus-id\tscore", *(f"{q}\t{d}\t{g}" for q, d, g in ts)]
    ),
    columns(ID, ID, GRADE, sep="\t"),
)
RUN = spoiled(
    unique(st.tuples(QID, DOCID, st.floats(allow_nan=False, allow_infinity=False)), key=lambda t: t[:2]).map(
        lambda ts: [f"{q} Q0 {d} 1 {s!r} tag" for q, d, s in ts]
    ),
    columns(ID, st.just("Q0"), ID, st.just("1"), SCORE, st.just("tag")) | columns(ID, ID, ID),
)
CORPUS = spoiled(
    unique(st.tuples(DOCID, TEXT, TEXT)).map(
        lambda ts: [json.dumps({"_id": d, "title": title, "text": text}) for d, title, text in ts]
    ),
    record(["_id", "id", "title", "text"]),
)
QUERIES = spoiled(
    unique(st.tuples(QID, TEXT)).map(lambda ts: [json.dumps({"_id": q, "text": t}) for q, t in ts]),
    record(["_id", "text"]),
)
QA = spoiled(
    unique(
        st.tuples(
            QID,
            TEXT,
            st.dictionaries(DOCID, st.integers(0, 2), min_size=1, max_size=3) | st.lists(DOCID, min_size=1, max_size=3),
        )
    ).map(lambda ts: [json.dumps({"id": q, "query": t, "relevant": r}) for q, t, r in ts]),
    record(["id", "query", "relevant"]),
)
TOPICS = spoiled(unique(st.tuples(QID, TEXT)).map(lambda ts: [f"{q}\t{t}" for q, t in ts]), columns(ID, TEXT, sep="\t"))
TREC_CORPUS = spoiled(
    unique(st.tuples(DOCID, TEXT)).map(lambda ts: [f"<DOC><DOCNO>{d}</DOCNO>{t}</DOC>" for d, t in ts]),
    st.lists(JUNK | ID, max_size=8).map("".join),
)


def assert_result_or_one_line(*args: str) -> None:
    code, _, err = run_cli_captured(*args)
    assert code in (0, 2), (code, err)
    if code == 2:
        assert err.count("\n") == 1 and err.startswith("ragbench: error: "), err


def write(root: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    return root


def maybe_truncated(data: bytes, cut: int) -> bytes:
    """The gzip of `data`, cut short at `cut` bytes when cut > 0."""
    packed = gzip.compress(data)
    return packed[: cut % max(len(packed), 1)] if cut else packed


@pytest.mark.slow  # a fuzz run of many examples
@SETTINGS
@given(qrels=TREC_QRELS | BEIR_QRELS, run=RUN, complete=st.booleans())
def test_evaluate_on_any_qrels_and_run_file(qrels, run, complete):
    with tempfile.TemporaryDirectory() as tmp:
        root = write(Path(tmp), {"qrels": qrels, "run": run})
        assert_result_or_one_line(
            "evaluate",
            str(root / "qrels"),
            str(root / "run"),
            "-m",
            "ndcg_cut.10",
            "-m",
            "MRR@10",
            *(["-c"] if complete else []),
        )


@pytest.mark.slow  # a fuzz run of many examples
@SETTINGS
@given(corpus=CORPUS, queries=QUERIES, qrels=BEIR_QRELS, gz_cut=st.integers(0, 200))
def test_datasets_check_on_any_beir_folder(corpus, queries, qrels, gz_cut):
    with tempfile.TemporaryDirectory() as tmp:
        root = write(Path(tmp), {"queries.jsonl": queries, "qrels/test.tsv": qrels})
        (root / "corpus.jsonl.gz").write_bytes(maybe_truncated(corpus, gz_cut))
        assert_result_or_one_line("datasets", "check", str(root))


@pytest.mark.slow  # a fuzz run of many examples
@SETTINGS
@given(
    qrels=TREC_QRELS,
    topics=TOPICS,
    corpus=TREC_CORPUS | CORPUS,
    corpus_name=st.sampled_from(["corpus.trec", "corpus.tsv", "corpus.jsonl", "corpus.trec.gz"]),
)
def test_datasets_check_on_any_trec_folder(qrels, topics, corpus, corpus_name):
    with tempfile.TemporaryDirectory() as tmp:
        root = write(Path(tmp), {"qrels.txt": qrels, "topics.txt": topics, corpus_name: corpus})
        assert_result_or_one_line("datasets", "check", str(root))


@pytest.mark.slow  # a fuzz run of many examples
@SETTINGS
@given(qa=QA, corpus=CORPUS)
def test_datasets_check_on_any_jsonl_qa(qa, corpus):
    with tempfile.TemporaryDirectory() as tmp:
        root = write(Path(tmp), {"qa.jsonl": qa, "corpus.jsonl": corpus})
        assert_result_or_one_line("datasets", "check", str(root / "qa.jsonl"))

"""Dataset loaders: every format loads; every kind of bad input names file and line; soft problems are counted."""

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.datasets import check_dataset, load_dataset
from bench.errors import InputError
from tests.paths import BUNDLED_SCIFACT, SHARED_DATASETS


def write_beir(root: Path, corpus=None, queries=None, qrels="query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t2\n", split="test"):
    root.mkdir(parents=True, exist_ok=True)
    corpus = corpus if corpus is not None else [{"_id": "d1", "title": "T1", "text": "alpha"}, {"_id": "d2", "text": "beta"}]
    queries = queries if queries is not None else [{"_id": "q1", "text": "alpha?"}, {"_id": "q2", "text": "beta?"}]
    (root / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus) if isinstance(corpus, list) else corpus)
    (root / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in queries) if isinstance(queries, list) else queries)
    (root / "qrels").mkdir(exist_ok=True)
    (root / "qrels" / f"{split}.tsv").write_text(qrels)
    return root


def test_bundled_scifact_counts():
    ds = load_dataset(BUNDLED_SCIFACT, split="train")
    report = check_dataset(ds)
    assert (report.documents, report.queries, report.judgments) == (5183, 809, 919)
    assert ds.corpus["4983"].title.startswith("Microstructural development")


def test_bundled_copy_equals_shared_original():
    assert load_dataset(BUNDLED_SCIFACT, "train").fingerprint() == load_dataset(SHARED_DATASETS / "scifact-train", "train").fingerprint()


def test_beir_gzip_and_grades(tmp_path):
    root = write_beir(tmp_path / "ds")
    with gzip.open(root / "corpus.jsonl.gz", "wt") as fh:
        fh.write((root / "corpus.jsonl").read_text())
    (root / "corpus.jsonl").unlink()
    ds = load_dataset(root)
    assert ds.split == "test" and ds.qrels == {"q1": {"d1": 1}, "q2": {"d2": 2}}
    assert ds.corpus["d1"].full_text == "T1 alpha"


def test_trec_layout_with_sgml_topics_and_corpus(tmp_path):
    root = tmp_path / "trec"
    root.mkdir()
    (root / "qrels.txt").write_text("301 0 DOC-1 1\n301 0 DOC-2 0\n302 0 DOC-2 2\n")
    (root / "topics.txt").write_text("<top>\n<num> Number: 301\n<title> Foreign minorities\n<desc> x\n</top>\n"
                                     "<top>\n<num> Number: 302\n<title> Poliomyelitis\n</top>\n")
    (root / "corpus.trec").write_text("<DOC>\n<DOCNO> DOC-1 </DOCNO>\n<TEXT>first text</TEXT>\n</DOC>\n"
                                      "<DOC><DOCNO>DOC-2</DOCNO><TEXT>second</TEXT></DOC>\n")
    ds = load_dataset(root)
    assert ds.format == "trec"
    assert ds.queries == {"301": "Foreign minorities", "302": "Poliomyelitis"}
    assert ds.corpus["DOC-1"].text == "first text"
    assert ds.qrels["302"] == {"DOC-2": 2}


def test_trec_tsv_topics(tmp_path):
    root = tmp_path / "trec"
    root.mkdir()
    (root / "qrels").write_text("1 0 a 1\n")
    (root / "queries.tsv").write_text("1\tsome query\n")
    assert load_dataset(root).queries == {"1": "some query"}


def test_jsonl_qa(tmp_path):
    (tmp_path / "corpus.jsonl").write_text('{"id": "d1", "text": "x"}\n{"id": "d2", "text": "y"}\n')
    (tmp_path / "qa.jsonl").write_text('{"id": "1", "query": "x?", "relevant": {"d1": 2}}\n'
                                       '{"id": "2", "query": "y?", "relevant": ["d2"]}\n')
    for path in (tmp_path, tmp_path / "qa.jsonl"):
        ds = load_dataset(path)
        assert ds.format == "jsonl" and ds.qrels == {"1": {"d1": 2}, "2": {"d2": 1}}


BAD_BEIR = [
    # (what to break, expected file, expected line, words in the message)
    (dict(corpus='{"_id": "d1", "text": "a"}\n{"_id": "d2", "text": \n'), "corpus.jsonl", 2, "malformed JSON"),
    (dict(corpus='{"_id": "d1", "text": "a"}\n{"_id": "d1", "text": "b"}\n'), "corpus.jsonl", 2, "duplicate document id"),
    (dict(corpus='{"_id": "d1"}\n'), "corpus.jsonl", 1, "missing field 'text'"),
    (dict(queries='{"_id": "q1", "text": "a"}\n{"text": "b"}\n'), "queries.jsonl", 2, "missing field '_id'"),
    (dict(queries='{"_id": "q1", "text": "a"}\n{"_id": "q1", "text": "b"}\n'), "queries.jsonl", 2, "duplicate query id"),
    (dict(qrels="q1\td1\t1\n"), "test.tsv", 1, "missing header"),
    (dict(qrels="query-id\tcorpus-id\tscore\nq1\td1\n"), "test.tsv", 2, "expected 3 tab-separated columns"),
    (dict(qrels="query-id\tcorpus-id\tscore\nq1\td1\tx\n"), "test.tsv", 2, "not a number"),
    (dict(qrels="query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td1\t1\n"), "test.tsv", 3, "duplicate judgment"),
    (dict(qrels="query-id\tcorpus-id\tscore\nq1\td1\t1\nq9\td2\t1\n"), "test.tsv", 3, "unknown query 'q9'"),
    (dict(qrels="query-id\tcorpus-id\tscore\n"), "test.tsv", None, "no judgments"),
    (dict(corpus=""), "corpus.jsonl", None, "empty corpus"),
    (dict(queries=""), "queries.jsonl", None, "no queries"),
    (dict(corpus='{"_id": "d1", "text": "a"}\n["list"]\n'), "corpus.jsonl", 2, "expected a JSON object"),
]


@pytest.mark.parametrize("change, filename, line, words", BAD_BEIR)
def test_bad_beir_input_names_file_and_line(tmp_path, change, filename, line, words):
    root = write_beir(tmp_path / "ds", **change)
    with pytest.raises(InputError) as info:
        load_dataset(root)
    assert Path(info.value.path).name == filename
    assert info.value.line == line
    assert words in info.value.message


def test_non_utf8_bytes(tmp_path):
    root = write_beir(tmp_path / "ds")
    with (root / "queries.jsonl").open("ab") as fh:
        fh.write(b'{"_id": "q3", "text": "caf\xe9"}\n')
    with pytest.raises(InputError) as info:
        load_dataset(root)
    assert (Path(info.value.path).name, info.value.line) == ("queries.jsonl", 3)
    assert "not UTF-8" in info.value.message


def test_missing_split_lists_the_available_ones(tmp_path):
    root = write_beir(tmp_path / "ds", split="train")
    with pytest.raises(InputError, match=r"split 'test' not found \(available: train\)"):
        load_dataset(root, split="test")


def test_bad_trec_qrels_and_topics(tmp_path):
    root = tmp_path / "trec"
    root.mkdir()
    (root / "qrels").write_text("1 0 a 1\n1 0 b\n")
    (root / "topics").write_text("1\tq\n")
    with pytest.raises(InputError, match=r"qrels:2: expected 4 columns"):
        load_dataset(root)
    (root / "qrels").write_text("1 0 a 1\n")
    (root / "topics").write_text("1\tq\n2 no tab\n")
    with pytest.raises(InputError, match=r"topics:2: expected 'qid<TAB>query text'"):
        load_dataset(root)


def test_soft_problems_are_counted_not_fatal(tmp_path):
    root = write_beir(tmp_path / "ds",
                      corpus=[{"_id": "d1", "text": "same"}, {"_id": "d3", "text": "same"}],
                      queries=[{"_id": "q1", "text": "a"}, {"_id": "q2", "text": "b"}, {"_id": "q3", "text": "c"}],
                      qrels="query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t0\n")
    report = check_dataset(load_dataset(root))
    assert report.problems["judged documents missing from the corpus"] == 1
    assert report.problems["documents whose text repeats another's"] == 2
    assert report.problems["judged queries without any relevant document"] == 1
    assert report.problems["queries without judgments (not evaluated)"] == 1


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bench", *args], capture_output=True, text=True)


def test_cli_check_prints_counts(tmp_path):
    result = run_cli("datasets", "check", str(BUNDLED_SCIFACT), "--split", "train")
    assert result.returncode == 0, result.stderr
    assert "documents         5183" in result.stdout
    assert "judgments         919 (919 relevant)" in result.stdout


def test_cli_bad_input_is_one_line_and_exit_2(tmp_path):
    root = write_beir(tmp_path / "ds", corpus='{"_id": "d1", "text": "a"}\n{oops\n')
    result = run_cli("datasets", "check", str(root))
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert result.stderr.strip() == f"ragbench: error: {root / 'corpus.jsonl'}:2: malformed JSON (Expecting property name enclosed in double quotes at column 2)"

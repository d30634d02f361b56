"""Dataset loaders: every format loads; every kind of bad input names file and line; soft problems are counted."""

import gzip
import json
from pathlib import Path

import pytest

from bench.core.errors import InputError
from bench.datasets import check_dataset, load_dataset
from tests.harness.beir import write_beir
from tests.harness.cli import run_cli_process
from tests.paths import scifact


def test_scifact_counts():
    ds = load_dataset(scifact(), split="train")
    report = check_dataset(ds)
    assert (report.documents, report.queries, report.judgments) == (5183, 809, 919)
    assert ds.corpus["4983"].title.startswith("Microstructural development")


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
    (root / "topics.txt").write_text(
        "<top>\n<num> Number: 301\n<title> Foreign minorities\n<desc> x\n</top>\n"
        "<top>\n<num> Number: 302\n<title> Poliomyelitis\n</top>\n"
    )
    (root / "corpus.trec").write_text(
        "<DOC>\n<DOCNO> DOC-1 </DOCNO>\n<TEXT>first text</TEXT>\n</DOC>\n"
        "<DOC><DOCNO>DOC-2</DOCNO><TEXT>second</TEXT></DOC>\n"
    )
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
    (tmp_path / "qa.jsonl").write_text(
        '{"id": "1", "query": "x?", "relevant": {"d1": 2}}\n{"id": "2", "query": "y?", "relevant": ["d2"]}\n'
    )
    for path in (tmp_path, tmp_path / "qa.jsonl"):
        ds = load_dataset(path)
        assert ds.format == "jsonl" and ds.qrels == {"1": {"d1": 2}, "2": {"d2": 1}}


BAD_BEIR = [
    # (what to break, expected file, expected line, words in the message)
    ({"corpus": '{"_id": "d1", "text": "a"}\n{"_id": "d2", "text": \n'}, "corpus.jsonl", 2, "malformed JSON"),
    (
        {"corpus": '{"_id": "d1", "text": "a"}\n{"_id": "d1", "text": "b"}\n'},
        "corpus.jsonl",
        2,
        "duplicate document id",
    ),
    ({"corpus": '{"_id": "d1"}\n'}, "corpus.jsonl", 1, "missing field 'text'"),
    ({"queries": '{"_id": "q1", "text": "a"}\n{"text": "b"}\n'}, "queries.jsonl", 2, "missing field '_id'"),
    (
        {"queries": '{"_id": "q1", "text": "a"}\n{"_id": "q1", "text": "b"}\n'},
        "queries.jsonl",
        2,
        "duplicate query id",
    ),
    ({"qrels": "q1\td1\t1\n"}, "test.tsv", 1, "missing header"),
    ({"qrels": "query-id\tcorpus-id\tscore\nq1\td1\n"}, "test.tsv", 2, "expected 3 tab-separated columns"),
    ({"qrels": "query-id\tcorpus-id\tscore\nq1\td1\tx\n"}, "test.tsv", 2, "not a number"),
    ({"qrels": "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td1\t1\n"}, "test.tsv", 3, "duplicate judgment"),
    ({"qrels": "query-id\tcorpus-id\tscore\nq1\td1\t1\nq9\td2\t1\n"}, "test.tsv", 3, "unknown query 'q9'"),
    ({"qrels": "query-id\tcorpus-id\tscore\n"}, "test.tsv", None, "no judgments"),
    ({"corpus": ""}, "corpus.jsonl", None, "empty corpus"),
    ({"queries": ""}, "queries.jsonl", None, "no queries"),
    ({"corpus": '{"_id": "d1", "text": "a"}\n["list"]\n'}, "corpus.jsonl", 2, "expected a JSON object"),
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
    root = write_beir(
        tmp_path / "ds",
        corpus=[{"_id": "d1", "text": "same"}, {"_id": "d3", "text": "same"}],
        queries=[{"_id": "q1", "text": "a"}, {"_id": "q2", "text": "b"}, {"_id": "q3", "text": "c"}],
        qrels="query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t0\n",
    )
    report = check_dataset(load_dataset(root))
    assert report.problems["judged documents missing from the corpus"] == 1
    assert report.problems["documents whose text repeats another's"] == 2
    assert report.problems["judged queries without any relevant document"] == 1
    assert report.problems["queries without judgments (not evaluated)"] == 1


def test_cli_check_prints_counts(tmp_path):
    result = run_cli_process(["datasets", "check", str(scifact()), "--split", "train"])
    assert result.returncode == 0, result.stderr
    assert "documents         5183" in result.stdout
    assert "judgments         919 (919 relevant)" in result.stdout


def test_cli_bad_input_is_one_line_and_exit_2(tmp_path):
    root = write_beir(tmp_path / "ds", corpus='{"_id": "d1", "text": "a"}\n{oops\n')
    result = run_cli_process(["datasets", "check", str(root)])
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert result.stderr.strip() == (
        f"ragbench: error: {root / 'corpus.jsonl'}:2: "
        f"malformed JSON (Expecting property name enclosed in double quotes at column 2)"
    )


def _trec_root(
    tmp_path: Path, qrels="1 0 a 1\n", topics="1\tsome query\n", corpus: tuple[str, str] | None = None
) -> Path:
    root = tmp_path / "trec"
    root.mkdir(exist_ok=True)
    (root / "qrels").write_text(qrels)
    (root / "topics").write_text(topics)
    if corpus is not None:
        (root / corpus[0]).write_text(corpus[1])
    return root


def test_a_byte_order_mark_is_dropped_in_every_format(tmp_path):
    bom = "\ufeff"
    beir = write_beir(tmp_path / "beir")
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        (beir / name).write_text(bom + (beir / name).read_text(), encoding="utf-8")
    assert load_dataset(beir).fingerprint() == load_dataset(write_beir(tmp_path / "plain")).fingerprint()
    trec = _trec_root(
        tmp_path, qrels=bom + "1 0 a 1\n", topics=bom + "1\tq\n", corpus=("corpus.tsv", bom + "a\ttext\n")
    )
    ds = load_dataset(trec)
    assert (ds.qrels, ds.queries, list(ds.corpus)) == ({"1": {"a": 1}}, {"1": "q"}, ["a"])
    (trec / "corpus.tsv").unlink()
    (trec / "corpus.trec").write_text(bom + "<DOC><DOCNO>a</DOCNO>text</DOC>\n", encoding="utf-8")
    (trec / "topics").write_text(bom + "<top>\n<num> 1\n<title> q\n</top>\n", encoding="utf-8")
    ds = load_dataset(trec)
    assert (ds.queries, list(ds.corpus)) == ({"1": "q"}, ["a"])
    (tmp_path / "corpus.jsonl").write_text('{"id": "d1", "text": "x"}\n')
    (tmp_path / "qa.jsonl").write_text(bom + '{"id": "1", "query": "x?", "relevant": ["d1"]}\n', encoding="utf-8")
    assert load_dataset(tmp_path / "qa.jsonl").qrels == {"1": {"d1": 1}}
    from bench.cli.suite import load_suite

    text = (
        '[datasets.d]\npath = "beir"\n[endpoints]\na = "reference"\nb = "reference?batch=1"\n'
        '[[identity]]\ndataset = "d"\n'
    )
    (tmp_path / "plain.toml").write_text(text, encoding="utf-8")
    (tmp_path / "bom.toml").write_text(bom + text, encoding="utf-8")
    requests = [load_suite(tmp_path / name).identity[0].request for name in ("plain.toml", "bom.toml")]
    assert requests[0] == requests[1] and requests[0].endpoints == ["a=reference", "b=reference?batch=1"]


SPACED_IDS = [
    # (format, files to write, file, line)
    ("beir", {"corpus": '{"_id": "d1", "text": "a"}\n{"_id": "d 2", "text": "b"}\n'}, "corpus.jsonl", 2),
    ("beir", {"queries": '{"_id": "q1", "text": "a"}\n{"_id": "q\\t2", "text": "b"}\n'}, "queries.jsonl", 2),
    ("beir", {"qrels": "query-id\tcorpus-id\tscore\nq1\td 1\t1\n"}, "test.tsv", 2),
    ("trec", {"topics": "1\tq\n2 x\tq\n"}, "topics", 2),
    (
        "trec",
        {"corpus": ("corpus.trec", "<DOC><DOCNO>a</DOCNO>x</DOC>\n<DOC>\n<DOCNO>b c</DOCNO>\n</DOC>\n")},
        "corpus.trec",
        2,
    ),
    ("trec", {"corpus": ("corpus.tsv", "a\tx\nb c\ty\n")}, "corpus.tsv", 2),
    (
        "trec",
        {"corpus": ("corpus.jsonl", '{"_id": "a", "text": "x"}\n{"_id": "b\\u00a0c", "text": "y"}\n')},
        "corpus.jsonl",
        2,
    ),
    ("jsonl", '{"id": "1", "query": "x", "relevant": {"d 1": 1}}\n', "qa.jsonl", 1),
    (
        "jsonl",
        '{"id": "1", "query": "x", "relevant": ["d1"]}\n{"id": "2 ", "query": "y", "relevant": ["d1"]}\n',
        "qa.jsonl",
        2,
    ),
]


@pytest.mark.parametrize("format, change, filename, line", SPACED_IDS)
def test_ids_with_white_space_are_refused_at_their_line(tmp_path, format, change, filename, line):
    """A run or qrels file splits on white space: such an id would be written and then not read back."""
    if format == "beir":
        root = write_beir(tmp_path / "ds", **change)
    elif format == "trec":
        root = _trec_root(tmp_path, **change)
    else:
        (tmp_path / "corpus.jsonl").write_text('{"id": "d1", "text": "x"}\n')
        (tmp_path / "qa.jsonl").write_text(change)
        root = tmp_path
    with pytest.raises(InputError) as info:
        load_dataset(root)
    assert (Path(info.value.path).name, info.value.line) == (filename, line)
    assert "white space" in info.value.message


MALFORMED_SGML = [
    # (file, text, line, words)
    (
        "corpus.trec",
        "<DOC><DOCNO>a</DOCNO>one\n<DOC><DOCNO>b</DOCNO>two</DOC>\n",
        2,
        "<DOC> inside another <DOC> (the one opened at line 1",
    ),
    ("corpus.trec", "<DOC><DOCNO>a</DOCNO>one</DOC>\n<DOC>\n<DOCNO>b</DOCNO>two\n", 2, "<DOC> without </DOC>"),
    ("corpus.trec", "<DOC><DOCNO>a</DOCNO>one</DOC>\n</DOC>\n", 2, "</DOC> without <DOC>"),
    (
        "corpus.trec",
        "<DOC><DOCNO>a</DOCNO>one</DOC>\nstray words\n<DOC><DOCNO>b</DOCNO></DOC>\n",
        2,
        "text outside <DOC>",
    ),
    ("corpus.trec", "<DOC>\n<TEXT>no id</TEXT>\n</DOC>\n", 1, "<DOC> without <DOCNO>"),
    ("corpus.trec", "<DOC><DOCNO>a</DOCNO><DOCNO>b</DOCNO></DOC>\n", 1, "several <DOCNO>"),
    ("topics", "<top>\n<num> 1\n<title> one\n<top>\n<num> 2\n<title> two\n</top>\n", 4, "<top> inside another <top>"),
    ("topics", "<top>\n<num> 1\n<title> one\n</top>\n<top>\n<num> 2\n", 5, "<top> without </top>"),
]


@pytest.mark.parametrize("filename, text, line, words", MALFORMED_SGML)
def test_malformed_sgml_is_an_error_at_its_line_not_a_merge(tmp_path, filename, text, line, words):
    root = _trec_root(
        tmp_path,
        qrels="1 0 a 1\n",
        corpus=(filename, text) if filename != "topics" else None,
        topics=text if filename == "topics" else "1\tq\n",
    )
    with pytest.raises(InputError) as info:
        load_dataset(root)
    assert (Path(info.value.path).name, info.value.line) == (filename, line)
    assert words in info.value.message


def test_a_truncated_gzip_file_is_one_line_with_its_line(tmp_path):
    root = write_beir(
        tmp_path / "ds", corpus="".join(json.dumps({"_id": f"d{i}", "text": "word " * 50}) + "\n" for i in range(200))
    )
    data = gzip.compress((root / "corpus.jsonl").read_bytes())
    (root / "corpus.jsonl").unlink()
    (root / "corpus.jsonl.gz").write_bytes(data[: len(data) // 2])
    result = run_cli_process(["datasets", "check", str(root)])
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"ragbench: error: {root / 'corpus.jsonl.gz'}:")
    assert "corrupt or truncated gzip data" in result.stderr


def test_a_file_given_as_a_folder_format_is_named_as_such(tmp_path):
    (tmp_path / "qrels").write_text("1 0 a 1\n")
    for format in ("beir", "trec"):
        with pytest.raises(InputError, match=rf"qrels: a {format.upper()} dataset is a folder, not a file"):
            load_dataset(tmp_path / "qrels", format=format)


def test_a_folder_where_a_file_belongs_is_named_as_such(tmp_path):
    root = write_beir(tmp_path / "ds")
    (root / "queries.jsonl").unlink()
    (root / "queries.jsonl").mkdir()
    with pytest.raises(InputError, match=r"queries.jsonl: is a folder, expected a file"):
        load_dataset(root)


@pytest.mark.parametrize("grade", ["1e400", "nan", "inf", "99999999999"])
def test_grades_beyond_trec_evals_int_are_refused(tmp_path, grade):
    root = write_beir(tmp_path / "ds", qrels=f"query-id\tcorpus-id\tscore\nq1\td1\t{grade}\n")
    with pytest.raises(InputError) as info:
        load_dataset(root)
    assert info.value.line == 2 and "relevance" in info.value.message

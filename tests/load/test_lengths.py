"""`--lengths from:DATASET` and rerank `--documents A..B` / `poisson:M`: parsed, drawn with the seed, recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.core.errors import UserError
from bench.load.lengths import DocumentsDraw, DrawKind, LengthsFrom, parse_documents, parse_lengths, spread
from bench.load.points import PointConfig, SweepConfig, point_label
from bench.load.workload import DISTINCT_REQUESTS, DRAWN_TEXTS, Workload, documents_distribution
from bench.results.schema import Op
from tests.harness.cli import run_cli

LENGTHS = (3, 5, 5, 40)  # words of the tiny corpus's texts


def write_dataset(root: Path, lengths: tuple[int, ...] = LENGTHS, blank: bool = False) -> Path:
    """A JSONL dataset whose corpus texts have `lengths` words (whitespace only with `blank`)."""
    root.mkdir(parents=True, exist_ok=True)
    docs = [{"_id": f"d{i}", "text": " " if blank else " ".join(["w"] * n)} for i, n in enumerate(lengths)]
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (root / "qa.jsonl").write_text(json.dumps({"id": "q0", "query": "q", "relevant": {"d0": 1}}) + "\n")
    return root


def running_workload() -> Workload:
    """Texts of 12 numbered words each (`t0 t1 ...`), counted in words: cuts show where they came from."""
    texts = [" ".join(f"t{i * 12 + j}" for j in range(12)) for i in range(200)]
    return Workload(texts, ["query"], "inline", lambda ts: [len(t.split()) for t in ts], "words")


def test_lengths_and_documents_parse_into_fixed_sizes_and_distributions(tmp_path):
    data = write_dataset(tmp_path / "d")
    assert parse_lengths(None, 0) == [None]
    assert parse_lengths(f"16, 128,from:{data}", 7) == [16, 128, LengthsFrom(str(data), 7)]
    assert parse_documents(None, 0) == []
    assert parse_documents("10,10..100,poisson:40", 3) == [
        10,
        DocumentsDraw(DrawKind.RANGE, 10, 100, 55.0, 3),
        DocumentsDraw(DrawKind.POISSON, 1, 4096, 40.0, 3),
    ]


@pytest.mark.parametrize(
    "lengths,documents,message",
    [
        ("from:", None, "expected from:DATASET"),
        ("from:/nonexistent/set", None, "no such file or folder"),
        ("from:builtin:nope", None, "unknown built-in data set"),
        ("16,,32", None, "an empty item"),
        ("0", None, "--lengths"),
        (None, "100..10", "LOW < HIGH"),
        (None, "5..x", "--documents 5..x: high"),
        (None, "poisson:0", "--documents poisson:0: mean"),
        (None, "poisson:", "--documents poisson:: mean"),
    ],
)
def test_a_bad_lengths_or_documents_entry_is_a_user_error(lengths, documents, message):
    with pytest.raises(UserError) as raised:
        parse_lengths(lengths, 0)
        parse_documents(documents, 0)
    assert message in str(raised.value)


def test_lengths_from_a_dataset_are_its_corpus_lengths_drawn_with_the_seed(tmp_path):
    data = str(write_dataset(tmp_path / "d"))
    workload = running_workload()
    cut = workload.with_length(LengthsFrom(data, seed=1))
    sent = workload.count_tokens(cut.texts)
    assert len(sent) == DRAWN_TEXTS and set(sent) == set(LENGTHS)  # every length of the corpus, and only those
    assert abs(sent.count(5) / len(sent) - 0.5) < 0.1  # 5 words is half the corpus: drawn about half the time
    d = cut.distribution
    assert d is not None and d.source == f"from:{data}" and d.unit == "words" and d.clipped == 0
    assert (d.corpus.n, d.corpus.min, d.corpus.p50, d.corpus.max) == (4, 3, 5, 40)
    assert d.sent == spread(sent)
    again = running_workload().with_length(LengthsFrom(data, seed=1))
    other = running_workload().with_length(LengthsFrom(data, seed=2))
    assert again.texts == cut.texts and other.texts != cut.texts
    assert workload.with_length(LengthsFrom(data, seed=1)) is cut  # cut once


def test_a_drawn_length_past_the_running_corpus_is_cut_at_its_length_and_counted(tmp_path):
    data = str(write_dataset(tmp_path / "d", lengths=(3, 5000)))
    workload = Workload(["a b c d e f g h i j"] * 10, ["q"], "inline", lambda ts: [len(t.split()) for t in ts], "words")
    cut = workload.with_length(LengthsFrom(data, seed=0))
    assert cut.distribution is not None and cut.distribution.clipped > 0
    assert max(workload.count_tokens(cut.texts)) == 99  # the running corpus's 100 words, less one


@pytest.mark.parametrize("blank", [True, False])
def test_a_dataset_without_texts_to_draw_from_is_a_user_error(tmp_path, blank):
    data = write_dataset(tmp_path / "d", lengths=(3,), blank=blank)
    if not blank:
        (data / "corpus.jsonl").write_text("")
    with pytest.raises(UserError, match=r"--lengths from:"):
        running_workload().with_length(LengthsFrom(str(data)))


def test_rerank_requests_take_the_drawn_counts_and_the_record_says_them():
    workload = running_workload()
    draw = DocumentsDraw(DrawKind.RANGE, 3, 9, 6.0, seed=5)
    requests = workload.rerank_requests(draw.typical, draw)
    counts = [len(docs) for _, docs in requests]
    assert counts == draw.counts(DISTINCT_REQUESTS) and min(counts) >= 3 and max(counts) <= 9 and len(set(counts)) > 3
    flat = [text for _, docs in requests for text in docs]
    assert flat == [workload.texts[i % len(workload.texts)] for i in range(len(flat))]  # in turn, none skipped
    record = documents_distribution(draw, DISTINCT_REQUESTS)
    assert record is not None and record.spec == "3..9" and record.sent == spread(counts)
    poisson = DocumentsDraw(DrawKind.POISSON, 1, 4096, 0.5, seed=0).counts(1000)
    assert min(poisson) == 1 and abs(sum(poisson) / 1000 - 1.1) < 0.15  # zero drawn as one: E = 0.5 + e^-0.5


def test_fixed_documents_are_sent_as_before():
    workload = running_workload()
    requests = workload.rerank_requests(4)
    assert [docs for _, docs in requests[:2]] == [workload.texts[0:4], workload.texts[4:8]]


def test_points_of_distributions_are_named_by_them(tmp_path):
    draw = DocumentsDraw(DrawKind.POISSON, 1, 4096, 40.0)
    sweep = SweepConfig(PointConfig(op=Op.RERANK), lengths=[LengthsFrom("builtin:numpy-docs")], documents=[10, draw])
    fixed, drawn = sweep.points()
    assert point_label(fixed) == "closed docs 10 conc 1 len from:builtin:numpy-docs"
    assert point_label(drawn) == "closed docs poisson:40 conc 1 len from:builtin:numpy-docs"
    assert drawn.batch == 40 and drawn.documents_draw == draw


RERANK = ["load", "-e", "r=tei-rerank@http://127.0.0.1:9"]


@pytest.mark.parametrize(
    "flags,message",
    [
        (["--lengths", "from:/nonexistent/set"], "--lengths from:/nonexistent/set"),
        (["--documents", "9..3"], "--documents 9..3"),
        (["--documents", "poisson:x"], "--documents poisson:x"),
        (["--documents", "3..9", "--burst", "10"], "a burst sends its chunks in fixed batches"),
    ],
)
def test_bad_distributions_on_the_command_line_are_one_line_and_exit_2(flags, message, tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    code, _stdout, stderr = run_cli([*RERANK, *flags, "--out", str(out)], monkeypatch, capsys)
    lines = stderr.strip().splitlines()
    assert code == 2 and len(lines) == 1 and message in lines[0], stderr
    assert not out.exists()


def test_an_empty_dataset_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    data = write_dataset(tmp_path / "d", lengths=(3,), blank=True)
    out = tmp_path / "out"
    code, _stdout, stderr = run_cli(
        ["load", "-e", "x=tei@http://127.0.0.1:9", "--lengths", f"from:{data}", "--out", str(out)], monkeypatch, capsys
    )
    lines = stderr.strip().splitlines()
    assert code == 2 and len(lines) == 1 and f"--lengths from:{data}" in lines[0], stderr


def test_a_point_of_drawn_lengths_and_documents_records_both_and_validates(load_server, tmp_path):
    """Against the fixture server: the record says the distributions it sent, and the committed schema takes it."""
    from bench.endpoints.spec import parse_endpoint_spec
    from bench.load.plan import plan_sweep
    from bench.load.sweep import run_load
    from bench.results.lifecycle import Output
    from bench.results.store import read_results
    from tests.load.test_points import _valid

    url, _ = load_server(service_ms=1)
    data = str(write_dataset(tmp_path / "d"))
    draw = DocumentsDraw(DrawKind.RANGE, 2, 6, 4.0, seed=3)
    base = PointConfig(op=Op.RERANK, duration_s=0.3, warmup_s=0.0, timeout_s=5.0, requests=None)
    sweep = SweepConfig(base, lengths=[LengthsFrom(data, seed=3)], documents=[draw])
    workload = running_workload()
    run_load([parse_endpoint_spec(f"r=tei-rerank@{url}")], plan_sweep(sweep), workload, Output(tmp_path / "out"))
    [point] = read_results(tmp_path / "out" / "results.jsonl").load_points
    assert point.requests.ok > 0 and point.batch == point.documents == 4 and point.length is None
    assert point.length_distribution is not None and point.length_distribution.source == f"from:{data}"
    assert point.length_distribution.corpus.max == 40 and point.length_distribution.seed == 3
    assert point.documents_distribution is not None and point.documents_distribution.spec == "2..6"
    ring = workload.with_length(LengthsFrom(data, seed=3)).ring(4)  # the whole draw: 1,024 texts / 4 a request
    assert ring == DRAWN_TEXTS // 4 and point.documents_distribution.sent == spread(draw.counts(ring))
    assert point.length_text == f"from:{data}" and point.size_text == "2..6"
    _valid(point)
    from bench.report import write_report

    write_report(tmp_path / "out" / "results.jsonl")
    md = (tmp_path / "out" / "report.md").read_text()
    corpus = point.length_distribution.corpus
    assert f"| text length | from:{data} | 3 | words | 4, {corpus.mean:g}, 3 / 3 / 5 / 40 / 40 / 40 |" in md
    assert "| documents per request | 2..6 | 3 | documents | - |" in md


def test_size_refuses_a_missing_dataset_in_one_line(tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    size = ["size", "-e", "x=tei@http://127.0.0.1:9", "--slo-p99", "50"]
    code, _stdout, stderr = run_cli(
        [*size, "--lengths", "from:/nonexistent/set", "--out", str(out)], monkeypatch, capsys
    )
    lines = stderr.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "--lengths from:/nonexistent/set" in lines[0], stderr


def test_a_background_stream_takes_lengths_from_a_dataset():
    from bench.quality.background_spec import parse_background

    spec = parse_background("emb@rate=10&seed=4&lengths=from:builtin:numpy-docs")
    assert spec.lengths == LengthsFrom("builtin:numpy-docs", 4)
    assert parse_background("emb@rate=10").lengths is None
    with pytest.raises(UserError, match="expected one from:DATASET"):
        parse_background("emb@rate=10&lengths=16")


def test_a_drawn_point_is_its_own_measurement_in_compare_and_history():
    """Two points alike but for the distribution they drew are different measurements (PointKey, history)."""
    from bench.history.series import point_configuration
    from bench.load.points import PointKey
    from bench.results.schema import LengthDistribution
    from tests.gate.helpers import load_point

    s = spread([1, 2, 3])
    drawn = LengthDistribution("from:builtin:numpy-docs", "words", 0, s, s, 0)
    plain, from_corpus = load_point(), load_point(length_distribution=drawn)
    assert PointKey.of(plain) != PointKey.of(from_corpus)
    assert point_configuration(from_corpus) == point_configuration(plain) + " len from:builtin:numpy-docs"
    assert PointKey.of(from_corpus).label == "tei embed closed batch 8 conc 4 len from:builtin:numpy-docs"


def test_token_cuts_are_the_longest_a_search_per_text_finds():
    """With the model's tokenizer: the batched cut sends the same texts as a binary search of each cut would, each
    at most its length in tokens (special tokens included) unless one word is longer (a cut keeps one word)."""
    from bench.load.workload import _cut, token_counter
    from tests.harness.models import minilm_path

    count, unit = token_counter(minilm_path())
    texts = ["numpy.linalg.norm(x, ord=None) returns one of eight matrix norms, or vector norms."] * 30
    workload = Workload(texts, ["q"], "inline", count, unit)
    lengths = [5, 9, 17, 40, 3, 64]
    cut, counts = workload._token_cuts(lengths)
    words, position = " ".join(texts).split(), 0
    for text, length in zip(cut, lengths, strict=True):
        if position + length >= len(words):
            position = 0
        k = _cut(words, position, length, count)
        assert text == " ".join(words[position : position + k])
        position += k
    assert counts == count(cut)
    assert all(n <= length or len(t.split()) == 1 for t, n, length in zip(cut, counts, lengths, strict=True))
    assert counts[0] > lengths[0]  # 5 tokens: shorter than the first word, which is sent whole


def test_a_tokenizer_that_is_not_additive_at_spaces_still_gets_cuts_within_their_length():
    def merging(texts: list[str]) -> list[int]:  # one token more for any text of two words or more
        return [len(t.split()) + (len(t.split()) > 1) for t in texts]

    workload = Workload(["a b c d e f g h"] * 20, ["q"], "inline", merging, "tokenizer")
    cut, counts = workload._token_cuts([4, 6, 2])
    assert counts == merging(cut) == [4, 6, 1] and [len(t.split()) for t in cut] == [3, 5, 1]  # 2 words: 3 tokens


def test_a_large_corpus_is_sampled_with_the_seed(tmp_path, monkeypatch):
    import bench.load.workload as workload_module

    monkeypatch.setattr(workload_module, "CORPUS_SAMPLE", 3)
    data = str(write_dataset(tmp_path / "d", lengths=(1, 2, 3, 4, 5, 6, 7, 8)))
    first = workload_module.corpus_lengths(data, lambda ts: [len(t.split()) for t in ts], seed=1)
    again = workload_module.corpus_lengths(data, lambda ts: [len(t.split()) for t in ts], seed=1)
    assert len(first) == 3 and set(first) <= set(range(1, 9)) and list(first) == list(again)

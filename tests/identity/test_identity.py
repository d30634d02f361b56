"""Identity across serving paths: real servers agree; each fault fails its pair and is named."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bench.datasets.texts import Tokenizer
from bench.endpoints import parse_endpoint_spec
from bench.identity import IdentityRequest, from_texts, run_identity
from bench.identity.thresholds import THRESHOLDS, pair_dtype
from tests.harness.cli import run_cli
from tests.harness.models import minilm_path


@pytest.fixture(scope="module")
def texts_file(shared_dir: Path, tmp_path_factory) -> Path:
    """24 real texts: short ones, ones with line breaks, and ones past 256 tokens (truncation shows there)."""
    docs = [json.loads(line) for line in (shared_dir / "datasets" / "scifact-train" / "corpus.jsonl").open()][:24]
    texts = []
    for i, doc in enumerate(docs):
        if i % 3 == 0:
            texts.append(doc["text"].split(". ")[0])
        elif i % 3 == 1:
            texts.append(f"{doc['title']}\n{doc['text'][:400]}")
        else:
            texts.append(f"{doc['title']} {doc['text'][:2200]}")
    path = tmp_path_factory.mktemp("identity") / "texts.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in texts))
    return path


@pytest.fixture(scope="module")
def short_texts_file(tmp_path_factory) -> Path:
    texts = [
        "the cat sat on the mat",
        "stock markets fell",
        "photosynthesis in plants",
        "a recipe for bread",
        "the history of rome",
        "cats are small mammals",
        "bread needs yeast",
        "plants need light",
        "markets and trade",
        "roman emperors",
        "mats and rugs",
        "light and energy",
    ]
    path = tmp_path_factory.mktemp("identity-short") / "texts.txt"
    path.write_text("\n".join(texts) + "\n")
    return path


def _run(texts_file: Path, *specs: str, reference: str | None = None):
    return run_identity(
        IdentityRequest([parse_endpoint_spec(s) for s in specs], from_texts(texts_file), reference=reference)
    )


def _causes(report, b: str) -> list[tuple[str, str | None]]:
    pair = next(p for p in report.embed_pairs if p.b == b)
    return [(c.code, c.endpoint) for c in pair.causes]


def test_texts_cover_every_length_bucket(texts_file):
    lengths = Tokenizer(minilm_path()).lengths(from_texts(texts_file).texts)
    assert lengths.min() <= 128 and (lengths > 256).sum() >= 4


@pytest.mark.integration
def test_reference_infinity_litellm_agree(texts_file, infinity_server, litellm_server, tmp_path):
    specs = [
        "ref=reference",
        f"inf=openai@{infinity_server.url}?model={infinity_server.embed_model}",
        f"lite=openai@{litellm_server.url}/v1?model={litellm_server.embed_model}&key_env={litellm_server.key_env}&encoding=base64",
    ]
    report = _run(texts_file, *specs)
    assert [(p.a, p.b) for p in report.embed_pairs] == [("ref", "inf"), ("ref", "lite"), ("inf", "lite")]
    for pair in report.embed_pairs:
        assert pair.verdict == "pass", (pair.a, pair.b, pair.failures)
        assert pair.cosine_min > 0.99999 and pair.top10_overlap == 1.0 and pair.max_norm_diff < 1e-5
        assert sum(b.texts for b in pair.by_token_length) == 24
    assert all(b.verdict == "pass" for b in report.batch_invariance.values())
    assert report.passed
    document = report.to_dict()
    assert (document["schema"], document["version"], document["verdict"]) == ("ragbench.identity", 1, "pass")
    json.dumps(document)  # serialisable as it stands


@pytest.mark.integration
def test_rerank_identity_across_reference_infinity_litellm(short_texts_file, infinity_server, litellm_server):
    specs = [
        f"ref=reference-rerank?model={infinity_server.rerank_model_path}",
        f"inf=cohere@{infinity_server.url}?model={infinity_server.rerank_model}",
        f"lite=cohere@{litellm_server.url}/v1?model={litellm_server.rerank_model}&key_env={litellm_server.key_env}",
    ]
    report = _run(short_texts_file, *specs, reference="ref")
    assert [(p.a, p.b) for p in report.rerank_pairs] == [("ref", "inf"), ("ref", "lite")]
    for pair in report.rerank_pairs:
        assert pair.verdict == "pass" and pair.kendall_tau_min == pytest.approx(1.0) and pair.max_score_diff < 1e-5
    assert all(r.top_n_honoured for r in report.rerankers.values())
    assert report.passed


@pytest.mark.integration
def test_infinity_dimensions_cut_without_renormalising_is_named(short_texts_file, infinity_server):
    report = _run(
        short_texts_file,
        "ref=reference",
        f"inf=openai@{infinity_server.url}?model={infinity_server.embed_model}&dimensions=128",
    )
    assert not report.passed
    assert _causes(report, "inf") == [("dimensions_cut_not_renormalised", "inf")]


@pytest.mark.parametrize(
    ("fault", "expected"),
    [
        # Each fault run once: truncate:128 is asserted by test_truncation_is_named_in_buckets_and_streamed_...,
        # strip_newlines by test_cli_fails_with_exit_1_and_writes_versioned_json (the same server, the same texts).
        ("unnormalised", [("not_normalised", "srv")]),
        ("prefix:query: ", [("prefix_missing", "ref")]),
        ("swap", [("different_model", None)]),
    ],
)
def test_each_fault_fails_and_names_its_cause(texts_file, tei_fixture, fault, expected):
    server = tei_fixture(faults=(fault,), max_input_length=256)
    report = _run(texts_file, "ref=reference", f"srv=tei@{server.url}")
    pair = report.embed_pairs[0]
    assert pair.verdict == "fail" and not report.passed
    assert _causes(report, "srv") == expected, [c.detail for c in pair.causes]


def test_real_tei_reads_512_tokens_where_sentence_transformers_reads_256(texts_file, tei_fixture):
    """TEI takes max_input_length from the model's position embeddings; sentence-transformers stops at 256."""
    server = tei_fixture()
    report = _run(texts_file, "ref=reference", f"tei=tei@{server.url}")
    pair = report.embed_pairs[0]
    assert [(c.code, c.endpoint) for c in pair.causes] == [("truncated", "ref")]
    assert "first 256 tokens" in pair.causes[0].detail


def test_fault_dims_cut_on_the_openai_route(short_texts_file, tei_fixture):
    good = tei_fixture()
    bad = tei_fixture(faults=("dims_no_renorm",))
    report = _run(
        short_texts_file,
        "ref=reference",
        f"good=openai@{good.url}/v1?model=m&dimensions=96",
        f"bad=openai@{bad.url}/v1?model=m&dimensions=96",
        reference="ref",
    )
    assert _causes(report, "good") == [("dimensions_cut", "good")]
    assert _causes(report, "bad") == [("dimensions_cut_not_renormalised", "bad")]


def test_rerank_faults_raw_scores_and_ignored_top_n(short_texts_file, tei_fixture, minilm_backend):
    server = tei_fixture(model_kind="reranker", faults=("ignore_top_n",))
    path = minilm_backend.reranker.model.name_or_path
    report = _run(
        short_texts_file,
        f"ref=reference-rerank?model={path}",
        f"raw=tei-rerank@{server.url}?raw_scores=true",
        f"loose=cohere@{server.url}/v2",
        reference="ref",
    )
    raw = next(p for p in report.rerank_pairs if p.b == "raw")
    assert raw.verdict == "fail" and [(c.code, c.endpoint) for c in raw.causes] == [("raw_scores", "raw")]
    loose = next(p for p in report.rerank_pairs if p.b == "loose")
    assert loose.verdict == "pass"  # same scores; only top_n is ignored
    assert report.rerankers["loose"].top_n_honoured is False and report.rerankers["ref"].top_n_honoured is True
    assert not report.passed


def test_truncation_is_named_in_buckets_and_streamed_figures_match_a_direct_computation(
    texts_file, tei_fixture, minilm_backend
):
    """Chunked figures equal the whole-matrix ones (chunk of 5 over 24 texts crosses every boundary case), and
    the truncation is named with its token limit and shows in the length buckets (one identity run for both)."""
    server = tei_fixture(faults=("truncate:128",), max_input_length=256)
    inputs = from_texts(texts_file)
    report = run_identity(
        IdentityRequest(
            [parse_endpoint_spec("ref=reference"), parse_endpoint_spec(f"srv=tei@{server.url}")], inputs, chunk_size=5
        )
    )
    pair = report.embed_pairs[0]
    assert pair.verdict == "fail" and not report.passed
    assert _causes(report, "srv") == [("truncated", "srv")], [c.detail for c in pair.causes]
    assert "first 128 tokens" in pair.causes[0].detail
    by_bucket = {b.tokens: b for b in pair.by_token_length}
    assert by_bucket["0-128"].failing == 0 and by_bucket["0-128"].cosine_min > 0.9999
    assert by_bucket["257-512"].failing == by_bucket["257-512"].texts > 0
    a = minilm_backend.embed(inputs.texts, normalize=True, max_tokens=256)
    b = minilm_backend.embed(inputs.texts, normalize=True, max_tokens=128)
    cosine = (a * b).sum(axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    assert pair.cosine_min == pytest.approx(cosine.min(), abs=1e-5)
    assert pair.cosine_mean == pytest.approx(cosine.mean(), abs=1e-5)
    assert pair.worst[0].index == int(np.argmin(cosine))

    def top10(v, q):
        sims = (v[q] / np.linalg.norm(v[q], axis=1, keepdims=True)) @ (v / np.linalg.norm(v, axis=1, keepdims=True)).T
        sims[np.arange(len(q)), q] = -np.inf
        return [set(np.argsort(-row)[:10].tolist()) for row in sims]

    q = inputs.query_self_index
    expected = np.mean([len(x & y) / 10 for x, y in zip(top10(a, q), top10(b, q))])
    assert pair.top10_overlap == pytest.approx(expected)


def test_thresholds_follow_the_least_precise_dtype():
    assert pair_dtype("float32", "float16") == "float16"
    assert pair_dtype(None, None) == "float32"
    assert pair_dtype("bf16", None) == "bfloat16"
    assert THRESHOLDS["float32"].mean_cosine > THRESHOLDS["float16"].mean_cosine == 0.999
    assert THRESHOLDS["float16"].min_cosine == 0.990


def test_cli_fails_with_exit_1_and_writes_versioned_json(texts_file, tei_fixture, tmp_path, monkeypatch, capsys):
    server = tei_fixture(faults=("strip_newlines",), max_input_length=256)
    out = tmp_path / "identity.json"
    code, stdout, _ = run_cli(
        [
            "identity",
            "-e",
            "ref=reference",
            "-e",
            f"srv=tei@{server.url}",
            "--texts",
            str(texts_file),
            "--out",
            str(out),
        ],
        monkeypatch,
        capsys,
    )
    assert code == 1
    assert "cause [whitespace_stripped]: srv removes line breaks before encoding" in stdout
    assert "verdict: FAIL" in stdout
    document = json.loads(out.read_text())
    assert (document["schema"], document["version"], document["verdict"]) == ("ragbench.identity", 1, "fail")
    pair = document["embed_pairs"][0]
    assert pair["verdict"] == "fail"
    assert [(c["code"], c["endpoint"]) for c in pair["causes"]] == [("whitespace_stripped", "srv")], pair["causes"]


def test_cli_passes_with_exit_0(texts_file, tei_fixture, monkeypatch, capsys):
    # 24 texts: enough candidates for the neighbour check to be able to fail (tests/identity/test_identity_verdicts.py)
    server = tei_fixture(max_input_length=256)
    code, stdout, _ = run_cli(
        ["identity", "-e", "ref=reference", "-e", f"srv=tei@{server.url}", "--texts", str(texts_file)],
        monkeypatch,
        capsys,
    )
    assert code == 0, stdout
    assert "verdict: PASS" in stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["-e", "a=nosuch@http://127.0.0.1:1"], "endpoint a: unknown kind 'nosuch'"),
        (["-e", "justtext"], "endpoint spec 'justtext': expected NAME=KIND@URL"),
        (["-e", "a=reference"], "endpoint a: identity needs at least two endpoints"),
        (["-e", "a=reference", "-e", "a=reference"], "endpoint names must be unique"),
        (["-e", "a=reference", "-e", "b=reference", "--reference", "c"], "--reference c: no endpoint of that name"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(args, needle, short_texts_file, monkeypatch, capsys):
    code, _, stderr = run_cli(["identity", *args, "--texts", str(short_texts_file)], monkeypatch, capsys)
    assert code == 2
    assert stderr.strip() == f"ragbench: error: {needle}" or (needle in stderr and stderr.count("\n") == 1)


@pytest.mark.parametrize("fault", ["html", "wrong_shape"])
def test_cli_endpoint_answering_html_or_a_wrong_shape_exits_2(
    fault, short_texts_file, tei_fixture, monkeypatch, capsys
):
    server = tei_fixture(faults=(fault,))
    code, _, stderr = run_cli(
        [
            "identity",
            "-e",
            "ref=reference",
            "-e",
            f"odd=openai@{server.url}/v1?model=m",
            "--texts",
            str(short_texts_file),
        ],
        monkeypatch,
        capsys,
    )
    assert code == 2
    assert stderr.startswith("ragbench: error: odd: ") and stderr.count("\n") == 1
    assert ("not JSON" if fault == "html" else "unexpected shape") in stderr


@pytest.mark.parametrize(
    "bad, says", [("nan", "finite numbers"), ("strings", "other than numbers"), ("empty", "non-zero dimension")]
)
def test_cli_endpoint_answering_invalid_vectors_exits_2_with_the_wires_own_check(
    bad, says, short_texts_file, tei_fixture, monkeypatch, capsys
):
    """The same validation as load's (bench.endpoints.base.vectors_of): one line, never a traceback."""
    server = tei_fixture(faults=(f"bad_values:{bad}",))
    code, _, stderr = run_cli(
        ["identity", "-e", "ref=reference", "-e", f"odd=tei@{server.url}", "--texts", str(short_texts_file)],
        monkeypatch,
        capsys,
    )
    assert code == 2, stderr
    assert stderr.startswith("ragbench: error: odd: ") and stderr.count("\n") == 1 and says in stderr


def test_cli_texts_and_dataset_are_exclusive(monkeypatch, capsys):
    code, _, stderr = run_cli(["identity", "-e", "a=reference", "-e", "b=reference"], monkeypatch, capsys)
    assert code == 2 and "exactly one of --texts FILE or --dataset PATH" in stderr


def test_dataset_input_uses_corpus_and_queries(tmp_path, tei_fixture, monkeypatch, capsys):
    folder = tmp_path / "tiny-beir"
    (folder / "qrels").mkdir(parents=True)
    words = (
        "cats dogs bread rome light trade mats rain snow wind iron gold salt wool silk corn rice tea milk wine oak "
        "pine sand clay"
    )
    docs = {f"d{i}": f"document {i} about {w}" for i, w in enumerate(words.split())}
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": k, "title": "", "text": v}) + "\n" for k, v in docs.items())
    )
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "which document is about rome"}) + "\n")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td3\t1\n")
    server = tei_fixture(max_input_length=256)
    out = tmp_path / "id.json"
    code, stdout, _ = run_cli(
        ["identity", "-e", "ref=reference", "-e", f"srv=tei@{server.url}", "--dataset", str(folder), "--out", str(out)],
        monkeypatch,
        capsys,
    )
    assert code == 0, stdout
    document = json.loads(out.read_text())
    assert (document["texts"], document["queries"]) == (24, 1)

"""Retrieval components through endpoints, against loopback servers: endpoint references, rerank failures
as query errors, exact split reranking, ingestion's splits and retries, a server killed mid-ingest, the cache
keyed by what is served."""

from __future__ import annotations

import json
import sqlite3
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from bench.core.errors import UserError
from bench.endpoints import HttpStatusError, cache, open_endpoint, parse_endpoint_spec
from bench.endpoints.client import RETRIES, retry_wait
from bench.results.store import read_results
from bench.targets.encoder import Encoder, recheck_sample
from tests.harness.beir import FRUIT_CORPUS, write_beir
from tests.harness.cli import run_cli
from tests.harness.stubs import JsonRoutes, JsonStub, RawBody
from tests.load.conftest import load_server  # noqa: F401 (the fixture, reused)
from tests.paths import scifact

MOCK = "http://mock.invalid"  # the URL of an endpoint on httpx.MockTransport: no server, no socket


def _error_lines(err: str) -> list[str]:
    """The `ragbench: error:` lines on stderr (progress bars share it), each up to its first `(`."""
    prefix = "ragbench: error: "
    return [line[len(prefix) :].split(" (")[0] for line in err.splitlines() if line.startswith(prefix)]


def _score(text: str) -> float:
    """A stand-in cross-encoder: a score of the document alone, so any split of a request scores it the same."""
    return float(sum(map(ord, text)) % 97) / 97.0


def _cohere(failing: dict[str, object] | None = None):
    """A Cohere-shaped /rerank whose answer for a query in `failing` is that status and body."""

    def route(raw: bytes):
        body = json.loads(raw)
        if failing and body["query"] in failing:
            return failing[body["query"]]
        scored = sorted(enumerate(body["documents"]), key=lambda pair: -_score(pair[1]))
        results = [{"index": i, "relevance_score": _score(d)} for i, d in scored][: body.get("top_n")]
        return 200, {"results": results}

    return route


def test_unknown_or_wrong_kind_endpoint_is_one_line_exit_2(fruit, monkeypatch, capsys):
    base = [
        "quality",
        "--dataset",
        str(fruit),
        "-e",
        "emb=tei@http://127.0.0.1:9",
        "-e",
        "rr=cohere@http://127.0.0.1:9",
    ]
    for target, said in (
        ("dense?embedder=nope", "embedder=nope is not an endpoint given with -e (given: emb, rr)"),
        ("dense?embedder=rr", "embedder=rr is a cohere endpoint; embedder takes a embedding"),
        ("bm25+rerank?reranker=emb", "reranker=emb is a tei endpoint; reranker takes a rerank"),
        ("bm25?reranker=rr", "reranker= needs a '+rerank' target"),
        ("dense?embedder=emb&model=x", "give embedder= (an endpoint) or model="),
    ):
        code, _, err = run_cli([*base, "-t", target, "--out", str(fruit.parent / "out")], monkeypatch, capsys)
        assert code == 2 and said in err and err.count("\n") == 1 and err.startswith("ragbench: error:"), err
        assert not (fruit.parent / "out").exists()


def test_failed_reranks_are_errors_of_their_queries_never_first_stage_order(fruit, tmp_path, monkeypatch, capsys):
    html = RawBody("text/html", b"<html><body>Bad gateway</body></html>")
    failing = {
        "apple banana": (422, {"detail": "too long"}),
        "cherry date": (500, {"error": "boom"}),
        "elder fig": (200, html),
    }
    stub = JsonStub({("POST", "/rerank"): _cohere(failing)})
    out = tmp_path / "out"
    args = ["quality", "--dataset", str(fruit), "-e", f"rr=cohere@{stub.url}", "-t", "bm25+rerank?reranker=rr"]
    code, _, err = run_cli([*args, "--out", str(out), "-m", "nDCG@10"], monkeypatch, capsys)
    stub.stop()
    assert code == 3 and _error_lines(err) == ["target bm25+rerank?reranker=rr: 3 of 4 queries failed"], err
    results = read_results(out / "results.jsonl")
    by_qid = {q.qid: q for q in results.queries}
    for qid in ("q1", "q2", "q3"):
        assert by_qid[qid].error and "rerank failed: rr" in by_qid[qid].error and by_qid[qid].hits == 0
    assert "HTTP 422" in by_qid["q1"].error and "HTTP 500" in by_qid["q2"].error
    assert by_qid["q4"].error is None and by_qid["q4"].hits > 0
    [metric] = results.metrics
    assert {qid: metric.per_query[qid] for qid in ("q1", "q2", "q3")} == {"q1": 0.0, "q2": 0.0, "q3": 0.0}
    # The good query is in the reranker's order, not bm25's.
    [run_path] = (out / "runs").glob("*.trec")
    run = run_path.read_text().split("\n")
    ranked = [line.split()[2] for line in run if line.startswith("q4 ")]
    assert ranked == sorted(ranked, key=lambda d: -_score(FRUIT_CORPUS[d]))
    assert results.end is not None and results.end.status == "complete"
    assert set(by_qid["q4"].parts_ms) == {"search_ms", "rerank_ms"} and by_qid["q4"].latency_ms > 0
    [target] = results.targets
    assert set(target.latency_parts_ms) == {"search_ms", "rerank_ms"} and target.latency_ms["p50"] > 0


def test_dense_through_an_endpoint_records_ingest_and_per_query_costs(fruit, tmp_path, monkeypatch, capsys):
    stub = _tei_stub(limit=4)
    args = ["quality", "--dataset", str(fruit), "-e", f"emb=tei@{stub.url}?batch=4", "-t", "dense?embedder=emb"]
    blocks = []
    for run in ("first", "again"):
        code, _, err = run_cli([*args, "--out", str(tmp_path / run), "-m", "nDCG@10"], monkeypatch, capsys)
        assert code == 0, err
        [target] = read_results(tmp_path / run / "results.jsonl").targets
        blocks.append(target.cost_blocks)
    stub.stop()
    first, again = blocks
    assert (first["ingest"]["texts"], first["ingest"]["from_cache"], first["ingest"]["requests"]) == (6, 0, 2)
    assert first["ingest"]["texts_per_s"] > 0 and first["ingest"]["request_ms"]["p99"] > 0
    assert (again["ingest"]["from_cache"], again["ingest"]["requests"], again["ingest"]["texts_per_s"]) == (6, 0, None)
    # Queries are embedded one at a time and never from the cache: their latency is real.
    for block in (first["query_embed"], again["query_embed"]):
        assert (block["texts"], block["from_cache"], block["requests"]) == (4, 0, 4)
    assert set(target.latency_parts_ms) == {"embed_ms", "search_ms"} and target.latency_ms["p50"] > 0
    assert target.config["endpoint"] == "emb" and target.config["served_identity"].startswith("served-")


def _mocked(spec: str, routes: dict[tuple[str, str], object]):
    """open_endpoint of `spec` on httpx.MockTransport answering `routes` (JsonRoutes): the client's logic is under
    test, not the wire. The spec's URL names no server; a test that shows its key ignores the URL varies it."""
    return open_endpoint(parse_endpoint_spec(spec), transport=JsonRoutes(routes).transport())


def test_reranking_split_into_requests_is_exact():
    routes = {("POST", "/rerank"): _cohere()}
    texts = [f"document number {i} about {'xyz' * (i % 5)}" for i in range(23)]
    whole = _mocked(f"w=cohere@{MOCK}", routes).rerank("q", texts)
    split = _mocked(f"s=cohere@{MOCK}?batch=4", routes).rerank("q", texts)
    top = _mocked(f"t=cohere@{MOCK}?batch=4", routes).rerank("q", texts, top_n=5)
    assert [c.inputs for c in split.calls] == [4, 4, 4, 4, 4, 3]
    np.testing.assert_array_equal(split.scores, whole.scores)
    assert split.order == whole.order and top.order == whole.order[:5]


def test_retry_wait_honours_retry_after_and_bounds_the_backoff():
    assert retry_wait(httpx.Response(429, headers={"retry-after": "0.2"}), 0) == 0.2
    assert retry_wait(httpx.Response(503), 3) == pytest.approx(0.4)
    assert retry_wait(httpx.Response(500), 0) is None
    assert retry_wait(httpx.Response(429), RETRIES) is None
    assert retry_wait(httpx.Response(429, headers={"retry-after": "3600"}), 0) is None


def _tei_stub(limit: int, **served: Any) -> JsonStub:
    """`_tei_routes` on loopback, for the runs of the command line."""
    return JsonStub(_tei_routes(limit, **served))


def _tei_routes(
    limit: int,
    busy_every: int = 0,
    scale: float = 1.0,
    pooling: str = "mean",
    cut: int | None = None,
    refuse_over: int | None = None,
):
    """A TEI-shaped /embed that refuses more than `limit` inputs with 413 (a proxy's words, no maximum named),
    answers 429 to every `busy_every`-th request, and gives deterministic vectors scaled by `scale`, of each
    text's first `cut` words (a server that truncates), refusing a text of more than `refuse_over` words (422)."""
    seen = {"n": 0}

    def embed(raw: bytes):
        seen["n"] += 1
        inputs = json.loads(raw)["inputs"]
        if len(inputs) > limit:
            return 413, {"error": "Payload Too Large"}
        if refuse_over is not None and any(len(t.split()) > refuse_over for t in inputs):
            return 422, {"error": f"`inputs` must have less than {refuse_over} tokens", "error_type": "Validation"}
        if cut is not None:
            inputs = [" ".join(t.split()[:cut]) for t in inputs]
        if busy_every and seen["n"] % busy_every == 0:
            return 429, {"error": "Model is overloaded", "error_type": "Overloaded"}
        return 200, [[scale * len(t), scale * (sum(map(ord, t)) % 7), scale] for t in inputs]

    info = {
        "model_id": "m",
        "model_sha": "s",
        "model_dtype": "float32",
        "model_type": {"embedding": {"pooling": pooling}},
    }
    return {("POST", "/embed"): embed, ("GET", "/info"): (200, {**info, "max_client_batch_size": 64})}


def test_ingest_halves_a_refused_batch_and_retries_busy_answers_counting_both(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGBENCH_CACHE", str(tmp_path))
    texts = [f"text {i} " * (i % 3 + 1) for i in range(50)]
    routes = _tei_routes(limit=10, busy_every=4)
    encoder = Encoder(_mocked(f"e=tei@{MOCK}?batch=40&concurrency=2", routes), cache=False)
    vectors = encoder.embed(texts, "ingest")
    expected = [[len(t), sum(map(ord, t)) % 7, 1.0] for t in texts]
    np.testing.assert_array_equal(vectors, np.asarray(expected, dtype=np.float32))
    block = encoder.blocks()["ingest"]
    assert block["splits"] == {"413": 2} and block["retries"]["429"] >= 1  # 40 -> 20 -> 10
    assert block["texts"] == 50 and block["from_cache"] == 0 and block["texts_per_s"] > 0


def test_cache_is_keyed_by_what_is_served_not_by_the_spec(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGBENCH_CACHE", str(tmp_path))
    texts = ["alpha", "beta gamma", "delta"]
    hosts = iter(range(100))

    def run(**served):  # each run at a URL of its own: the key must not depend on it
        encoder = Encoder(_mocked(f"e=tei@http://tei-{next(hosts)}.invalid", _tei_routes(limit=64, **served)))
        vectors = encoder.embed(texts, "ingest")
        return vectors, encoder.blocks()["ingest"]["from_cache"], encoder.key

    first, cached, key = run()
    again, cached_again, key_again = run()  # the same model at another URL (restarted): its vectors are reused
    assert (cached, cached_again, key_again) == (0, 3, key)
    np.testing.assert_array_equal(again, first)
    scaled, cached_scaled, key_scaled = run(scale=2.0)  # another normalisation, same /info: the probe tells
    assert cached_scaled == 0 and key_scaled != key
    np.testing.assert_array_equal(scaled, 2 * first)
    _pooled, cached_pooled, key_pooled = run(pooling="cls")  # another pooling, same vectors: /info tells
    assert cached_pooled == 0 and key_pooled not in (key, key_scaled)
    uncached = Encoder(_mocked(f"e=tei@{MOCK}", _tei_routes(limit=64)), cache=False)
    assert uncached.cache is None and uncached.embed(texts, "ingest").shape == (3, 3)


def _blind_probe(monkeypatch) -> None:
    """An identity probe of one short sentence only, which no truncation above its length changes."""
    monkeypatch.setattr(cache, "probe_texts", lambda limit: [cache.PROBE_TEXT])


def _words(n: int, seed: int) -> str:
    return " ".join(f"w{(seed * 31 + i * 7) % 101}" for i in range(n))


def test_the_long_probe_sees_a_truncation_the_short_sentence_does_not(tmp_path, monkeypatch):
    def key(**served) -> str:
        return _mocked(f"e=tei@{MOCK}", _tei_routes(limit=64, **served)).cache_key()

    normal, cutting = key(), key(cut=64)
    assert cutting != normal  # the probes cross 64 words (no /info limit here: 600, 9,000 and 33,000 words)
    assert key(cut=64) == cutting and key() == normal  # and the same server gives the same key again
    # A server that refuses long inputs is asked without the longest probe: it gets a key, its own.
    refusing = key(refuse_over=1_000)
    assert refusing not in (normal, cutting)
    with pytest.raises(HttpStatusError, match="422"):  # one that refuses even the short sentence fails
        key(refuse_over=3)
    with monkeypatch.context() as blind:
        _blind_probe(blind)
        assert key(cut=64) == key()  # the old probe: the key of issue 23, blind to the truncation


def test_stale_cached_vectors_are_embedded_again_and_the_record_says_why(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RAGBENCH_CACHE", str(tmp_path))
    _blind_probe(monkeypatch)  # a change the key misses: only the re-check of cached vectors can see it
    texts = [_words(n, seed) for seed, n in enumerate((3, 5, 40, 80, 12, 7, 200, 9, 30, 60))]

    hosts = iter(range(100))

    def run(**served):  # each run at a URL of its own, as a restarted server: the key does not depend on it
        encoder = Encoder(_mocked(f"e=tei@http://tei-{next(hosts)}.invalid", _tei_routes(limit=64, **served)))
        vectors = encoder.embed(texts, "ingest")
        encoder.close()
        return vectors, encoder

    first, filled = run()
    assert filled.blocks()["ingest"]["from_cache"] == 0 and filled.describe()["cache_check"] is None
    again, same = run()  # unchanged: every vector from the cache, after a re-check that matched
    check = same.describe()["cache_check"]
    assert same.blocks()["ingest"]["from_cache"] == 10 and same.blocks()["ingest"]["requests"] == 0
    assert check["verdict"] == "match" and check["texts"] == 8 and check["cosine_min"] > 0.999999
    np.testing.assert_array_equal(again, first)
    capsys.readouterr()
    cut, stale = run(cut=20)  # the server now cuts at 20 words: the same key, other vectors for long texts
    assert stale.key == same.key and stale.blocks()["ingest"]["from_cache"] == 0
    verdict = stale.describe()["cache_check"]["verdict"]
    assert verdict.startswith("stale: 8 cached texts embedded again differ") and stale.key in verdict
    assert f"e: cached vectors {verdict}\n" in capsys.readouterr().err
    heads = [" ".join(t.split()[:20]) for t in texts]  # what the server embeds now
    np.testing.assert_array_equal(
        cut, np.asarray([[len(h), sum(map(ord, h)) % 7, 1.0] for h in heads], dtype=np.float32)
    )
    # The cache now holds what the server serves: the next run takes it all, its re-check matching.
    _, refilled = run(cut=20)
    assert refilled.blocks()["ingest"]["from_cache"] == 10 and refilled.describe()["cache_check"]["verdict"] == "match"


def test_recheck_sample_takes_the_longest_texts_and_others_by_hash():
    texts = [_words(n, seed) for seed, n in enumerate(range(1, 21))] + [_words(20, 19)]  # the longest twice
    sample = recheck_sample(texts, list(range(len(texts))))
    assert len(sample) == 8 and len({texts[i] for i in sample}) == 8
    assert sorted(len(texts[i].split()) for i in sample[:4]) == [17, 18, 19, 20]
    assert any(len(texts[i].split()) < 17 for i in sample[4:])  # not only the longest


def test_a_server_that_changes_what_it_serves_never_gets_its_old_vectors(
    tei_fixture, tmp_path, cache_dir, monkeypatch, capsys
):
    """Issue 23's probe: the same URL and model name, the server now truncating at 64 tokens (or no longer
    normalising). Its corpus vectors are never the cached ones: nDCG is the --no-cache run's; an unchanged
    server still takes them all from the cache. (A 128-token limit and 80 abstracts keep it short on a CPU.)"""
    server = tei_fixture(max_input_length=128)
    base = ["quality", "--dataset", str(scifact()), "--max-docs", "80", "--max-queries", "20", "--seed", "1"]
    base += ["-e", f"emb=tei@{server.url}?batch=16&concurrency=1", "-t", "dense?embedder=emb", "-m", "nDCG@10"]
    runs = iter(range(100))

    def run(*extra: str) -> tuple[float, dict, str]:
        out = tmp_path / f"run{next(runs)}"
        code, _, err = run_cli([*base, *extra, "--out", str(out)], monkeypatch, capsys)
        assert code == 0, err
        results = read_results(out / "results.jsonl")
        [target], [metric] = results.targets, results.metrics
        return metric.mean, {**target.config, **target.cost_blocks["ingest"]}, err

    def serve(*faults: str) -> None:
        server.behaviour = replace(server.behaviour, faults=faults)  # the same server, URL and /info

    served, filled, _ = run()
    again, cached, _ = run()
    assert (filled["texts"], filled["from_cache"], cached["from_cache"], cached["requests"]) == (80, 0, 80, 0)
    assert cached["cache_check"]["verdict"] == "match" and again == pytest.approx(served, abs=1e-6)
    serve("truncate:64")
    truth, _, _ = run("--no-cache")
    assert abs(truth - served) > 0.01  # truncation at 64 tokens moves nDCG (issue 23: 0.8626 cached, 0.776 true)
    changed, record, _ = run()
    assert record["served_identity"] != filled["served_identity"] and record["from_cache"] == 0
    assert changed == pytest.approx(truth, abs=1e-6)
    serve("unnormalised")
    _, record, _ = run()
    assert record["served_identity"] != filled["served_identity"] and record["from_cache"] == 0
    # The old, short probe keys both servers alike: the re-check of cached vectors is what refuses them.
    _blind_probe(monkeypatch)
    serve()
    _, blind, _ = run()
    serve("truncate:64")
    changed, record, err = run()
    assert record["served_identity"] == blind["served_identity"] and record["from_cache"] == 0
    assert record["cache_check"]["verdict"].startswith("stale: ") and record["cache_check"]["cosine_min"] < 0.999
    assert "emb: cached vectors stale: " in err and changed == pytest.approx(truth, abs=1e-6)


def _kill_after(url: str, proc, requests: int) -> None:
    """Kill the load fixture once it has answered `requests` POSTs (whatever the machine's speed)."""
    while proc.popen.poll() is None:
        metrics = httpx.get(f"{url}/metrics").text
        count = next(float(line.split()[-1]) for line in metrics.splitlines() if line.startswith("te_request_count"))
        if count >= requests:
            proc.popen.kill()
            return
        threading.Event().wait(0.05)


def test_server_killed_mid_ingest_keeps_finished_work_and_ends_true(
    fruit,
    tmp_path,
    monkeypatch,
    capsys,
    load_server,  # noqa: F811 (the fixture imported above)
):
    corpus = {f"d{i}": f"document {i} words" for i in range(120)}
    dataset = write_beir(tmp_path / "big", corpus, {"q1": "document words"}, [("q1", "d1", 1)])
    url, proc = load_server(service_ms=100)
    killer = threading.Thread(target=_kill_after, args=(url, proc, 5), daemon=True)
    out = tmp_path / "out"
    killer.start()
    try:
        args = ["quality", "--dataset", str(dataset), "-e", f"emb=tei@{url}?batch=2&concurrency=1"]
        code, _, err = run_cli(
            [*args, "-t", "dense?embedder=emb", "-t", "bm25", "--out", str(out), "-m", "nDCG@10"], monkeypatch, capsys
        )
    finally:
        proc.popen.kill()
    [line] = _error_lines(err)
    assert code == 3 and line.startswith("target dense?embedder=emb: ") and "emb: cannot reach POST" in line, err
    assert "ingest stopped after" in err
    results = read_results(out / "results.jsonl")
    assert results.end is not None and results.end.status == "complete"
    assert [t.status for t in results.targets] == ["failed", "ok"]
    [db] = (tmp_path / "cache" / "embeddings").glob("served-*.sqlite")
    kept = sqlite3.connect(db).execute("SELECT COUNT(*) FROM vectors").fetchone()[0]
    assert 0 < kept < 121  # the probe and the batches that finished before the kill


def test_suite_quality_entries_take_endpoints_checked_like_the_command_line(fruit, tmp_path):
    from bench.cli.suite import load_suite
    from bench.core.errors import InputError

    def suite(targets: str, entry: str = "") -> Path:
        path = tmp_path / "suite.toml"
        path.write_text(
            f'[datasets.fruit]\npath = "{fruit}"\n'
            '[endpoints]\nemb = "tei@http://127.0.0.1:9"\nrr = "cohere@http://127.0.0.1:9"\n'
            f'[targets]\n{targets}\n[[quality]]\ndataset = "fruit"\n{entry}'
        )
        return path

    [job] = load_suite(suite('served = "dense?embedder=emb"\nlocal = "bm25"')).jobs
    assert job.request.endpoints == ["emb=tei@http://127.0.0.1:9", "rr=cohere@http://127.0.0.1:9"]
    [job] = load_suite(suite('local = "bm25"', 'endpoints = ["rr"]')).jobs
    assert job.request.endpoints == ["rr=cohere@http://127.0.0.1:9"]
    with pytest.raises(InputError, match="embedder=rr is a cohere endpoint"):
        load_suite(suite('served = "dense?embedder=rr"'))
    with pytest.raises(InputError, match="embedder=emb is not an endpoint given with -e"):
        load_suite(suite('served = "dense?embedder=emb"', 'endpoints = ["rr"]'))


def test_hybrid_with_both_endpoints_measures_every_part_of_each_query(fruit, tmp_path, monkeypatch, capsys):
    embed, rerank = _tei_stub(limit=8), JsonStub({("POST", "/rerank"): _cohere()})
    args = ["quality", "--dataset", str(fruit), "-e", f"emb=tei@{embed.url}", "-e", f"rr=cohere@{rerank.url}?batch=2"]
    args += ["-t", "both=hybrid+rerank?embedder=emb&reranker=rr", "--out", str(tmp_path / "out"), "-m", "nDCG@10"]
    code, _, err = run_cli(args, monkeypatch, capsys)
    embed.stop()
    rerank.stop()
    assert code == 0, err
    results = read_results(tmp_path / "out" / "results.jsonl")
    [target] = results.targets
    assert set(target.latency_parts_ms) == {"embed_ms", "search_ms", "rerank_ms"}
    for query in results.queries:
        parts = query.parts_ms
        assert query.hits > 0 and sum(parts.values()) == pytest.approx(query.latency_ms)
    assert target.config["reranker"]["endpoint"] == "rr" and target.config["first_stage"]["dense"]["endpoint"] == "emb"


def test_ingest_counts_texts_over_the_models_input_limit_where_the_server_tells_it(tmp_path, monkeypatch, tei_fixture):
    monkeypatch.setenv("RAGBENCH_CACHE", str(tmp_path))
    server = tei_fixture(max_input_length=16)
    texts = [" ".join(["word"] * n) for n in (2, 10, 14, 15, 30, 60)]
    over = sum(server.backend.token_count(t) > 16 for t in texts)  # the model's own tokenizer, specials in
    assert 0 < over < len(texts)
    encoder = Encoder(open_endpoint(parse_endpoint_spec(f"e=tei@{server.url}?truncate=true&batch=4")), cache=False)
    encoder.embed(texts, "ingest", lengths=True)
    block = encoder.blocks()["ingest"]
    assert (block["over_limit"], block["over_limit_by"]) == (over, "TEI /tokenize vs /info max_input_length 16")
    # A server that tells no input limit (the stub's /info has none) is not counted, and the block says so.
    encoder = Encoder(_mocked(f"e=tei@{MOCK}", _tei_routes(limit=64)), cache=False)
    encoder.embed(texts, "ingest", lengths=True)
    block = encoder.blocks()["ingest"]
    assert (block["over_limit"], block["over_limit_by"]) == (None, "not counted: TEI /info gives no max_input_length")


def test_a_shared_embedder_is_credited_to_every_target_that_read_its_vectors(fruit, tmp_path, monkeypatch, capsys):
    """Two targets over one embedder in one run: the second reads the corpus from the cache the first filled, and
    its ingest carries the first's measured cost (`shared with dense`) instead of '–'; a later run's cache hits
    are said to come from an earlier run."""
    from bench.report.quality_frontier import frontier_rows

    stub = _tei_stub(limit=4)
    args = ["quality", "--dataset", str(fruit), "-e", f"emb=tei@{stub.url}?batch=4", "-m", "nDCG@10"]
    args += ["-t", "dense=dense?embedder=emb", "-t", "hybrid=hybrid?embedder=emb", "--hourly-usd", "3.6"]
    runs = {}
    for run in ("first", "again"):
        code, _, err = run_cli([*args, "--out", str(tmp_path / run)], monkeypatch, capsys)
        assert code == 0, err
        runs[run] = read_results(tmp_path / run / "results.jsonl")
    stub.stop()
    dense, hybrid = (t.cost_blocks["ingest"] for t in runs["first"].targets)
    assert (dense["from_cache"], dense["from_earlier_run"], dense["shared"], dense["requests"]) == (0, 0, [], 2)
    [shared] = hybrid["shared"]
    assert (hybrid["from_cache"], hybrid["from_earlier_run"], hybrid["requests"], hybrid["texts_per_s"]) == (
        6,
        0,
        0,
        None,
    )
    assert (shared["with"], shared["phase"], shared["texts"], shared["requests"]) == ("dense", "ingest", 6, 2)
    assert shared["texts_per_s"] == pytest.approx(dense["texts_per_s"], rel=1e-9)
    header, rows = frontier_rows(runs["first"])
    ingest, usd_texts = header.index("ingest texts/s"), header.index("$ per 1M texts")
    assert rows[1][ingest].endswith("(shared with dense)") and rows[0][ingest] != "–"
    assert rows[1][ingest].split()[0] == rows[0][ingest]  # the same rate, credited
    expected = 3.6 / 3600 / dense["texts_per_s"] * 1e6
    assert float(rows[0][usd_texts]) == pytest.approx(expected, abs=1e-4)
    # Both take part in the ingest comparison at the same rate: the better on the measure alone is optimal on it
    # (was: dense optimal whatever its quality, hybrid having no ingest figure).
    best = max(float(r[1]) for r in rows)
    assert {r[0] for r in rows if "ingest texts/s" in r[-1]} == {r[0] for r in rows if float(r[1]) == best}
    again_dense = runs["again"].targets[0].cost_blocks["ingest"]
    assert (again_dense["from_cache"], again_dense["from_earlier_run"], again_dense["shared"]) == (6, 6, [])
    assert frontier_rows(runs["again"])[1][0][ingest] == "– (from an earlier run's cache)"


def _openai_routes(usage: bool) -> dict[tuple[str, str], object]:
    """An OpenAI-shaped /v1/embeddings; with `usage`, each answer reports 3 prompt tokens per input."""

    def embed(raw: bytes):
        inputs = json.loads(raw)["input"]
        data = [{"index": i, "embedding": [len(t), sum(map(ord, t)) % 7, 1.0]} for i, t in enumerate(inputs)]
        return 200, {"data": data, **({"usage": {"prompt_tokens": 3 * len(inputs)}} if usage else {})}

    return {("POST", "/v1/embeddings"): embed}


def test_openai_tokens_come_from_usage_else_the_tokenizer_given_and_say_which(tmp_path, monkeypatch):
    from tokenizers import Tokenizer

    from tests.harness.models import minilm_path

    monkeypatch.setenv("RAGBENCH_CACHE", str(tmp_path))
    texts = ["alpha", "beta gamma", "delta epsilon zeta"]
    tokenizer = minilm_path() / "tokenizer.json"
    blocks = {}
    for name, usage, extra in (
        ("usage", True, ""),
        ("none", False, ""),
        ("counted", False, f"&tokenizer={tokenizer}"),
    ):
        encoder = Encoder(_mocked(f"e=openai@{MOCK}/v1?model=m{extra}", _openai_routes(usage)), cache=False)
        encoder.embed(texts, "ingest")
        blocks[name] = encoder.blocks()["ingest"]
        encoder.close()
    assert blocks["usage"]["tokens"] == 9 and "usage.prompt_tokens" in blocks["usage"]["tokens_by"]
    assert blocks["none"]["tokens"] is None and blocks["none"]["tokens_by"].startswith("not reported")
    expected = sum(len(Tokenizer.from_file(str(tokenizer)).encode(t).ids) for t in texts)
    assert blocks["counted"]["tokens"] == expected and str(tokenizer) in blocks["counted"]["tokens_by"]
    assert blocks["counted"]["tokens_per_s"] > 0
    with pytest.raises(UserError, match="tokenizer="):
        open_endpoint(parse_endpoint_spec(f"e=openai@{MOCK}/v1?model=m&tokenizer={tmp_path / 'missing.json'}"))

"""Hostile answers on every API-client path (an embed client, a rerank client, load's preflight, quality's
ingest, the HTTP layer the targets and doctor share): an answer trickled a byte at a time ends with the timeout
error at the whole request's deadline, JSON nested too deeply to parse and JSON `true` where a number belongs
are each one line naming the bad answer, never a hang, a traceback or a number."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bench.core.errors import ServerError
from bench.core.http import HttpClient, Reply, ServerUnreachable
from bench.endpoints import open_endpoint, parse_endpoint_spec
from bench.results.store import read_results
from tests.harness.beir import write_beir
from tests.harness.cli import CliResult, run_cli
from tests.harness.stubs import JsonStub, RawBody, Trickle

DEADLINE_S = 1.0
# A valid answer trickled a byte every EVERY_S, padded to TRICKLED bytes (two minutes): a client bounded per read,
# not per request, would wait it out and succeed, and these tests would fail.
EVERY_S = 0.25
TRICKLED = 480
DEEP = RawBody("application/json", b"[" * 100_000)
# The hang check's limit, half the trickle (60 s). The margin: a passing command ends in ~1-7 s on an idle machine
# (each trickled request at DEADLINE_S, plus load's worker start and idle probes; the whole file of 26 tests took
# 94 s under two CPU-bound neighbours at load average 8-12); the limit leaves ~8x the idle time (load
# average 6-8 once took the 7 s past a former 30 s limit), while a client bounded per read, the bug, needs the whole
# trickle (120 s) for one request.
HANG_S = TRICKLED * EVERY_S / 2
TIMED_OUT = f"within {DEADLINE_S:g} s (the whole request's timeout)"
TOO_DEEP = "answered JSON nested too deeply to read"
WRONG_SHAPE = "answered JSON of an unexpected shape"


def _vectors(raw: bytes, value: Any = 0.25) -> dict[str, Any]:
    texts = json.loads(raw)["input"]
    return {"data": [{"index": i, "embedding": [value, 0.5]} for i in range(len(texts))]}


def _scores(raw: bytes, value: Any = 0.25) -> dict[str, Any]:
    documents = json.loads(raw)["documents"]
    return {"results": [{"index": i, "relevance_score": value} for i in range(len(documents))]}


def _answering(answer: Callable[..., dict[str, Any]], fault: str):
    """A route answering `answer` for the request, made hostile by `fault`."""

    def route(raw: bytes):
        if fault == "trickle":
            return 200, Trickle(json.dumps(answer(raw)).encode().ljust(TRICKLED), EVERY_S)  # JSON ends in spaces
        if fault == "deep":
            return 200, DEEP
        return 200, answer(raw, True)  # fault "true": a boolean where a number belongs

    return route


FAULTS = {"trickle": TIMED_OUT, "deep": TOO_DEEP, "true": WRONG_SHAPE}


def _ended(started: float) -> None:
    """A hang check, not a speed target: the request ended long before the trickled answer would have."""
    assert time.monotonic() - started < HANG_S


def _load(stub: JsonStub, tmp_path: Path, ragbench: Callable[..., CliResult]) -> CliResult:
    """`ragbench load` of one short point against `stub`'s embeddings, ended within its hang check; stops `stub`."""
    started = time.monotonic()
    spec = f"x=openai@{stub.url}/v1?model=m"
    result = ragbench(
        "load", "-e", spec, "--duration", "0.2s", "--timeout", f"{DEADLINE_S:g}s", "--out", tmp_path / "out"
    )
    _ended(started)
    stub.stop()
    return result


def _dense_quality(stub: JsonStub, tmp_path: Path, ragbench: Callable[..., CliResult], *extra: str) -> CliResult:
    """`ragbench quality` of a dense target on `stub`'s embeddings over two documents."""
    dataset = write_beir(tmp_path / "tiny", {"d1": "apple", "d2": "banana"}, {"q1": "apple"}, [("q1", "d1", 1)])
    spec = f"emb=openai@{stub.url}/v1?model=m&timeout={DEADLINE_S:g}s"
    return ragbench(
        "quality", "--dataset", dataset, "-e", spec, "-t", "dense?embedder=emb", "--out", tmp_path / "o", *extra
    )


@pytest.mark.parametrize("fault", FAULTS)
def test_embed_client(fault):
    stub = JsonStub({("POST", "/v1/embeddings"): _answering(_vectors, fault)})
    endpoint = open_endpoint(parse_endpoint_spec(f"e=openai@{stub.url}/v1?model=m&timeout={DEADLINE_S:g}s"))
    started = time.monotonic()
    with pytest.raises(ServerError) as failed:
        endpoint.embed(["one text"])
    _ended(started)
    stub.stop()
    assert FAULTS[fault] in str(failed.value) and "\n" not in str(failed.value)
    assert isinstance(failed.value, ServerUnreachable) == (fault == "trickle")


@pytest.mark.parametrize("fault", FAULTS)
def test_rerank_client(fault):
    stub = JsonStub({("POST", "/rerank"): _answering(_scores, fault)})
    endpoint = open_endpoint(parse_endpoint_spec(f"r=cohere@{stub.url}?timeout={DEADLINE_S:g}s"))
    started = time.monotonic()
    with pytest.raises(ServerError) as failed:
        endpoint.rerank("query", ["a text", "another text"])
    _ended(started)
    stub.stop()
    assert FAULTS[fault] in str(failed.value) and "\n" not in str(failed.value)


@pytest.mark.parametrize("fault", FAULTS)
def test_load_preflight(fault, tmp_path, ragbench):
    stub = JsonStub({("POST", "/v1/embeddings"): _answering(_vectors, fault)})
    code, _, err = _load(stub, tmp_path, ragbench)
    assert code == 2 and err.count("\n") == 1 and FAULTS[fault] in err, err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("fault", FAULTS)
def test_quality_ingest(fault, tmp_path, cache_dir, ragbench):
    stub = JsonStub({("POST", "/v1/embeddings"): _answering(_vectors, fault)})
    started = time.monotonic()
    code, _, err = _dense_quality(stub, tmp_path, ragbench)
    _ended(started)
    stub.stop()
    errors = [line for line in err.splitlines() if line.startswith("ragbench: error:")]
    # exit 2 when the first request is the cache's probe (before anything is measured), 3 when it is a batch
    assert code in (2, 3) and len(errors) == 1 and FAULTS[fault] in errors[0], err
    assert "Traceback" not in err


@pytest.mark.parametrize("fault", FAULTS)
def test_quality_rerank_stage(fault, tmp_path, monkeypatch, capsys):
    dataset = write_beir(tmp_path / "tiny", {"d1": "apple", "d2": "banana"}, {"q1": "apple"}, [("q1", "d1", 1)])
    stub = JsonStub({("POST", "/rerank"): _answering(_scores, fault)})
    spec = f"rr=cohere@{stub.url}?timeout={DEADLINE_S:g}s"
    started = time.monotonic()
    code, _, err = run_cli(
        [
            "quality",
            "--dataset",
            str(dataset),
            "-e",
            spec,
            "-t",
            "bm25+rerank?reranker=rr",
            "--out",
            str(tmp_path / "o"),
        ],
        monkeypatch,
        capsys,
    )
    _ended(started)
    stub.stop()
    assert code == 3 and "Traceback" not in err, err
    if fault == "trickle":  # a reranker that gives no answer ends the target (bench/targets/base.py), as dense does
        [closing] = [line for line in err.splitlines() if line.startswith("ragbench: error:")]
        assert "ended part-way after 0 queries" in closing and TIMED_OUT in closing, err
        return
    assert "1 of 1 queries failed" in err, err
    [query] = read_results(tmp_path / "o" / "results.jsonl").queries
    assert query.error is not None and FAULTS[fault] in query.error and "\n" not in query.error


@pytest.mark.parametrize("head", [False, True], ids=["body", "headers"])
def test_the_http_layer_of_targets_and_doctor_ends_a_trickle_at_its_deadline(head):
    """Open WebUI, LightRAG, doctor and the meter's client are HttpClients: a trickled status line and headers
    end at the deadline too, and so does a streamed body read after the request returned."""
    answer = Trickle(b'{"status": "healthy"}'.ljust(TRICKLED), EVERY_S, head=head)
    stub = JsonStub({("GET", "/health"): (200, answer), ("GET", "/stream"): (200, answer)})
    client = HttpClient("LightRAG at stub", stub.url, timeout_s=DEADLINE_S)
    started = time.monotonic()
    with pytest.raises(ServerUnreachable, match=re.escape(f"no complete answer to GET /health {TIMED_OUT}")):
        client.json("GET", "/health")
    _ended(started)
    if not head:
        started = time.monotonic()
        with pytest.raises(Exception, match=r"timed out|deadline"), client.httpx.stream("GET", "/stream") as streamed:
            time.sleep(DEADLINE_S / 2)  # the deadline runs from the request's start, not from the first read
            for _ in streamed.iter_raw():
                pass
        _ended(started)
    stub.stop()


def test_an_error_status_with_a_deep_body_is_one_line():
    stub = JsonStub({("GET", "/health"): (500, DEEP)})
    with pytest.raises(ServerError, match=r"^LightRAG at stub: HTTP 500 from GET /health: \[\[\[") as failed:
        HttpClient("LightRAG at stub", stub.url, timeout_s=DEADLINE_S).json("GET", "/health")
    stub.stop()
    assert "\n" not in str(failed.value)


def test_an_endpoint_timeout_is_checked_with_its_spec_and_refused_by_load(tmp_path, monkeypatch, capsys):
    from bench.core.errors import UserError

    with pytest.raises(UserError, match=r"endpoint e: option timeout= 'soon': expected a positive duration"):
        parse_endpoint_spec("e=tei@http://127.0.0.1:9?timeout=soon")
    code, _, err = run_cli(
        ["load", "-e", "x=tei@http://127.0.0.1:9?timeout=5s", "--duration", "0.2s", "--out", str(tmp_path / "o")],
        monkeypatch,
        capsys,
    )
    assert code == 2 and "option timeout= is not used by a load: its --timeout bounds every request" in err, err


@pytest.mark.parametrize("kind", [float, (int, float), (int, float, type(None))])
def test_a_boolean_is_not_a_number_in_any_field_read(kind):
    """Reply.get, the one typed read of a target's answer (Open WebUI's distances take a number or null)."""
    reply = Reply("Open WebUI at stub", "POST /api/v1/retrieval/query/doc", 200, {"distances": [[True]]}, "")
    with pytest.raises(ServerError, match=r"distances\[0\]\[0\] is a boolean, not"):
        reply.get("distances", 0, 0, kind=kind)
    assert reply.get("distances", 0, 0, kind=(bool, float)) is True


def test_an_answer_parsed_just_within_the_nesting_limit_is_still_one_line_when_shown():
    """JSON that parsed near Python's limit can be too deep to show from deeper in the stack: still one line."""
    from bench.endpoints.client import HttpEndpoint

    endpoint = HttpEndpoint("e", "http://127.0.0.1:9")
    body = json.loads("[" * 900 + "]" * 900)

    def deeper(frames: int) -> ServerError:
        return deeper(frames - 1) if frames else endpoint.shape_error("/embed", "[[float]]", body)

    assert (
        str(deeper(200))
        == "e: /embed answered JSON of an unexpected shape (expected [[float]]): '(nested too deeply to show)'"
    )


def test_load_after_its_preflight_ends_a_trickle_at_its_deadline(tmp_path, ragbench):
    """The API client's preflight is answered; every request after it (the idle probes, the measured ones, the
    drain's) is trickled: each ends at --timeout, so the command ends with its point failed, never a hang."""
    answered = []

    def route(raw: bytes):
        answered.append(raw)
        return (200, _vectors(raw)) if len(answered) == 1 else _answering(_vectors, "trickle")(raw)

    stub = JsonStub({("POST", "/v1/embeddings"): route})
    code, _, err = _load(stub, tmp_path, ragbench)
    assert code == 3 and "Traceback" not in err, err
    assert read_results(tmp_path / "out" / "results.jsonl").load_points[0].status == "failed"


@pytest.mark.parametrize("cache", [True, False])
def test_a_stopped_ingest_says_its_texts_are_cached_only_where_the_cache_is_on(cache, tmp_path, cache_dir, ragbench):
    answered = []

    def route(raw: bytes):  # the cache key's probe is answered, the ingest's batch trickled
        answered.append(raw)
        return (200, _vectors(raw)) if len(answered) == 1 else _answering(_vectors, "trickle")(raw)

    stub = JsonStub({("POST", "/v1/embeddings"): route})
    code, _, err = _dense_quality(stub, tmp_path, ragbench, *([] if cache else ["--no-cache"]))
    stub.stop()
    assert code == 3 and "ingest stopped after 0 of 2 texts" in err, err
    assert ("those are cached" in err) == cache

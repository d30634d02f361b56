"""The traffic trace: what `ragbench meter --record` writes, and how a trace file is read and refused."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from bench.core.errors import InputError
from bench.endpoints.meter import Meter
from bench.endpoints.meter_trace import (
    MAX_TOKENS,
    CallKind,
    TraceCall,
    TraceUnit,
    TraceWriter,
    call_shape,
    read_trace,
)
from bench.endpoints.trace_schema import trace_schema
from tests.endpoints.test_meter import echo, upstream
from tests.harness.stubs import Whole


def test_the_meter_records_each_call_shape_never_its_texts(tmp_path: Path):
    trace = tmp_path / "trace.jsonl"
    secret = "a confidential paragraph"
    with upstream(Whole(echo)) as url, Meter({"embedding": url, "rerank": url}, record=trace) as meter:
        httpx.post(f"{meter.url}/embedding/embed", json={"inputs": [secret, "ab", "abcd"]}, timeout=10)
        httpx.post(f"{meter.url}/rerank/rerank", json={"query": "q?", "texts": ["x" * 10, "y" * 7]}, timeout=10)
    text = trace.read_text()
    assert secret not in text and "xxxxxxxxxx" not in text
    calls = read_trace(trace)
    assert [(c.route, c.kind, c.lengths, c.query, c.status) for c in calls] == [
        ("embedding", CallKind.EMBED, (len(secret), 2, 4), None, 201),
        ("rerank", CallKind.RERANK, (10, 7), 2, 201),
    ]
    assert calls[0].at <= calls[1].at and all(c.latency > 0 and c.hash for c in calls)
    assert json.loads(text.splitlines()[0]) == {"format": "ragbench-trace", "version": 1, "hash": "hmac-sha256"}


def test_the_writer_holds_a_call_until_every_earlier_one_ended(tmp_path: Path):
    path = tmp_path / "t.jsonl"
    writer = TraceWriter(path, origin=100.0)
    writer.begin(101.0)
    writer.begin(102.0)
    writer.end(102.0, TraceCall(2.0, "r", CallKind.EMBED, (1,)))  # ended first, began second
    assert len(path.read_text().splitlines()) == 1  # held: the call that began at 101 is in flight
    writer.end(101.0, TraceCall(1.0, "r", CallKind.EMBED, (1,)))
    writer.close()
    assert [c.at for c in read_trace(path)] == [1.0, 2.0]


def test_call_shapes():
    assert call_shape(b'{"input": "abc"}') == (CallKind.EMBED, (3,), None)
    assert call_shape(b'{"query": "qq", "documents": [{"text": "abcd"}]}') == (CallKind.RERANK, (4,), 2)
    assert call_shape(b'{"messages": [{"role": "user", "content": "hi"}]}') == (CallKind.LLM, (2,), None)
    assert call_shape(b"not json") is None


def test_a_csv_imports_with_the_same_columns(tmp_path: Path):
    path = tmp_path / "gateway.csv"
    path.write_text(
        "at,route,kind,texts,unit,lengths,query,status,latency\n0,emb,embed,2,tokens,12;40,,200,0.01\n"
        "0.5,rr,rerank,1,tokens,300,9,200,0.2\n"
    )
    calls = read_trace(path)
    assert calls[0] == TraceCall(0.0, "emb", CallKind.EMBED, (12, 40), TraceUnit.TOKENS, latency=0.01)
    assert calls[1].query == 9 and calls[1].lengths == (300,)


@pytest.mark.parametrize(
    ("lines", "where", "says"),
    [
        (
            [
                '{"at": 1, "route": "e", "kind": "embed", "lengths": [1]}',
                '{"at": 0.5, "route": "e", "kind": "embed", "lengths": [1]}',
            ],
            2,
            "out of order",
        ),
        (['{"at": 0, "route": "e", "kind": "embed", "lengths": [1]', ""], 1, "not a JSON object"),
        ([f'{{"at": 0, "route": "e", "kind": "embed", "unit": "tokens", "lengths": [{MAX_TOKENS + 1}]}}'], 1, "length"),
        (['{"at": 0, "route": "e", "kind": "embed", "texts": 2, "lengths": [1]}'], 1, "texts 2 but 1"),
        (['{"at": 0, "route": "e", "kind": "chat", "lengths": [1]}'], 1, "kind 'chat': expected one of embed, rerank"),
        (['{"at": 0, "route": "e", "lengths": [1]}'], 1, "kind: missing (one of embed, rerank, llm)"),
        (['{"at": 0, "route": "e", "kind": "embed", "unit": "bytes", "lengths": [1]}'], 1, "unit 'bytes': expected"),
        (['{"at": -1, "route": "e", "kind": "embed", "lengths": [1]}'], 1, "at -1: expected a number from 0 to"),
        (['{"at": 0, "route": "e", "kind": "embed", "lengths": [1.5]}'], 1, "length 1.5: expected an integer from 0"),
        # json reads Infinity as a float: int(inf) is an OverflowError, not a ValueError (was a traceback)
        (['{"at": 0, "route": "e", "kind": "embed", "lengths": [Infinity]}'], 1, "length inf: expected an integer"),
        (['{"at": 0, "route": "e", "kind": "embed", "lengths": [1], "status": -Infinity}'], 1, "status -inf"),
        (
            ['{"at": 0, "route": "e", "kind": "embed", "lengths": [1], "status": "x"}'],
            1,
            "expected an integer from 100",
        ),
        (['{"format": "ragbench-trace", "version": 9}'], 1, "version 1"),
        # int() reads other scripts' digits (fullwidth 200 is 200): a trace's numbers are ASCII (issue 50 hostile pass)
        (['{"at": 0, "route": "e", "kind": "embed", "lengths": [1], "status": "\uff12\uff10\uff10"}'], 1, "an integer"),
    ],
)
def test_a_bad_trace_is_one_line_with_its_place(tmp_path: Path, lines: list[str], where: int, says: str):
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as caught:
        read_trace(path)
    assert caught.value.line == where and says in str(caught.value) and "\n" not in str(caught.value)


def test_an_empty_trace_is_refused(tmp_path: Path):
    path = tmp_path / "empty.jsonl"
    path.write_text('{"format": "ragbench-trace", "version": 1}\n')
    with pytest.raises(InputError, match="no call"):
        read_trace(path)


def test_the_published_schema_is_the_generated_one():
    published = Path(__file__).parents[2] / "docs" / "trace.schema.json"
    assert json.loads(published.read_text()) == trace_schema()


def test_an_earlier_trace_is_replaced_only_once_a_call_is_recorded(tmp_path: Path):
    """Issue 50's hostile pass: `ingest --record T --overwrite` whose target check failed (exit 2, nothing measured)
    had already replaced the earlier trace T with a header alone."""
    earlier = tmp_path / "earlier.jsonl"
    earlier.write_text('{"format": "ragbench-trace", "version": 1}\n{"at": 0, "route": "e", "kind": "embed"}\n')
    before = earlier.read_text()
    TraceWriter(earlier, 0.0).close()  # the run stopped before any call
    assert earlier.read_text() == before
    fresh = tmp_path / "fresh.jsonl"
    TraceWriter(fresh, 0.0).close()  # a new trace with no call: its header alone, as before
    assert json.loads(fresh.read_text())["format"] == "ragbench-trace"
    writer = TraceWriter(earlier, 0.0)
    writer.begin(1.0)
    writer.end(1.0, TraceCall(0.5, "e", CallKind.EMBED, (3,)))
    writer.close()
    assert [json.loads(line)["route"] for line in earlier.read_text().splitlines()[1:]] == ["e"]

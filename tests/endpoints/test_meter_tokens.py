"""`ragbench meter --record FILE --tokenizer PATH`: each text's length in the tokenizer's tokens, unit `tokens`."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from bench.cli.meter_cmd import _token_measure
from bench.datasets.texts import Tokenizer
from bench.endpoints.meter import Meter
from bench.endpoints.meter_trace import CallKind, TraceUnit, call_shape, read_trace
from tests.endpoints.test_meter import echo, upstream
from tests.harness.cli import run_cli
from tests.harness.models import minilm_path
from tests.harness.stubs import Whole


def test_a_trace_counts_each_texts_tokens_with_the_tokenizer(tmp_path: Path):
    trace = tmp_path / "trace.jsonl"
    texts = ["numpy.linalg.norm(x, ord=2) returns the spectral norm", "ab", "an array"]
    measure = _token_measure(minilm_path(), trace)
    assert measure is not None
    with upstream(Whole(echo)) as url, Meter({"embedding": url, "rerank": url}, record=trace) as meter:
        assert meter.trace is not None
        meter.trace.count_tokens_with(measure)
        httpx.post(f"{meter.url}/embedding/embed", json={"inputs": texts}, timeout=10)
        httpx.post(f"{meter.url}/rerank/rerank", json={"query": "what norm?", "texts": texts[:2]}, timeout=10)
    embed, rerank = read_trace(trace)
    tokens = Tokenizer(minilm_path()).lengths(texts).tolist()
    assert embed.unit == rerank.unit == TraceUnit.TOKENS
    assert list(embed.lengths) == tokens and tokens != [len(t) for t in texts]
    assert list(rerank.lengths) == tokens[:2] and rerank.query == Tokenizer(minilm_path()).lengths(["what norm?"])[0]


def test_call_shapes_measure_texts_and_count_token_ids():
    def words(text: str) -> int:
        return len(text.split())

    assert call_shape(b'{"input": ["a b c", [101, 7, 102]]}', words) == (CallKind.EMBED, (3, 3), None)
    assert call_shape(b'{"query": "q r", "documents": [{"text": "x y"}]}', words) == (CallKind.RERANK, (2,), 2)


@pytest.mark.parametrize(
    "flags,says",
    [
        (["--tokenizer", "/nonexistent/model"], "give --record FILE too"),
        (["--record", "TRACE", "--tokenizer", "/nonexistent/model"], "tokenizer.json not found"),
        (["--record", "TRACE", "--tokenizer", "NOT_A_TOKENIZER"], "not a tokenizer.json"),
    ],
)
def test_a_bad_tokenizer_is_one_line_and_exit_2(flags, says, tmp_path, monkeypatch, capsys):
    bad = tmp_path / "tokenizer.json"
    bad.write_text('{"not": "a tokenizer"}')
    flags = [{"TRACE": str(tmp_path / "t.jsonl"), "NOT_A_TOKENIZER": str(bad)}.get(f, f) for f in flags]
    code, _stdout, stderr = run_cli(["meter", "--upstream", "e=http://127.0.0.1:9", *flags], monkeypatch, capsys)
    lines = stderr.strip().splitlines()
    assert code == 2 and len(lines) == 1 and says in lines[0], stderr
    assert not (tmp_path / "t.jsonl").exists()  # refused before the meter listens or opens its trace

"""Endpoint specs: what parses, and the one clear line for what does not."""

from __future__ import annotations

import pytest

from bench.core.errors import UserError
from bench.endpoints import open_endpoint, parse_endpoint_spec
from bench.endpoints.cohere import CohereReranker, rerank_url
from bench.endpoints.openai import OpenAIEmbedder
from bench.endpoints.tei import TeiEmbedder


def test_parses_kind_url_and_options():
    spec = parse_endpoint_spec("lite=openai@http://127.0.0.1:4000/v1/?model=minilm&key_env=LITE_KEY&encoding=base64")
    assert (spec.name, spec.kind, spec.url) == ("lite", "openai", "http://127.0.0.1:4000/v1")
    assert spec.params == {"model": "minilm", "key_env": "LITE_KEY", "encoding": "base64"}
    assert not spec.is_rerank


def test_in_process_kinds_take_no_url():
    spec = parse_endpoint_spec("ref=reference-rerank?model=/models/ce")
    assert (spec.kind, spec.url, spec.params, spec.is_rerank) == (
        "reference-rerank",
        None,
        {"model": "/models/ce"},
        True,
    )
    assert parse_endpoint_spec("ref=reference").params == {}


def test_builds_the_client_of_each_kind(monkeypatch):
    monkeypatch.setenv("SOME_KEY", "secret")
    tei = open_endpoint(
        parse_endpoint_spec("t=tei@http://h:3000?normalize=false&dimensions=128&truncation_direction=left")
    )
    assert isinstance(tei, TeiEmbedder)
    assert tei.wire.options == {"normalize": False, "truncation_direction": "Left", "dimensions": 128}
    openai = open_endpoint(parse_endpoint_spec("o=openai@http://h:4000/v1?model=m&key_env=SOME_KEY&encoding=none"))
    assert isinstance(openai, OpenAIEmbedder) and openai.wire.encoding_format is None
    assert openai.http.client.headers["Authorization"] == "Bearer secret"
    cohere = open_endpoint(parse_endpoint_spec("c=cohere@http://h:4000/v2?model=r"))
    assert isinstance(cohere, CohereReranker) and cohere.wire.url == "http://h:4000/v2/rerank"


def test_rerank_url_keeps_a_full_route_and_completes_a_base():
    assert rerank_url("http://h:7997") == "http://h:7997/rerank"
    assert rerank_url("http://h:4000/v1/rerank/") == "http://h:4000/v1/rerank"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("x=milvus@http://h:1", "endpoint x: unknown kind 'milvus'"),
        ("openai@http://h:1?model=m", "expected NAME=KIND@URL"),
        ("bad name=tei@http://h:1", "expected NAME=KIND@URL"),
        ("x=tei@ftp://h:1", "endpoint x: tei needs an http(s) URL"),
        ("x=tei", "endpoint x: tei needs an http(s) URL"),
        ("x=openai@http://h:1", "endpoint x: openai needs model=..."),
        ("x=tei@http://h:1?colour=red", "endpoint x: unknown option(s) colour"),
        ("x=tei@http://h:1?normalize", "endpoint x: option 'normalize' is not option=value"),
        ("x=reference@http://h:1", "endpoint x: reference runs in-process and takes no URL"),
    ],
)
def test_malformed_specs_raise_one_line_naming_the_endpoint(text, needle):
    with pytest.raises(UserError) as info:
        parse_endpoint_spec(text)
    assert needle in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("x=tei@http://h:1?dimensions=-3", "option dimensions='-3' is not a positive integer"),
        ("x=tei@http://h:1?normalize=maybe", "option normalize='maybe' is not a boolean"),
        ("x=openai@http://h:1?model=m&key_env=RAGBENCH_TEST_UNSET_KEY", "RAGBENCH_TEST_UNSET_KEY (key_env) is not set"),
        ("x=reference?model=/nonexistent/model", "endpoint x: model /nonexistent/model: not a local directory"),
    ],
)
def test_bad_option_values_name_the_endpoint(text, needle, monkeypatch):
    monkeypatch.delenv("RAGBENCH_TEST_UNSET_KEY", raising=False)
    with pytest.raises(UserError) as info:
        open_endpoint(parse_endpoint_spec(text))
    assert needle in str(info.value)


@pytest.mark.parametrize(
    "args",
    [
        ["load", "-e", "x=tei@http://127.0.0.1:9?normalize"],
        ["quality", "--dataset", "builtin:numpy-docs", "-t", "bm25?k1"],
    ],
)
def test_a_malformed_option_is_named_in_words_the_masking_leaves_alone(args, tmp_path, monkeypatch, capsys):
    """The error line passes through the secret masking: it must not read `is not key=***`."""
    from tests.harness.cli import run_cli

    code, _, stderr = run_cli([*args, "--out", str(tmp_path / "o")], monkeypatch, capsys)
    assert code == 2 and "is not option=value" in stderr and "***" not in stderr, stderr

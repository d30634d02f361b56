"""The transport seam threaded to the top (issue 37): `TargetOptions.transport` reaches the endpoints a target names
and the HTTP targets' own clients, so their logic is tested with httpx.MockTransport and no server."""

from __future__ import annotations

import json

import pytest

from bench.datasets import load_dataset
from bench.endpoints.spec import parse_endpoint_spec
from bench.targets.base import TargetOptions, no_progress
from bench.targets.registry import build_target, parse_target_spec
from tests.harness.stubs import JsonRoutes

INFO = {"model_id": "m", "model_sha": "s", "model_dtype": "float32", "max_client_batch_size": 64}


def _vector(text: str) -> list[float]:
    """A vector that ranks a text by its shared letters with the query: enough for a ranking to exist."""
    return [float(text.lower().count(c)) + 0.01 for c in "aeiouy"]


def test_a_dense_target_embeds_through_the_transport_it_is_given(fruit):
    tei = JsonRoutes(
        {
            ("GET", "/info"): (200, INFO),
            ("POST", "/embed"): lambda raw: (200, [_vector(t) for t in json.loads(raw)["inputs"]]),
        }
    )
    options = TargetOptions(
        endpoints={"E": parse_endpoint_spec("E=tei@http://tei.invalid")}, cache=False, transport=tei.transport()
    )
    target = build_target(parse_target_spec("dense?embedder=E"), options)
    try:
        dataset = load_dataset(fruit)
        target.prepare(dataset, no_progress)
        results = target.search(dict(list(dataset.queries.items())[:2]), 3, no_progress)
    finally:
        target.close()
    assert [r.error for r in results] == [None, None] and all(r.hits for r in results)
    embedded = [json.loads(raw)["inputs"] for method, path, raw in tei.requests if path == "/embed"]
    assert sum(len(inputs) for inputs in embedded) >= len(dataset.corpus) + 2  # the corpus, then each query


@pytest.mark.parametrize(
    ("spec", "path"), [("openwebui@http://owui.invalid", "/api/version"), ("lightrag@http://lr.invalid", "/health")]
)
def test_an_http_target_sends_through_the_transport_it_is_given(spec, path, monkeypatch):
    monkeypatch.setenv("OPENWEBUI_API_KEY", "sk-test")
    server = JsonRoutes({("GET", path): (200, {"version": "0.0.0-mock"})})
    target = build_target(parse_target_spec(spec), TargetOptions(transport=server.transport()))
    try:
        assert target.http.json("GET", path).get("version", kind=str) == "0.0.0-mock"  # type: ignore[attr-defined]
    finally:
        target.close()
    assert server.requests == [("GET", path, b"")]

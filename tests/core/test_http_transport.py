"""Client logic of the HTTP layer through httpx.MockTransport (`transport=`): answers a server would have to be
built to give (a wrong shape, a refusal, a body nested too deep, no answer at all), with no server."""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable

import httpx
import numpy as np
import pytest

from bench.core.errors import ServerError
from bench.core.http import MIB, AnswerTooLarge, BodyCap, HttpClient, HttpStatusError, ServerUnreachable, new_client
from bench.endpoints.base import embed_cap
from bench.endpoints.client import HttpEndpoint
from bench.endpoints.cohere import CohereReranker
from bench.endpoints.options import CohereOptions, TeiOptions
from bench.endpoints.spec import open_endpoint, parse_endpoint_spec
from bench.endpoints.tei import TeiEmbedder

Handler = Callable[[httpx.Request], httpx.Response]


def client(handler: Handler, key_env: str | None = None, timeout_s: float = 120.0) -> HttpClient:
    transport = httpx.MockTransport(handler)
    return HttpClient("test server", "http://test", timeout_s=timeout_s, key_env=key_env, transport=transport)


def test_new_client_sends_through_the_given_transport():
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(200, json={"ok": True})

    with new_client(5.0, {"X-Test": "1"}, "http://test", transport=httpx.MockTransport(handler)) as http:
        assert http.get("/a").json() == {"ok": True}
    assert seen == ["http://test/a"]


def test_html_where_json_was_expected_is_one_line_naming_the_request():
    http = client(lambda r: httpx.Response(200, text="<html>login</html>", headers={"content-type": "text/html"}))
    with pytest.raises(ServerError) as info:
        http.json("GET", "/api/version")
    assert "GET /api/version answered text/html, not JSON" in str(info.value) and "\n" not in str(info.value)


def test_json_nested_too_deeply_is_a_bad_answer_not_a_recursion_error():
    deep = "[" * 100_000 + "]" * 100_000
    http = client(lambda r: httpx.Response(200, text=deep, headers={"content-type": "application/json"}))
    with pytest.raises(ServerError, match="answered JSON nested too deeply to read"):
        http.json("GET", "/deep")


def test_a_field_of_the_wrong_type_names_its_path():
    http = client(lambda r: httpx.Response(200, json={"items": [{"id": 7}]}))
    reply = http.json("GET", "/items")
    with pytest.raises(ServerError, match=r"unexpected shape \(items\[0\]\.id is a number, not a string\)"):
        reply.get("items", 0, "id", kind=str)


@pytest.mark.parametrize(
    ("status", "body", "said"),
    [
        (413, {"error": "batch size 40 > maximum allowed batch size 32", "error_type": "Validation"}, "Validation"),
        (422, {"detail": [{"loc": ["body", "inputs"], "msg": "field required"}]}, "field required"),
        (429, {"error": {"message": "rate limited", "type": "rate_limit"}}, "rate_limit"),
    ],
)
def test_an_error_status_carries_the_servers_own_words(status, body, said):
    http = client(lambda r: httpx.Response(status, json=body))
    with pytest.raises(HttpStatusError) as info:
        http.call("POST", "/embed", json={})
    assert info.value.status == status and said in str(info.value) and f"HTTP {status}" in str(info.value)


def test_a_refused_key_names_its_environment_variable():
    http = client(lambda r: httpx.Response(401, json={"detail": "bad key"}), key_env="MY_KEY")
    with pytest.raises(HttpStatusError, match="the key was refused; check MY_KEY"):
        http.call("GET", "/")


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (httpx.ConnectError("refused"), "cannot connect"),
        (httpx.ReadTimeout("slow"), "no complete answer to GET / within 5 s"),
        (httpx.RemoteProtocolError("peer closed"), "connection lost, RemoteProtocolError"),
    ],
)
def test_no_http_answer_is_server_unreachable(error, said):
    def handler(request: httpx.Request) -> httpx.Response:
        raise error

    http = client(handler, timeout_s=5.0)
    with pytest.raises(ServerUnreachable, match=said):
        http.send("GET", "/")


def test_busy_answers_are_retried_after_retry_after_and_counted():
    answers = iter([429, 503, 200])

    def handler(request: httpx.Request) -> httpx.Response:
        status = next(answers)
        return httpx.Response(status, json={"ok": status == 200}, headers={"retry-after": "0"})

    endpoint = HttpEndpoint("e", "http://test", transport=httpx.MockTransport(handler))
    response, _ = endpoint.request_retrying("POST", "http://test/x", {})
    assert response.json() == {"ok": True} and endpoint.events == {"retry_429": 1, "retry_503": 1}


def tei_server(limit: int, refusal: int, message: str) -> tuple[Handler, list[int]]:
    """A TEI that takes at most `limit` inputs a request and refuses more with `refusal` and `message`."""
    sizes: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/info":
            return httpx.Response(200, json={"model_id": "m", "max_client_batch_size": 32})
        inputs = json.loads(request.content)["inputs"]
        sizes.append(len(inputs))
        if len(inputs) > limit:
            return httpx.Response(refusal, json={"error": message, "error_type": "Validation"})
        return httpx.Response(200, json=[[float(len(text)), 1.0] for text in inputs])

    return handler, sizes


@pytest.mark.parametrize(
    ("refusal", "message", "sizes"),
    [
        (422, "batch size 10 > maximum allowed batch size 4", [10, 4, 4, 2]),  # the server's maximum, read
        (413, "Payload Too Large", [10, 5, 5]),  # a proxy's refusal: halved
    ],
)
def test_tei_splits_a_refused_batch_and_keeps_every_vector_in_order(refusal, message, sizes):
    handler, sent = tei_server(5 if refusal == 413 else 4, refusal, message)
    embedder = open_endpoint(parse_endpoint_spec("t=tei@http://test?batch=10"), transport=httpx.MockTransport(handler))
    texts = ["x" * n for n in range(1, 11)]
    vectors = embedder.embed(texts).vectors
    np.testing.assert_array_equal(vectors[:, 0], np.arange(1, 11, dtype=np.float32))
    assert sent == sizes and embedder.events == {f"split_{refusal}": 1}


def test_tei_answer_of_the_wrong_length_is_a_shape_error():
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/info":
            return httpx.Response(200, json={"model_id": "m"})
        return httpx.Response(200, json=[[1.0, 0.0]])  # one vector for two texts

    embedder = TeiEmbedder("t", "http://test", TeiOptions(), httpx.MockTransport(handler))
    with pytest.raises(ServerError, match="unexpected shape"):
        embedder.embed(["a", "b"])


def test_cohere_answer_of_another_wire_shape_names_the_one_expected():
    reranker = CohereReranker(
        "c",
        "http://test",
        CohereOptions(model="m"),
        httpx.MockTransport(lambda r: httpx.Response(200, json=[{"score": 1}])),
    )
    with pytest.raises(ServerError, match=r"expected \{results: \[\{index, relevance_score\}\]\}"):
        reranker.rerank("q", ["a", "b"])


class Whitespace:
    """An answer body: `head`, then up to `chunks` MiB of whitespace, counting what was read of it."""

    def __init__(self, head: bytes, chunks: int):
        self.head, self.chunks, self.sent = head, chunks, 0

    def __iter__(self):
        yield self.head
        blank = b" " * MIB
        for _ in range(self.chunks):
            self.sent += len(blank)
            yield blank


def test_valid_vectors_then_whitespace_are_cut_at_the_embedding_cap_not_read_to_the_end():
    """Issue 33: a TEI-shaped answer of valid vectors followed by 300 MB of whitespace was read whole (6.9 GB)."""
    body = Whitespace(b"[[0.5, 0.25]]", chunks=64)

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/info":
            return httpx.Response(200, json={"model_id": "m"})
        return httpx.Response(200, content=body, headers={"content-type": "application/json"})

    embedder = TeiEmbedder("t", "http://test", TeiOptions(), httpx.MockTransport(handler))
    cap = embed_cap(1, None)
    with pytest.raises(AnswerTooLarge) as info:
        embedder.embed(["a"])
    assert f"answered more than {cap.said()}" in str(info.value) and "\n" not in str(info.value)
    assert body.sent <= cap.size + MIB  # read to the cap and one chunk past it, not to the end


def test_a_small_gzip_body_that_unpacks_past_the_cap_is_cut_too():
    packer = zlib.compressobj(wbits=31)  # gzip
    packed = b"".join(packer.compress(b"\0" * MIB) for _ in range(8)) + packer.flush()
    http = client(lambda r: httpx.Response(200, content=packed, headers={"content-encoding": "gzip"}))
    with pytest.raises(AnswerTooLarge, match=r"GET /bomb answered more than 1.0 MiB, the cap for a test answer"):
        http.send("GET", "/bomb", cap=BodyCap(MIB, "a test answer"))
    assert http.send("GET", "/bomb", cap=BodyCap(16 * MIB, "a test answer")).content == b"\0" * 8 * MIB

"""A TEI-contract fixture server (stdlib HTTP) that serves real vectors and scores from the MiniLM reference.

It follows ../shared/contracts/tei-1.9.3-openapi.json with the corrections read from TEI's code:
JSON errors `{error, error_type}` with capitalised types; plain-text errors from the HTTP layer (400 broken
JSON, 415 no content-type, 422 wrong field type, 413 payload, 401 key); too many inputs 422 since 1.9 and
413 before; 429 per *input* permit since 1.9 and for single-input requests only before; timing headers.
It also answers the OpenAI `/v1/embeddings` route and a Cohere-shaped `/v1/rerank` + `/v2/rerank`.

Faults (for identity tests) corrupt what a serving path does, each the way a real misconfiguration would:
`unnormalised`, `truncate:N`, `strip_newlines`, `prefix:TEXT`, `swap` (a different model), `dims_no_renorm`
(`dimensions` cut without re-normalising), `ignore_top_n`, `html` (an HTML page for every answer),
`wrong_shape` (valid JSON in the wrong shape), `bad_values:nan|strings|empty` (TEI's shape, wrong content:
a NaN in every vector, strings for numbers, vectors of no dimension).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from tests.harness.stubs import JsonStub, RawBody, Seen, Whole


class MiniLMBackend:
    """The reference models in-process; one lock, because two cores gain nothing from parallel torch calls."""

    def __init__(self, embed_path: Path, rerank_path: Path | None):
        import os

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from sentence_transformers import CrossEncoder, SentenceTransformer
        from tokenizers import Tokenizer

        self.lock = threading.Lock()
        self.model = SentenceTransformer(str(embed_path), device="cpu")
        # Without its Normalize module: TEI's normalize=false and the `unnormalised` fault.
        self.raw_model = SentenceTransformer(modules=[self.model[0], self.model[1]], device="cpu")
        # A different model for `swap`: the same weights with half the layers (a smaller sibling model).
        self.other_model = SentenceTransformer(str(embed_path), device="cpu")
        encoder = self.other_model[0].auto_model.encoder
        encoder.layer = encoder.layer[:3]
        self.reranker = CrossEncoder(str(rerank_path), device="cpu") if rerank_path else None
        self.tokenizer = Tokenizer.from_file(str(embed_path / "tokenizer.json"))
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()

    def token_count(self, text: str) -> int:
        return len(self.tokenizer.encode(text).ids)

    def embed(self, texts: list[str], normalize: bool, max_tokens: int, other: bool = False) -> np.ndarray:
        model = self.other_model if other else (self.model if normalize else self.raw_model)
        with self.lock:
            model.max_seq_length = max_tokens
            vectors = model.encode(texts, batch_size=32, convert_to_numpy=True)
        return np.asarray(vectors, dtype=np.float32)

    def scores(self, query: str, texts: list[str], raw: bool) -> np.ndarray:
        import torch

        with self.lock:
            activation = torch.nn.Identity() if raw else torch.nn.Sigmoid()
            values = self.reranker.predict([(query, t) for t in texts], activation_fn=activation, convert_to_numpy=True)
        return np.asarray(values, dtype=np.float32).reshape(len(texts))


@dataclass
class TeiBehaviour:
    version: str = "1.9.3"  # "1.8.x" switches batch-size errors to 413 and 429 to single-input requests only
    model_kind: str = "embedding"  # or "reranker"
    model_id: str = "sentence-transformers/all-MiniLM-L6-v2"
    max_client_batch_size: int = 32
    max_input_length: int = 512  # what real TEI reads for MiniLM (its position embeddings), not ST's 256
    auto_truncate: bool = True
    max_concurrent_requests: int = 512
    # A request with HOLD_HEADER keeps its permits until the test sets `server.release` (overload made exact);
    # with this, the server sets it itself at its first refusal, so a client's retry then finds a free permit.
    release_on_refusal: bool = False
    api_key: str | None = None
    payload_limit: int = 2_000_000
    info_route: bool = True  # False: /info answers 404, as behind a proxy that forwards only /embed
    faults: tuple[str, ...] = ()

    @property
    def before_19(self) -> bool:
        major, minor = (int(x) for x in self.version.split(".")[:2])
        return (major, minor) < (1, 9)

    def fault(self, name: str) -> str | None:
        """The fault's argument ('' when it has none), or None when the fault is off."""
        for f in self.faults:
            key, _, arg = f.partition(":")
            if key == name:
                return arg
        return None


@dataclass
class Counters:
    requests: int = 0
    success: int = 0
    failures: dict[str, int] = field(default_factory=dict)
    in_flight_inputs: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


HOLD_HEADER = "x-fixture-hold"


class _Refusal(Exception):
    def __init__(self, status: int, body: Any, plain: bool = False, error_type: str = ""):
        self.status, self.body, self.plain, self.error_type = status, body, plain, error_type


class _Call:
    """One request to the fixture, answered through the shared JSON-reply handler (tests/harness/stubs.py): the
    route methods below leave their answer in `reply`."""

    def __init__(self, server: TeiFixtureServer, seen: Seen):
        self.server, self.headers, self.path, self.raw = server, seen.headers, seen.path, seen.body
        self.reply: tuple[int, RawBody] = (500, RawBody("text/plain", b"no answer"))

    # -- plumbing -------------------------------------------------------------------------------
    def _send(self, status: int, payload: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        self.reply = (status, RawBody(content_type, payload, tuple((headers or {}).items())))

    def _json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        if self.server.behaviour.fault("html") is not None:
            self._send(200, b"<!doctype html><html><body><h1>Welcome</h1></body></html>", "text/html; charset=utf-8")
            return
        self._send(status, json.dumps(body).encode(), "application/json", headers)

    def _error(self, refusal: _Refusal, openai_route: bool) -> None:
        counters = self.server.counters
        with counters.lock:
            counters.failures[refusal.error_type or str(refusal.status)] = (
                counters.failures.get(refusal.error_type or str(refusal.status), 0) + 1
            )
        if self.server.behaviour.release_on_refusal:
            self.server.release.set()
        if refusal.plain:
            self._send(refusal.status, str(refusal.body).encode(), "text/plain; charset=utf-8")
        elif openai_route and isinstance(refusal.body, dict) and "error" in refusal.body:
            self._json(
                refusal.status,
                {"message": refusal.body["error"], "code": refusal.status, "type": refusal.body["error_type"]},
            )
        else:
            self._json(refusal.status, refusal.body)

    def _refuse(self, status: int, message: str, error_type: str) -> _Refusal:
        return _Refusal(status, {"error": message, "error_type": error_type}, error_type=error_type)

    def _body(self) -> dict[str, Any]:
        behaviour = self.server.behaviour
        if behaviour.api_key and self.headers.get("Authorization") != f"Bearer {behaviour.api_key}":
            raise _Refusal(401, "Unauthorized", plain=True)
        raw = self.raw
        if len(raw) > behaviour.payload_limit:
            raise _Refusal(413, "Failed to buffer the request body: length limit exceeded", plain=True)
        if "application/json" not in (self.headers.get("Content-Type") or ""):
            raise _Refusal(415, "Expected request with `Content-Type: application/json`", plain=True)
        try:
            body = json.loads(raw)
        except ValueError as exc:
            raise _Refusal(400, f"Failed to parse the request body as JSON: {exc}", plain=True) from None
        if not isinstance(body, dict):
            raise _Refusal(
                422,
                "Failed to deserialize the JSON body into the target type: invalid type: expected struct",
                plain=True,
            )
        return body

    def _field(self, body: dict[str, Any], name: str, kinds: tuple[type, ...], required: bool = False) -> Any:
        value = body.get(name)
        if value is None:
            if required:
                raise _Refusal(
                    422, f"Failed to deserialize the JSON body into the target type: missing field `{name}`", plain=True
                )
            return None
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            raise _Refusal(
                422, f"Failed to deserialize the JSON body into the target type: {name}: invalid type", plain=True
            )
        return value

    # -- routes ---------------------------------------------------------------------------------
    def do_GET(self) -> None:
        if self.path == "/health":
            self._send(200, b"", "application/json")
        elif self.path == "/info" and self.server.behaviour.info_route:
            self._json(200, self.server.info())
        elif self.path == "/metrics":
            self._send(200, self.server.metrics().encode(), "text/plain; version=0.0.4")
        else:
            self._send(404, b"", "text/plain")

    def do_POST(self) -> None:
        routes = {
            "/embed": self._embed,
            "/rerank": self._rerank,
            "/tokenize": self._tokenize,
            "/v1/embeddings": self._openai_embeddings,
            "/v1/rerank": self._cohere_rerank,
            "/v2/rerank": self._cohere_rerank,
        }
        route = routes.get(self.path.split("?")[0])
        if route is None:
            self._send(404, b"", "text/plain")
            return
        counters = self.server.counters
        with counters.lock:
            counters.requests += 1
        try:
            route(self._body())
            with counters.lock:
                counters.success += 1
        except _Refusal as refusal:
            self._error(refusal, openai_route=self.path == "/v1/embeddings")

    def _inputs(self, body: dict[str, Any], name: str) -> list[str]:
        value = self._field(body, name, (str, list), required=True)
        inputs = [value] if isinstance(value, str) else value
        if not all(isinstance(t, str) for t in inputs):
            raise _Refusal(
                422, f"Failed to deserialize the JSON body into the target type: {name}: invalid type", plain=True
            )
        if not inputs:
            raise self._refuse(400, "`inputs` cannot be empty", "Empty")
        self._check_batch(len(inputs))
        return inputs

    def _check_batch(self, n: int) -> None:
        behaviour = self.server.behaviour
        if n > behaviour.max_client_batch_size:
            status = 413 if behaviour.before_19 else 422
            raise self._refuse(
                status, f"batch size {n} > maximum allowed batch size {behaviour.max_client_batch_size}", "Validation"
            )

    def _check_lengths(self, texts: list[str], truncate: bool) -> None:
        behaviour = self.server.behaviour
        if truncate:
            return
        for text in texts:
            tokens = self.server.backend.token_count(text)
            if tokens > behaviour.max_input_length:
                status = 413 if behaviour.before_19 else 422
                raise self._refuse(
                    status,
                    f"`inputs` must have less than {behaviour.max_input_length} tokens. Given: {tokens}",
                    "Validation",
                )

    def _permits(self, n: int):
        """TEI's permits: since 1.9 one per input, taken without waiting; before, only single-input requests got 429."""
        server = self.server
        behaviour, counters = server.behaviour, server.counters

        class _Permit:
            def __enter__(self_inner):
                with counters.lock:
                    full = counters.in_flight_inputs + n > behaviour.max_concurrent_requests
                    if full and (not behaviour.before_19 or n == 1):
                        raise _Refusal(
                            429, {"error": "Model is overloaded", "error_type": "Overloaded"}, error_type="Overloaded"
                        )
                    counters.in_flight_inputs += n

            def __exit__(self_inner, *exc):
                with counters.lock:
                    counters.in_flight_inputs -= n

        return _Permit()

    def _vectors(self, texts: list[str], normalize: bool, truncate: bool, dimensions: int | None) -> np.ndarray:
        behaviour, backend = self.server.behaviour, self.server.backend
        if behaviour.fault("strip_newlines") is not None:
            texts = [t.replace("\r", "").replace("\n", "") for t in texts]
        prefix = behaviour.fault("prefix")
        if prefix is not None:
            texts = [prefix + t for t in texts]
        cut = behaviour.fault("truncate")
        max_tokens = int(cut) if cut else behaviour.max_input_length
        if behaviour.fault("unnormalised") is not None:
            normalize = False
        vectors = backend.embed(texts, normalize, max_tokens, other=behaviour.fault("swap") is not None)
        if dimensions:
            vectors = vectors[:, :dimensions]
            if normalize and behaviour.fault("dims_no_renorm") is None:
                vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors

    def _timed(self, texts: list[str], work):
        started = time.perf_counter()
        with self._permits(len(texts)):
            if self.headers.get(HOLD_HEADER):
                self.server.held.set()
                self.server.release.wait(timeout=30)  # bounded: a test that failed before releasing ends anyway
            inference_started = time.perf_counter()
            result = work()
        done = time.perf_counter()
        tokens = sum(self.server.backend.token_count(t) for t in texts)
        ms = lambda s: str(int(s * 1000))  # noqa: E731
        headers = {
            "x-compute-type": "cpu",
            "x-compute-time": ms(done - started),
            "x-compute-characters": str(sum(map(len, texts))),
            "x-compute-tokens": str(tokens),
            "x-total-time": ms(done - started),
            "x-tokenization-time": "0",
            "x-queue-time": ms(inference_started - started),
            "x-inference-time": ms(done - inference_started),
        }
        return result, headers

    def _embed(self, body: dict[str, Any]) -> None:
        behaviour = self.server.behaviour
        texts = self._inputs(body, "inputs")
        normalize = self._field(body, "normalize", (bool,))
        truncate = self._field(body, "truncate", (bool,))
        dimensions = self._field(body, "dimensions", (int,))
        self._field(body, "truncation_direction", (str,))
        if behaviour.model_kind != "embedding":
            raise self._refuse(424, "model is not an embedding model", "Backend")
        truncate = behaviour.auto_truncate if truncate is None else truncate
        self._check_lengths(texts, truncate)
        vectors, headers = self._timed(
            texts, lambda: self._vectors(texts, True if normalize is None else normalize, truncate, dimensions)
        )
        if behaviour.fault("wrong_shape") is not None:
            self._json(200, {"embeddings": vectors.tolist()}, headers)
            return
        bad = behaviour.fault("bad_values")
        if bad is not None:
            row = {"nan": [float("nan")] + [0.5] * 3, "strings": ["a", "b"], "empty": []}[bad]
            self._json(200, [row] * len(texts), headers)
            return
        self._json(200, vectors.tolist(), headers)

    def _openai_embeddings(self, body: dict[str, Any]) -> None:
        behaviour = self.server.behaviour
        texts = self._inputs(body, "input")
        encoding = body.get("encoding_format") or "float"
        if encoding not in ("float", "base64"):
            raise self._refuse(422, f"unknown encoding_format {encoding!r}", "Validation")
        dimensions = self._field(body, "dimensions", (int,))
        self._check_lengths(texts, behaviour.auto_truncate)
        vectors, headers = self._timed(texts, lambda: self._vectors(texts, True, behaviour.auto_truncate, dimensions))
        if behaviour.fault("wrong_shape") is not None:
            self._json(200, {"vectors": vectors.tolist()}, headers)
            return
        import base64

        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": base64.b64encode(v.astype("<f4").tobytes()).decode()
                if encoding == "base64"
                else v.tolist(),
            }
            for i, v in enumerate(vectors)
        ]
        self._json(
            200,
            {
                "object": "list",
                "data": data,
                "model": body.get("model", behaviour.model_id),
                "usage": {"prompt_tokens": 0, "total_tokens": 0},
            },
            headers,
        )

    def _rank(self, query: str, texts: list[str], raw: bool) -> list[tuple[int, float]]:
        behaviour = self.server.behaviour
        if behaviour.model_kind != "reranker":
            raise self._refuse(424, "model is not a re-ranker model", "Backend")
        scores, _ = self._timed(texts, lambda: self.server.backend.scores(query, texts, raw))
        return sorted(enumerate(scores.tolist()), key=lambda pair: -pair[1])

    def _rerank(self, body: dict[str, Any]) -> None:
        query = self._field(body, "query", (str,), required=True)
        texts = self._inputs(body, "texts")
        raw = bool(self._field(body, "raw_scores", (bool,)))
        return_text = bool(self._field(body, "return_text", (bool,)))
        ranked = self._rank(query, texts, raw)
        self._json(200, [{"index": i, "score": s, **({"text": texts[i]} if return_text else {})} for i, s in ranked])

    def _cohere_rerank(self, body: dict[str, Any]) -> None:
        query = self._field(body, "query", (str,), required=True)
        documents = self._field(body, "documents", (list,), required=True)
        texts = [d if isinstance(d, str) else str(d.get("text", "")) for d in documents]
        top_n = self._field(body, "top_n", (int,))
        ranked = self._rank(query, texts, raw=False)
        if top_n is not None and self.server.behaviour.fault("ignore_top_n") is None:
            ranked = ranked[:top_n]
        results = [
            {
                "index": i,
                "relevance_score": s,
                **({"document": {"text": texts[i]}} if body.get("return_documents") else {}),
            }
            for i, s in ranked
        ]
        self._json(200, {"id": "fixture", "results": results, "meta": {"billed_units": {"search_units": 1}}})

    def _tokenize(self, body: dict[str, Any]) -> None:
        texts = self._inputs(body, "inputs")
        add_special = body.get("add_special_tokens", True)
        out = []
        for text in texts:
            encoding = self.server.backend.tokenizer.encode(text, add_special_tokens=add_special)
            out.append(
                [
                    {
                        "id": i,
                        "text": tok,
                        "special": tok.startswith("[") and tok.endswith("]"),
                        "start": s if s or e else None,
                        "stop": e if s or e else None,
                    }
                    for i, tok, (s, e) in zip(encoding.ids, encoding.tokens, encoding.offsets)
                ]
            )
        self._json(200, out)


class TeiFixtureServer(JsonStub):
    """The fixture on loopback: the load tests measure it over the wire (keep-alive, permits, timing headers)."""

    def __init__(self, backend: MiniLMBackend, behaviour: TeiBehaviour):
        super().__init__({}, default=Whole(self._route), start=False)
        self.backend = backend
        self.behaviour = behaviour
        self.counters = Counters()
        self.held = threading.Event()  # a request with HOLD_HEADER has taken its permits
        self.release = threading.Event()  # ... and gives them back once this is set

    def start(self) -> TeiFixtureServer:
        super().start()
        return self

    def _route(self, seen: Seen) -> tuple[int, RawBody]:
        call = _Call(self, seen)
        if seen.method == "GET":
            call.do_GET()
        elif seen.method == "POST":
            call.do_POST()
        else:
            call._send(501, b"Unsupported method", "text/plain")
        return call.reply

    def info(self) -> dict[str, Any]:
        b = self.behaviour
        model_type = (
            {"embedding": {"pooling": "mean"}}
            if b.model_kind == "embedding"
            else {"reranker": {"id2label": {"0": "LABEL_0"}}}
        )
        return {
            "model_id": b.model_id,
            "model_sha": None,
            "model_dtype": "float32",
            "model_type": model_type,
            "served_model_name": b.model_id,
            "max_concurrent_requests": b.max_concurrent_requests,
            "max_input_length": b.max_input_length,
            "max_batch_tokens": 16384,
            "max_batch_requests": None,
            "max_client_batch_size": b.max_client_batch_size,
            "auto_truncate": b.auto_truncate,
            "tokenization_workers": 1,
            "version": b.version,
            "sha": None,
            "docker_label": None,
        }

    def metrics(self) -> str:
        c = self.counters
        lines = [
            "# TYPE te_request_count counter",
            f'te_request_count{{method="batch"}} {c.requests}',
            "# TYPE te_request_success counter",
            f'te_request_success{{method="batch"}} {c.success}',
            "# TYPE te_request_failure counter",
        ]
        lines += [f'te_request_failure{{err="{k.lower()}"}} {v}' for k, v in sorted(c.failures.items())]
        lines += ["# TYPE te_queue_size gauge", "te_queue_size 0"]
        return "\n".join(lines) + "\n"


def start_fixture(backend: MiniLMBackend, **behaviour: Any) -> TeiFixtureServer:
    return TeiFixtureServer(backend, replace(TeiBehaviour(), **behaviour)).start()

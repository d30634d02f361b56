"""`ragbench doctor`: probe each hop of an Open WebUI -> LiteLLM -> TEI stack with tiny requests.

Most failures in such a stack raise no error: a reranker that fails is skipped (Open WebUI falls back to
unreranked results), a wrong body shape is a 422 nobody reads, an unlimited embedding fan-out turns into
429s. Every probe here sends what the upstream component really sends and names the fix for what it finds.
"""

from __future__ import annotations

import base64
import json
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from bench.core.errors import ServerError
from bench.core.http import HttpClient, auth_headers, error_message, key_from_env, parse_json
from bench.results.schema import DOCTOR_DOCUMENT, DoctorFinding

PING = ["ragbench doctor ping"]


def finding_line(finding: DoctorFinding) -> str:
    mark = "ok " if finding.ok else "BAD"
    return f"[{mark}] {finding.hop}: {finding.message}" + (f" -> fix: {finding.fix}" if finding.fix else "")


@dataclass
class DoctorRequest:
    openwebui: str | None = None
    tei: str | None = None
    litellm: str | None = None
    lightrag: str | None = None
    openwebui_key_env: str = "OPENWEBUI_API_KEY"
    litellm_key_env: str = "LITELLM_API_KEY"
    tei_key_env: str = "TEI_API_KEY"
    timeout_s: float = 30.0


@dataclass
class Probe:
    status: int | None  # None: no HTTP answer
    body: Any = None  # parsed JSON, or None
    message: str = ""  # error message from any body shape, or the transport error

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


@dataclass
class _Facts:
    """What one hop learned that another hop's checks need (e.g. TEI's batch limit for Open WebUI)."""

    tei_batch_limit: int | None = None


def probe(client: HttpClient, method: str, url: str, body: Any = None, key: str | None = None) -> Probe:
    """One request to `url` (credentials in it, or `key`, authenticate it), whatever it answers."""
    url, headers = auth_headers(f"doctor: {url}", url, key)
    try:
        response = client.send(method, url, json=body, headers=headers)
    except ServerError as exc:
        return Probe(None, message=str(exc).removeprefix(f"{client.server}: "))
    parsed, problem = parse_json(response)
    message = error_message(response)[0] if response.status_code >= 400 else problem
    return Probe(response.status_code, parsed, message)


def _env_key(name: str | None) -> str | None:
    return key_from_env("doctor", name, required=False)


def _count(value: Any, default: int) -> int:
    """A server's count setting, or `default` where it sent none or something that is not a count."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default


def _describe(p: Probe) -> str:
    return f"HTTP {p.status}: {p.message}" if p.status is not None else f"no answer ({p.message})"


def check_tei(client: HttpClient, url: str, key: str | None, facts: _Facts) -> list[DoctorFinding]:
    url = url.rstrip("/")
    info = probe(client, "GET", f"{url}/info", key=key)
    if not info.ok or not isinstance(info.body, dict) or "model_id" not in info.body:
        what = _describe(info) if not info.ok else (info.message or "JSON without model_id")
        return [
            DoctorFinding(
                "tei",
                False,
                f"{url}/info: {what}: not a reachable TEI server",
                "give --tei the TEI base URL (http://host:port, no path)",
            )
        ]
    body = info.body
    limit = _count(body.get("max_client_batch_size"), 32)
    max_len = _count(body.get("max_input_length"), 0)
    facts.tei_batch_limit = limit
    model_type = body.get("model_type")
    kind = next(iter(model_type), "unknown") if isinstance(model_type, dict) else "unknown"
    found = [
        DoctorFinding(
            "tei",
            True,
            f"TEI {body.get('version')} serves {body.get('model_id')} ({kind}, {body.get('model_dtype')}); "
            f"max_client_batch_size {limit}, max_input_length {max_len}, auto_truncate {body.get('auto_truncate')}",
        )
    ]
    if kind == "embedding":
        found += _check_tei_embed(client, url, key, limit, max_len, bool(body.get("auto_truncate")))
    elif kind == "reranker":
        ping = probe(client, "POST", f"{url}/rerank", {"query": PING[0], "texts": ["a", "b"]}, key)
        found.append(DoctorFinding("tei", ping.ok, f"/rerank {'answers' if ping.ok else _describe(ping)}"))
    return found


def _check_tei_embed(
    client: HttpClient, url: str, key: str | None, limit: int, max_len: int, auto_truncate: bool
) -> list[DoctorFinding]:
    """/embed answers; one input past max_client_batch_size is refused; a long input without auto-truncate."""
    ping = probe(client, "POST", f"{url}/embed", {"inputs": PING}, key)
    found = [DoctorFinding("tei", ping.ok, f"/embed {'answers' if ping.ok else _describe(ping)}")]
    over = probe(client, "POST", f"{url}/embed", {"inputs": PING * (limit + 1)}, key)
    if over.status in (413, 422):
        found.append(
            DoctorFinding(
                "tei",
                True,
                f"{limit + 1} inputs in one request are refused (HTTP {over.status}): "
                f"clients must send at most {limit} per request",
            )
        )
    if not auto_truncate:
        long_text = " ".join(["word"] * (max_len + 32))
        refused = probe(client, "POST", f"{url}/embed", {"inputs": [long_text]}, key)
        if refused.status in (413, 422):
            found.append(
                DoctorFinding(
                    "tei",
                    False,
                    f"truncation is off: an input over {max_len} tokens is refused "
                    f"(HTTP {refused.status}) and Open WebUI / LiteLLM send no `truncate`",
                    "start TEI with --auto-truncate (the default since 1.9) or send truncate:true",
                )
            )
    return found


def check_litellm(client: HttpClient, url: str, key: str | None, key_env: str) -> list[DoctorFinding]:
    base = url.rstrip("/")
    base = base[:-3] if base.endswith("/v1") else base
    models = probe(client, "GET", f"{base}/v1/models", key=key)
    if models.status in (401, 403) or (models.status == 500 and not key):
        return [
            DoctorFinding(
                "litellm",
                False,
                f"{base}/v1/models refused the key ({_describe(models)})",
                f"export the proxy key in ${key_env}",
            )
        ]
    data = models.body.get("data") if models.ok and isinstance(models.body, dict) else None
    if not isinstance(data, list):
        return [
            DoctorFinding(
                "litellm",
                False,
                f"{base}/v1/models: {_describe(models) if not models.ok else models.message or 'no data list'}",
                "give --litellm the proxy's base URL (http://host:4000)",
            )
        ]
    found = [DoctorFinding("litellm", True, f"proxy answers; models: {', '.join(str(m.get('id')) for m in data)}")]
    modes = _litellm_modes(client, base, key)
    for model in (str(m.get("id")) for m in data):
        found += _check_litellm_model(client, base, model, key, modes.get(model))
    return found


def _litellm_modes(client: HttpClient, base: str, key: str | None) -> dict[str, str | None]:
    """Each model's `model_info.mode` (embedding, rerank, chat...) where the config or cost map sets one.

    Probing a model with the wrong kind of request is a failure that LiteLLM counts toward putting the
    deployment in cooldown, so the doctor sends each model only the request its mode calls for.
    """
    info = probe(client, "GET", f"{base}/model/info", key=key)
    rows = info.body.get("data") if info.ok and isinstance(info.body, dict) else None
    modes: dict[str, str | None] = {}
    for row in rows if isinstance(rows, list) else []:
        if isinstance(row, dict) and isinstance(row.get("model_info"), dict):
            modes[str(row.get("model_name"))] = row["model_info"].get("mode")
    return modes


def _check_litellm_model(
    client: HttpClient, base: str, model: str, key: str | None, mode: str | None
) -> list[DoctorFinding]:
    if mode not in (None, "embedding", "rerank"):
        return [DoctorFinding("litellm", True, f"{model}: mode {mode}, not an embedding or rerank model (not probed)")]
    as_float = Probe(None, message="not probed: mode rerank")
    if mode != "rerank":
        as_float = probe(
            client, "POST", f"{base}/v1/embeddings", {"model": model, "input": PING, "encoding_format": "float"}, key
        )
    if as_float.ok:
        return _check_litellm_encodings(client, base, model, key, as_float)
    if mode == "embedding":
        return [
            DoctorFinding(
                "litellm",
                False,
                f"{model}: embeddings fail ({_describe(as_float)})",
                "check the model's provider prefix, api_base and key in the LiteLLM config",
            )
        ]
    return _check_litellm_rerank(client, base, model, key, mode, as_float)


def _check_litellm_encodings(
    client: HttpClient, base: str, model: str, key: str | None, as_float: Probe
) -> list[DoctorFinding]:
    """Embeddings answered as floats: base64 (what LightRAG and the OpenAI SDK ask for) must give the same vector."""
    found = [DoctorFinding("litellm", True, f"{model}: embeddings answer")]
    as_b64 = probe(
        client, "POST", f"{base}/v1/embeddings", {"model": model, "input": PING, "encoding_format": "base64"}, key
    )
    if not as_b64.ok:
        found.append(
            DoctorFinding(
                "litellm",
                False,
                f"{model}: encoding_format=base64 rejected ({_describe(as_b64)}); LightRAG and the OpenAI SDK send it",
                "serve through a backend that accepts base64, or pin encoding_format: float in litellm_params",
            )
        )
    elif not _same_vector(as_float.body, as_b64.body):
        found.append(
            DoctorFinding(
                "litellm",
                False,
                f"{model}: base64 and float answers decode to different vectors",
                "pin encoding_format in litellm_params so every client gets the same encoding",
            )
        )
    return found


def _check_litellm_rerank(
    client: HttpClient, base: str, model: str, key: str | None, mode: str | None, as_float: Probe
) -> list[DoctorFinding]:
    """A model that is not an embedding model: its rerank route, and whether it honours top_n."""
    body = {"model": model, "query": PING[0], "documents": ["a", "b", "c"], "top_n": 1}
    rerank = probe(client, "POST", f"{base}/v1/rerank", body, key)
    if rerank.ok:
        results = rerank.body.get("results") if isinstance(rerank.body, dict) else None
        if not isinstance(results, list):
            return [
                DoctorFinding(
                    "litellm", False, f"{model}: rerank answered without `results`", "check the provider prefix"
                )
            ]
        if len(results) > 1:
            return [
                DoctorFinding(
                    "litellm",
                    False,
                    f"{model}: rerank ignored top_n=1 ({len(results)} results)",
                    "trim on the client, or use a provider that honours top_n (LiteLLM's huggingface/ does not)",
                )
            ]
        return [DoctorFinding("litellm", True, f"{model}: rerank answers and honours top_n")]
    tried = (
        f"rerank fails ({_describe(rerank)})"
        if mode == "rerank"
        else f"neither embeddings ({_describe(as_float)}) nor rerank ({_describe(rerank)}) answer"
    )
    return [
        DoctorFinding(
            "litellm",
            False,
            f"{model}: {tried}; a reranker configured here fails silently behind Open WebUI",
            "check the model's provider prefix and api_base in the LiteLLM config "
            "(cohere/ posts to {api_base}/v2/rerank)",
        )
    ]


def _same_vector(float_body: Any, b64_body: Any) -> bool:
    try:
        a = np.asarray(float_body["data"][0]["embedding"], dtype=np.float32)
        b = np.frombuffer(base64.b64decode(b64_body["data"][0]["embedding"]), dtype="<f4")
    except (KeyError, IndexError, TypeError, ValueError):
        return False
    return a.shape == b.shape and bool(np.allclose(a, b, atol=1e-6))


def check_reranker_url(
    client: HttpClient, hop: str, url: str, model: str, key: str | None, fallback: str
) -> DoctorFinding:
    """POST the Cohere body that Open WebUI and LightRAG send; name what goes wrong."""
    body = {"model": model, "query": PING[0], "documents": ["a", "b"], "top_n": 2}
    p = probe(client, "POST", url, body, key)
    path = urlsplit(url).path
    if p.ok and isinstance(p.body, dict) and isinstance(p.body.get("results"), list):
        return DoctorFinding(hop, True, f"reranker {url} answers a Cohere-shaped request")
    if p.status is None:
        return DoctorFinding(
            hop,
            False,
            f"reranker {url} unreachable ({p.message}); {fallback}",
            "fix the reranker URL or start the reranker",
        )
    if p.status == 404 and not path.rstrip("/").endswith("rerank"):
        return DoctorFinding(
            hop,
            False,
            f"reranker URL {url} has no rerank path (HTTP 404); it is used verbatim; {fallback}",
            f"use the full route, e.g. {url.rstrip('/')}/v1/rerank",
        )
    if p.status == 422 and "texts" in p.message:
        return DoctorFinding(
            hop,
            False,
            f"wrong wire shape: {url} is TEI's /rerank, which wants {{query, texts}}, but a Cohere body "
            f"(documents) is sent -> HTTP 422; {fallback}",
            "put a Cohere-shaped route in between (LiteLLM /v1/rerank with a huggingface/ model) "
            "or a Cohere-compatible server",
        )
    if p.ok:
        return DoctorFinding(
            hop,
            False,
            f"reranker {url} answered without `results` ({p.message or 'wrong shape'}); {fallback}",
            "point it at a Cohere-shaped rerank route",
        )
    return DoctorFinding(
        hop,
        False,
        f"reranker configured but failing at {url} ({_describe(p)}); {fallback}",
        "fix the reranker (model name, key, URL) until this probe passes",
    )


def check_openwebui(client: HttpClient, url: str, key: str | None, key_env: str, facts: _Facts) -> list[DoctorFinding]:
    base = url.rstrip("/")
    if not key:
        return [
            DoctorFinding(
                "openwebui",
                False,
                f"no API key in ${key_env}",
                f"create one (Settings > Account > API keys) and export {key_env}",
            )
        ]
    config = probe(client, "GET", f"{base}/api/v1/retrieval/config", key=key)
    embedding = probe(client, "GET", f"{base}/api/v1/retrieval/embedding", key=key)
    for p, route in ((config, "retrieval/config"), (embedding, "retrieval/embedding")):
        if not p.ok or not isinstance(p.body, dict):
            fix = (
                f"check ${key_env} (an admin's API key)" if p.status in (401, 403) else "give --openwebui the base URL"
            )
            return [
                DoctorFinding(
                    "openwebui", False, f"{base}/api/v1/{route}: {_describe(p) if not p.ok else p.message}", fix
                )
            ]
    found = [
        DoctorFinding(
            "openwebui",
            True,
            f"Open WebUI answers; embedding engine {embedding.body.get('RAG_EMBEDDING_ENGINE')!r}, "
            f"model {embedding.body.get('RAG_EMBEDDING_MODEL')!r}",
        )
    ]
    found += _openwebui_embedding(client, embedding.body, facts)
    found += _openwebui_reranker(client, config.body)
    return found


def _openwebui_embedding(client: HttpClient, settings: dict[str, Any], facts: _Facts) -> list[DoctorFinding]:
    found = []
    if settings.get("ENABLE_ASYNC_EMBEDDING", True) and not settings.get("RAG_EMBEDDING_CONCURRENT_REQUESTS"):
        found.append(
            DoctorFinding(
                "openwebui",
                False,
                "unlimited concurrent embedding requests (RAG_EMBEDDING_CONCURRENT_REQUESTS=0): "
                "one large upload floods the embedder (TEI >= 1.9 answers 429 per input)",
                "set RAG_EMBEDDING_CONCURRENT_REQUESTS (e.g. 4) via /api/v1/retrieval/embedding/update",
            )
        )
    if settings.get("RAG_EMBEDDING_ENGINE") != "openai":
        return found
    openai = settings.get("openai_config") if isinstance(settings.get("openai_config"), dict) else {}
    emb_url, emb_key = str(openai.get("url") or "").rstrip("/"), openai.get("key") or None
    batch = _count(settings.get("RAG_EMBEDDING_BATCH_SIZE"), 1)
    model = settings.get("RAG_EMBEDDING_MODEL")
    ping = probe(client, "POST", f"{emb_url}/embeddings", {"model": model, "input": PING}, emb_key)
    if not ping.ok:
        found.append(
            DoctorFinding(
                "openwebui",
                False,
                f"embedding endpoint {emb_url}/embeddings fails ({_describe(ping)})",
                "fix RAG_OPENAI_API_BASE_URL / key / model: uploads will fail to embed (the upload still answers 200)",
            )
        )
        return found
    found += _openwebui_batch(client, emb_url, emb_key, model, batch, facts)
    if not [f for f in found if not f.ok]:
        found.append(DoctorFinding("openwebui", True, f"embedding endpoint answers (batch size {batch})"))
    return found


def _openwebui_batch(
    client: HttpClient, emb_url: str, emb_key: str | None, model: Any, batch: int, facts: _Facts
) -> list[DoctorFinding]:
    """RAG_EMBEDDING_BATCH_SIZE against TEI's limit when the doctor saw TEI, else one request of that size."""
    if facts.tei_batch_limit is not None and batch > facts.tei_batch_limit:
        return [
            DoctorFinding(
                "openwebui",
                False,
                f"RAG_EMBEDDING_BATCH_SIZE={batch} is above TEI's max_client_batch_size {facts.tei_batch_limit}",
                f"set RAG_EMBEDDING_BATCH_SIZE <= {facts.tei_batch_limit}",
            )
        ]
    if batch > 1:
        full = probe(client, "POST", f"{emb_url}/embeddings", {"model": model, "input": PING * batch}, emb_key)
        if not full.ok:
            return [
                DoctorFinding(
                    "openwebui",
                    False,
                    f"a batch of RAG_EMBEDDING_BATCH_SIZE={batch} inputs is refused ({_describe(full)})",
                    "lower RAG_EMBEDDING_BATCH_SIZE to the server's limit",
                )
            ]
    return []


def _openwebui_reranker(client: HttpClient, config: dict[str, Any]) -> list[DoctorFinding]:
    if config.get("RAG_RERANKING_ENGINE") != "external":
        return []
    fallback = "Open WebUI silently falls back to unreranked results"
    model = config.get("RAG_RERANKING_MODEL") or ""
    url = config.get("RAG_EXTERNAL_RERANKER_URL") or ""
    if not model or not url:
        return [
            DoctorFinding(
                "openwebui",
                False,
                "external reranker configured without "
                f"{'RAG_RERANKING_MODEL' if not model else 'RAG_EXTERNAL_RERANKER_URL'}",
                "set both",
            )
        ]
    key = config.get("RAG_EXTERNAL_RERANKER_API_KEY") or None
    return [check_reranker_url(client, "openwebui", url, model, key, fallback)]


def check_lightrag(client: HttpClient, url: str) -> list[DoctorFinding]:
    base = url.rstrip("/")
    health = probe(client, "GET", f"{base}/health")
    cfg = health.body.get("configuration") if health.ok and isinstance(health.body, dict) else None
    if not isinstance(cfg, dict):
        return [
            DoctorFinding(
                "lightrag",
                False,
                f"{base}/health: {_describe(health) if not health.ok else 'no configuration'}",
                "give --lightrag the server's base URL",
            )
        ]
    found = [
        DoctorFinding(
            "lightrag",
            True,
            f"LightRAG answers; embedding {cfg.get('embedding_binding')} {cfg.get('embedding_model')!r}, "
            f"rerank {'on' if cfg.get('enable_rerank') else 'off'}",
        )
    ]
    host = str(cfg.get("embedding_binding_host") or "").rstrip("/")
    if cfg.get("embedding_binding") == "openai" and host:
        body = {"model": cfg.get("embedding_model"), "input": PING, "encoding_format": "base64"}  # what LightRAG sends
        p = probe(client, "POST", f"{host}/embeddings", body)
        if p.status is None or (p.status >= 400 and p.status not in (401, 403)):
            hint = "encoding_format=base64 rejected" if p.status in (400, 422) else "embedding endpoint fails"
            found.append(
                DoctorFinding(
                    "lightrag",
                    False,
                    f"{hint}: {host}/embeddings ({_describe(p)})",
                    "serve embeddings through a route that accepts base64 (infinity, LiteLLM, vLLM)",
                )
            )
    if cfg.get("enable_rerank") and cfg.get("rerank_binding_host"):
        found.append(
            check_reranker_url(
                client,
                "lightrag",
                str(cfg["rerank_binding_host"]),
                str(cfg.get("rerank_model") or ""),
                None,
                "LightRAG logs the error and returns unreranked chunks",
            )
        )
    return found


def run_doctor(request: DoctorRequest) -> list[DoctorFinding]:
    """Every finding, in hop order: TEI first (its limits inform the others), then LiteLLM, Open WebUI, LightRAG."""
    facts = _Facts()
    findings: list[DoctorFinding] = []
    client = HttpClient("doctor", timeout_s=request.timeout_s)
    try:
        if request.tei:
            findings += check_tei(client, request.tei, _env_key(request.tei_key_env), facts)
        if request.litellm:
            findings += check_litellm(
                client, request.litellm, _env_key(request.litellm_key_env), request.litellm_key_env
            )
        if request.openwebui:
            findings += check_openwebui(
                client, request.openwebui, _env_key(request.openwebui_key_env), request.openwebui_key_env, facts
            )
        if request.lightrag:
            findings += check_lightrag(client, request.lightrag)
    finally:
        client.close()
    return findings


def _document_fields(finding: DoctorFinding) -> dict[str, object]:
    """A finding as the JSON document has it (its format before results.jsonl: no `record` field)."""
    return {k: v for k, v in asdict(finding).items() if k != "record"}


def findings_json(findings: list[DoctorFinding]) -> str:
    return json.dumps(
        {"schema": DOCTOR_DOCUMENT, "version": 1, "findings": [_document_fields(f) for f in findings]}, indent=2
    )

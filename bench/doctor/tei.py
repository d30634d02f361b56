"""The TEI hop: is it up, its batch limit, and does an embedding request of the stack's shape answer."""

from __future__ import annotations

from enum import StrEnum

from bench.core.http import HttpClient
from bench.doctor.probe import PING, Facts, count_setting, describe, probe
from bench.results.schema import DoctorFinding


class TeiModelKind(StrEnum):
    """What TEI's /info says it serves (the key of its `model_type`)."""

    EMBEDDING = "embedding"
    RERANKER = "reranker"


def check_tei(client: HttpClient, url: str, key: str | None, facts: Facts) -> list[DoctorFinding]:
    url = url.rstrip("/")
    info = probe(client, "GET", f"{url}/info", key=key)
    if not info.ok or not isinstance(info.body, dict) or "model_id" not in info.body:
        what = describe(info) if not info.ok else (info.message or "JSON without model_id")
        return [
            DoctorFinding(
                "tei",
                False,
                f"{url}/info: {what}: not a reachable TEI server",
                "give --tei the TEI base URL (http://host:port, no path)",
            )
        ]
    body = info.body
    limit = count_setting(body.get("max_client_batch_size"), 32)
    max_len = count_setting(body.get("max_input_length"), 0)
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
    if kind == TeiModelKind.EMBEDDING:
        found += _check_tei_embed(client, url, key, limit, max_len, bool(body.get("auto_truncate")))
    elif kind == TeiModelKind.RERANKER:
        ping = probe(client, "POST", f"{url}/rerank", {"query": PING[0], "texts": ["a", "b"]}, key)
        found.append(DoctorFinding("tei", ping.ok, f"/rerank {'answers' if ping.ok else describe(ping)}"))
    return found


def _check_tei_embed(
    client: HttpClient, url: str, key: str | None, limit: int, max_len: int, auto_truncate: bool
) -> list[DoctorFinding]:
    """/embed answers; one input past max_client_batch_size is refused; a long input without auto-truncate."""
    ping = probe(client, "POST", f"{url}/embed", {"inputs": PING}, key)
    found = [DoctorFinding("tei", ping.ok, f"/embed {'answers' if ping.ok else describe(ping)}")]
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

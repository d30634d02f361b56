"""What the meter counts per route (`Usage`), read from a provider's own `usage`, and a query's cost as the
difference of two snapshots."""

from __future__ import annotations

import zlib
from dataclasses import dataclass, fields
from typing import Any

from bench.core.http import loads


@dataclass
class Usage:
    calls: int = 0
    errors: int = 0  # calls answered with a status >= 400 or not answered at all
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    seconds: float = 0.0
    calls_without_usage: int = 0  # replies that carried no `usage`: their tokens are unknown, not zero
    # What an ingest needs told apart (bench/endpoints/meter_calls.py): texts carried, refusals by kind, retries,
    # and the upstream's own time where its timing headers tell it.
    texts: int = 0
    status_429: int = 0
    status_413: int = 0
    status_422: int = 0
    status_5xx: int = 0
    retries: int = 0
    upstream_seconds: float = 0.0
    # Wall time with at least one of the route's calls in flight: the time a caller waited on the route, where
    # `seconds` counts calls that overlap once each (bench/targets/hops.py splits a query's time by it).
    busy_seconds: float = 0.0

    def minus(self, other: Usage) -> Usage:
        return Usage(**{f.name: getattr(self, f.name) - getattr(other, f.name) for f in fields(self)})


# The counters a query's cost holds (`cost()`): what a query spent, not how its calls were refused.
QUERY_COST_FIELDS = (
    "calls",
    "errors",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "seconds",
    "busy_seconds",
    "calls_without_usage",
)

# Far beyond any context window: a count above it is a broken `usage`, not a figure.
MAX_TOKENS_PER_CALL = 10**8
USAGE_COUNTS = ("prompt_tokens", "completion_tokens", "total_tokens")


def checked_usage(usage: Any) -> dict[str, int] | None:
    """The token counts an OpenAI `usage` object holds, or None where it holds none or any of them is not
    a whole number from 0 to MAX_TOKENS_PER_CALL (negative, huge, text, a boolean): that reply's tokens
    are unknown ("without usage"), never a figure."""
    if not isinstance(usage, dict):
        return None
    counts: dict[str, int] = {}
    for name in USAGE_COUNTS:
        value = usage.get(name)
        if value is None:
            continue
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_TOKENS_PER_CALL:
            return None
        counts[name] = value
    return counts or None


def usage_from_body(body: bytes, content_type: str) -> dict[str, object] | None:
    """OpenAI `usage` from a JSON reply, or the last one an SSE stream carried; unchecked (`checked_usage` reads it)."""
    if "text/event-stream" in content_type:
        found = None
        for line in body.decode("utf-8", "replace").splitlines():
            if line.startswith("data:") and line[5:].strip() not in ("", "[DONE]"):
                try:
                    event = loads(line[5:])
                except ValueError:  # broken or too deeply nested: no usage in it
                    continue
                if isinstance(event, dict) and isinstance(event.get("usage"), dict):
                    found = event["usage"]
        return found
    try:
        data = loads(body)
    except ValueError:  # broken, not UTF-8 or too deeply nested: no usage in it
        return None
    usage = data.get("usage") if isinstance(data, dict) else None
    return usage if isinstance(usage, dict) else None


_WBITS = {"gzip": 31, "deflate": zlib.MAX_WBITS}  # the content-codings undone for reading `usage`: zlib's wbits


def decode_body(raw: bytes, encoding: str, limit: int) -> bytes | None:
    """Undo a content-encoding for reading `usage` (what is forwarded stays the raw bytes); None where the body is
    cut short, broken, or unpacks past `limit` bytes (a small gzip body can unpack to gigabytes)."""
    wbits = _WBITS.get(encoding)
    if wbits is None:  # identity, or a coding not undone here (br, zstd): read as it is
        return raw
    unpacker = zlib.decompressobj(wbits)
    try:
        decoded = unpacker.decompress(raw, limit)
    except zlib.error:
        return None
    return decoded if unpacker.eof and not unpacker.unconsumed_tail else None


def cost(before: dict[str, Usage], after: dict[str, Usage]) -> dict[str, float]:
    """Flat `<route>_<counter>` numbers for a QueryResult's cost, e.g. `llm_calls`, `llm_prompt_tokens`."""
    flat: dict[str, float] = {}
    for route, now in after.items():
        delta = now.minus(before.get(route, Usage()))
        for name in QUERY_COST_FIELDS:
            value = getattr(delta, name)
            flat[f"{route}_{name}"] = round(value, 6) if isinstance(value, float) else value
    return flat

"""The JSON Schema of a traffic trace's lines (bench/endpoints/meter_trace.py writes and reads them), published as
docs/trace.schema.json by `python -m bench.endpoints.trace_schema docs/trace.schema.json`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from bench.endpoints.meter_trace import (
    HASH_SCHEME,
    MAX_CHARS,
    MAX_TOKENS,
    TRACE_FORMAT,
    TRACE_VERSION,
    CallKind,
    TraceUnit,
)


def trace_schema() -> dict[str, Any]:
    """The JSON Schema of one trace line (a header or a call)."""
    length = {"type": "integer", "minimum": 0, "maximum": MAX_CHARS}
    nullable_int = {"type": ["integer", "null"], "minimum": 0}
    call = {
        "type": "object",
        "required": ["at", "route", "kind", "lengths"],
        "properties": {
            "at": {"type": "number", "minimum": 0, "description": "seconds from the recording's start, sorted"},
            "route": {"type": "string", "minLength": 1},
            "kind": {"enum": [str(k) for k in CallKind]},
            "texts": {"type": "integer", "minimum": 0, "description": "equals the count of lengths"},
            "unit": {"enum": [str(u) for u in TraceUnit], "default": "chars"},
            "lengths": {"type": "array", "items": length, "description": f"tokens: at most {MAX_TOKENS}"},
            "tokens": {**nullable_int, "description": "the call's total tokens from the endpoint's usage"},
            "query": {**nullable_int, "description": "a rerank's query length, in unit"},
            "status": {"type": ["integer", "null"], "minimum": 100, "maximum": 599},
            "latency": {"type": "number", "minimum": 0, "description": "seconds, as the meter timed the call"},
            "hash": {
                "type": ["string", "null"],
                "description": "HMAC-SHA256 (32 hex) of the request body under a per-trace key never written: "
                "equal bodies within one trace alike, never the texts",
            },
        },
        "additionalProperties": False,
    }
    header = {
        "type": "object",
        "required": ["format", "version"],
        "properties": {
            "format": {"const": TRACE_FORMAT},
            "version": {"const": TRACE_VERSION},
            "hash": {"const": HASH_SCHEME, "description": "how `hash` is made (absent: a plain SHA-1 of the body)"},
        },
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://ragbench/trace.v{TRACE_VERSION}.schema.json",
        "title": "ragbench traffic trace line",
        "oneOf": [header, call],
    }


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):  # `--help` is no file name to write the schema to
        print("usage: python -m bench.endpoints.trace_schema OUT.json", file=sys.stderr)
        sys.exit(2)
    Path(sys.argv[1]).write_text(json.dumps(trace_schema(), indent=2) + "\n", encoding="utf-8")

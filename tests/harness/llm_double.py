"""A deterministic OpenAI-compatible chat model that answers in the formats LightRAG parses.

The only stand-in in the integration tests: no LLM runs on these machines. It serves
`POST /v1/chat/completions` (and `/chat/completions`) on loopback and replies, depending on the prompt:
- entity extraction: `entity<|#|>NAME<|#|>concept<|#|>DESC` rows for the longest words of the input
  text, `relation<|#|>A<|#|>B<|#|>co-occurrence<|#|>DESC` rows between neighbours, then `<|COMPLETE|>`;
- keyword extraction: `{"high_level_keywords": [...], "low_level_keywords": [...]}` from the query;
- anything else (gleaning, summaries, answers): a short fixed sentence, or what the optional
  `answer(messages)` callback returns (a test's scripted answers).

Every reply carries OpenAI `usage`, counted by the double's own rule (whitespace-separated words of
every message, and of the reply), and every call is logged, so a test can check a metering proxy
against what the double was actually sent.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.harness.stubs import JsonStub, RawBody, Seen, Whole

TUPLE = "<|#|>"
COMPLETE = "<|COMPLETE|>"
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9-]{3,}")


@dataclass
class Call:
    kind: str  # extraction | keywords | other
    model: str
    prompt_tokens: int
    completion_tokens: int


def count_tokens(text: str) -> int:
    return len(text.split())


def _message_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def _distinct_words(text: str, limit: int) -> list[str]:
    """The longest distinct words, ties broken by first position: stable for a given text."""
    seen: dict[str, int] = {}
    for index, match in enumerate(_WORD.finditer(text)):
        word = match.group().strip("-")
        key = word.lower()
        if key not in seen and len(word) >= 4:
            seen[key] = index
    words = sorted(seen, key=lambda w: (-len(w), seen[w]))[:limit]
    return sorted(words, key=lambda w: seen[w])


def extraction_reply(input_text: str) -> str:
    names = [w.capitalize() for w in _distinct_words(input_text, 4)]
    snippet = " ".join(input_text.split()[:30])
    rows = [f"entity{TUPLE}{n}{TUPLE}concept{TUPLE}{n} is mentioned in: {snippet}" for n in names]
    rows += [
        f"relation{TUPLE}{a}{TUPLE}{b}{TUPLE}co-occurrence{TUPLE}{a} and {b} appear together in the same text."
        for a, b in itertools.pairwise(names)
    ]
    return "\n".join([*rows, COMPLETE])


def keywords_reply(query: str) -> str:
    """High level: the query's three longest words (its themes, roughly); low level: its six longest."""
    words = _distinct_words(query, 6)
    themes = sorted(words, key=len, reverse=True)[:3]
    return json.dumps({"high_level_keywords": themes, "low_level_keywords": words})


def reply_for(messages: list[dict[str, Any]]) -> tuple[str, str]:
    """(kind, reply text) for a chat request."""
    user = _message_text(messages[-1].get("content")) if messages else ""
    if "---Input Text---" in user and "```" in user:
        fenced = user.split("---Input Text---", 1)[1].split("```")
        return "extraction", extraction_reply(fenced[1] if len(fenced) > 1 else "")
    full = "\n".join(_message_text(m.get("content")) for m in messages)
    if "high_level_keywords" in full and "User Query:" in full:
        query = full.rsplit("User Query:", 1)[1].split("---Output---", 1)[0]
        return "keywords", keywords_reply(query)
    if "missed or incorrectly formatted entities" in user:
        return "extraction", COMPLETE  # gleaning: nothing more to add
    return "other", "Stub answer generated from the retrieved context."


class LLMDouble:
    """Run with `with LLMDouble() as llm:`; `llm.base_url` is the OpenAI base URL (`.../v1`)."""

    def __init__(
        self,
        model: str = "llm-double",
        answer: Callable[[list[dict[str, Any]]], str] | None = None,
        usage: Callable[[dict[str, int]], Any] | None = None,
    ):
        self.model = model
        self.answer = answer
        self.usage = usage  # turns each reply's true `usage` into what is sent (a test's broken usage)
        self.calls: list[Call] = []
        self._lock = threading.Lock()
        self.stub = JsonStub(
            {}, default=Whole(self._answer), start=False
        )  # on loopback: LightRAG's own client calls it

    @property
    def base_url(self) -> str:
        return f"{self.stub.url}/v1"

    def totals(self) -> dict[str, int]:
        with self._lock:
            return {
                "calls": len(self.calls),
                "prompt_tokens": sum(c.prompt_tokens for c in self.calls),
                "completion_tokens": sum(c.completion_tokens for c in self.calls),
            }

    def __enter__(self) -> LLMDouble:
        self.stub.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stub.stop()

    def _record(self, call: Call) -> None:
        with self._lock:
            self.calls.append(call)

    def _answer(self, seen: Seen) -> tuple[int, Any]:
        path = seen.path.rstrip("/")
        if seen.method == "GET" and path in ("/v1/models", "/models"):
            return 200, {"object": "list", "data": [{"id": self.model}]}
        if seen.method != "POST" or path not in ("/v1/chat/completions", "/chat/completions"):
            return 404, {"error": "not found"}
        request = json.loads(seen.body or b"{}")
        messages = request.get("messages") or []
        kind, text = reply_for(messages)
        if kind == "other" and self.answer is not None:
            text = self.answer(messages)
        usage = {
            "prompt_tokens": sum(count_tokens(_message_text(m.get("content"))) for m in messages),
            "completion_tokens": count_tokens(text),
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        self._record(Call(kind, str(request.get("model")), usage["prompt_tokens"], usage["completion_tokens"]))
        base = {"id": "chatcmpl-double", "created": int(time.time()), "model": request.get("model")}
        if request.get("stream"):
            return 200, RawBody("text/event-stream", _stream(base, text, usage))
        body = {
            **base,
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": usage if self.usage is None else self.usage(usage),
        }
        return 200, body


def _stream(base: dict[str, Any], text: str, usage: dict[str, int]) -> bytes:
    """The reply as OpenAI streams it: the text in one chunk, the stop, the usage, then [DONE]."""
    chunks = [
        {
            **base,
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None}],
        },
        {**base, "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {**base, "object": "chat.completion.chunk", "choices": [], "usage": usage},
    ]
    return ("".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n").encode()

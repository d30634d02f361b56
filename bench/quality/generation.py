"""Generated answers: each question answered by an LLM from what a target retrieved, for EM / F1 / Contains.

`quality --generate SPEC`:
- `chat@URL?model=M[&context=5&max_tokens=128&key_env=VAR&timeout=120]`: any OpenAI-compatible chat endpoint
  (`URL` is the OpenAI base URL, `/chat/completions` is appended) gets the question and the target's top
  `context` returned texts (chunks, or documents with their titles) in one fixed prompt, temperature 0.
  LLM tokens come from the reply's `usage`.
- `native[?response_type=...&user_prompt=...]`: the target answers itself — LightRAG's `/query` in the
  target's mode (the parameters pass through to it); LLM tokens need the target's `?meter=URL`.

Every question's answer text, latency and tokens are kept in the results (`query` records); a failed
generation is that question's error and scores zero. No LLM judges anything: the scores are SQuAD's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable
from urllib.parse import parse_qsl

from bench.core.errors import ServerError, UserError
from bench.core.progress import ProgressFactory
from bench.core.secrets import secret_from_env
from bench.endpoints.client import HttpEndpoint
from bench.endpoints.meter import checked_usage

SYSTEM_PROMPT = (
    "Answer the question using only the context. Reply with the answer alone, in as few words as "
    "possible, without explanation. If the context does not hold the answer, reply: unknown"
)
CHAT_OPTIONS = {"model", "context", "max_tokens", "key_env", "timeout"}
NATIVE_OPTIONS = {"response_type", "user_prompt"}
GIVE_UP_AFTER = 3  # the first questions all failing end the run instead of waiting out every question


# The generator as the target's record describes it (`config.generation`): its kind and settings, each a scalar
# (a chat generator's URL, model and limits; `native`'s spec parameters as given).
GenerationInfo = dict[str, str | int | float | None]


class GenerateKind(StrEnum):
    """Who answers: a chat model given the retrieved passages, or the target itself (its own answers)."""

    CHAT = "chat"
    NATIVE = "native"


@dataclass(frozen=True)
class GenerateSpec:
    """`chat@URL?model=M&...` or `native?...`, as given to `--generate`."""

    text: str
    kind: GenerateKind
    url: str | None = None
    params: dict[str, str] = field(default_factory=dict)

    def int_option(self, name: str, default: int) -> int:
        raw = self.params.get(name)
        if raw is None:
            return default
        if not raw.isdigit() or int(raw) < 1:
            raise UserError(f"--generate {self.text!r}: {name}={raw!r} must be a whole number of at least 1")
        return int(raw)


def parse_generate(text: str) -> GenerateSpec:
    rest, _, query = text.partition("?")
    kind, _, url = rest.partition("@")
    params: dict[str, str] = {}
    for pair in filter(None, query.split("&")):
        if "=" not in pair:
            raise UserError(f"--generate {text!r}: option {pair!r} is not option=value")
        params.update(parse_qsl(pair, keep_blank_values=True))
    if kind not in set(GenerateKind):
        raise UserError(f"--generate {text!r}: expected chat@URL?model=NAME or native")
    given = GenerateKind(kind)
    known = CHAT_OPTIONS if given == GenerateKind.CHAT else NATIVE_OPTIONS
    unknown = sorted(set(params) - known)
    if unknown:
        raise UserError(
            f"--generate {text!r}: unknown option(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})"
        )
    if given == GenerateKind.CHAT and (not url or not params.get("model")):
        raise UserError(f"--generate {text!r}: chat needs a URL and a model (chat@http://host:4000/v1?model=NAME)")
    if given == GenerateKind.NATIVE and url:
        raise UserError(f"--generate {text!r}: native takes no URL (the target answers itself)")
    spec = GenerateSpec(text, given, url or None, params)
    for name in ("context", "max_tokens", "timeout"):  # checked now, not mid-run
        spec.int_option(name, 1)
    if params.get("key_env") and secret_from_env(params["key_env"]) is None:
        raise UserError(f"--generate {text!r}: environment variable {params['key_env']} (key_env) is not set")
    return spec


@dataclass
class Generated:
    """One question's generated answer; `cost` holds answer_ms and the LLM tokens where known."""

    text: str | None
    cost: dict[str, float] = field(default_factory=dict)
    error: str | None = None


@runtime_checkable
class AnswersItself(Protocol):
    """A target that generates answers itself (LightRAG's /query)."""

    def generate(self, query: str, options: dict[str, str]) -> tuple[str, dict[str, float]]:
        """The answer text and the LLM cost it spent (empty without a meter)."""


def chat_prompt(question: str, passages: list[str]) -> list[dict[str, str]]:
    context = "\n\n".join(f"[{i}] {p}" for i, p in enumerate(passages, start=1))
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": f"Context:\n{context}\n\nQuestion: {question}\nAnswer:"},
    ]


class ChatGenerator:
    """An OpenAI-compatible `/chat/completions` fed each question with the target's top passages."""

    def __init__(self, spec: GenerateSpec):
        self.spec = spec
        self.model = spec.params["model"]
        self.context = spec.int_option("context", 5)
        self.max_tokens = spec.int_option("max_tokens", 128)
        self.http = HttpEndpoint(
            "--generate chat", spec.url or "", spec.params.get("key_env"), timeout_s=spec.int_option("timeout", 120)
        )

    def answer(self, question: str, passages: list[str]) -> tuple[str, dict[str, float]]:
        url = f"{self.http.url}/chat/completions"
        body = {
            "model": self.model,
            "messages": chat_prompt(question, passages[: self.context]),
            "temperature": 0,
            "max_tokens": self.max_tokens,
            "stream": False,
        }
        response, _ = self.http.request("POST", url, body)
        reply = self.http.json_of(response)
        try:
            text = reply["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise self.http.shape_error(url, "{choices: [{message: {content}}]}", reply) from None
        if not isinstance(text, str):
            raise self.http.shape_error(url, "a string in choices[0].message.content", reply)
        # Named as `ragbench meter` names a call's cost (what `native` reports through a metered target).
        counted = checked_usage(reply.get("usage")) or {}
        cost = {"answer_llm_calls": 1.0, **{f"answer_llm_{k}": float(v) for k, v in counted.items()}}
        if not counted:
            cost["answer_llm_calls_without_usage"] = 1.0  # tokens unknown, not zero
        return text, cost

    def describe(self) -> GenerationInfo:
        return {
            "kind": "chat",
            "url": self.http.url,
            "model": self.model,
            "context": self.context,
            "max_tokens": self.max_tokens,
            "temperature": 0,
            "system_prompt": SYSTEM_PROMPT,
        }

    def close(self) -> None:
        self.http.close()


def generate_answers(
    spec: GenerateSpec,
    target: Any,
    name: str,
    queries: dict[str, str],
    passages: dict[str, list[str]],
    progress: ProgressFactory,
    chat: ChatGenerator | None,
) -> dict[str, Generated]:
    """Answer every question, one at a time (so latency and metered cost are each question's own).

    A server refusing one question makes that question's error; the run goes on."""
    if spec.kind == GenerateKind.NATIVE and not isinstance(target, AnswersItself):
        raise UserError(
            f"--generate native: target {name} does not generate answers itself "
            "(use --generate chat@URL?model=NAME to answer from its retrieved texts)"
        )
    advance = progress(f"{name}: generating answers", len(queries))
    answers: dict[str, Generated] = {}
    for qid, question in queries.items():
        start = time.perf_counter()
        try:
            if chat is not None:
                text, cost = chat.answer(question, passages.get(qid, []))
            else:
                text, cost = target.generate(question, spec.params)
            answers[qid] = Generated(text, {"answer_ms": (time.perf_counter() - start) * 1000, **cost})
        except ServerError as exc:
            if len(answers) + 1 >= GIVE_UP_AFTER and not any(a.error is None for a in answers.values()):
                raise  # nothing has worked yet: the generator is down or misconfigured, not one question hard
            answers[qid] = Generated(None, {"answer_ms": (time.perf_counter() - start) * 1000}, str(exc))
        advance(1)
    return answers

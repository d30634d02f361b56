"""The vector store behind an Open WebUI target: stated on the spec (`store=NAME`) or reported by the app.

Open WebUI keeps its store in `VECTOR_DB` (chroma by default; pgvector, qdrant, milvus, ...) and the store's index
settings in its environment (`PGVECTOR_USE_HALFVEC`, `PGVECTOR_INDEX_METHOD`, ...). Version 0.12.4 reports none
of them through its API (`/api/v1/retrieval/config`, `/api/config` and `/health` were read with the real server):
the store is what the user states, e.g. `store=pgvector-halfvec-hnsw`, whose first word is the store's kind and
the rest its index settings. Should a later version report `VECTOR_DB` in its retrieval config, it is read and
checked against the statement. The store is recorded in the target's `config.store`, and `compare` and `history`
never pair figures of two stores (bench/results/schema/run.py: `record_store`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TypedDict

from bench.core.errors import UserError

_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*")
REPORTED_KEY = "VECTOR_DB"  # where the app would report its store, if it did (0.12.4 does not)
NOT_REPORTED = (
    "Open WebUI does not report its vector store over its API (0.12.4: VECTOR_DB and the PGVECTOR_*/QDRANT_*/"
    "MILVUS_* settings are environment only): state it on the target, store=NAME (e.g. store=pgvector-halfvec-hnsw)"
)


def stated_store(value: str | None, spec_text: str) -> str | None:
    """`store=NAME` checked: lower-case letters, digits, `.`, `_`, `-` (it is part of the target's name)."""
    if value is None:
        return None
    if not _NAME.fullmatch(value):
        raise UserError(
            f"target {spec_text!r}: store={value!r} is no store name: lower-case letters, digits, '.', '_' and '-', "
            "e.g. store=chroma, store=pgvector-halfvec-hnsw, store=qdrant"
        )
    return value


class StoreDescription(TypedDict, total=False):
    """`config.store`: the store's name, kind and index settings, and where the name came from (None: unknown)."""

    name: str | None
    kind: str | None
    index: str | None
    source: str | None  # stated | app
    app_reported: str | None
    note: str  # why there is no name


@dataclass(frozen=True)
class StoreIdentity:
    """The store an Open WebUI target runs on, as far as anyone said: the user's statement and the app's report."""

    stated: str | None
    app_reported: str | None = None

    @property
    def name(self) -> str | None:
        return self.stated or self.app_reported

    @property
    def kind(self) -> str | None:
        """The store's kind: the name's first word (`pgvector` of `pgvector-halfvec-hnsw`)."""
        return self.name.split("-", 1)[0] if self.name else None

    @property
    def index(self) -> str | None:
        """The index settings the name states after its kind (`halfvec, hnsw` of `pgvector-halfvec-hnsw`)."""
        words = self.name.split("-")[1:] if self.name else []
        return ", ".join(words) or None

    def reported(self, retrieval_config: dict[str, object], error: Callable[[str], Exception]) -> StoreIdentity:
        """This identity with what the app's retrieval config reports; a statement the report contradicts is the
        run's error (`error` makes the server's one-line error): its figures would be filed under the wrong store."""
        value = retrieval_config.get(REPORTED_KEY)
        if not isinstance(value, str) or not value:
            return self
        reported = value.strip().lower()
        if self.stated is not None and self.stated.split("-", 1)[0] != reported:
            raise error(f"store={self.stated} is stated on the target, but the app reports {REPORTED_KEY}={reported}")
        return replace(self, app_reported=reported)

    def describe(self) -> StoreDescription:
        """`config.store`: its name and where the name came from."""
        if self.name is None:
            return {"name": None, "source": None, "note": NOT_REPORTED}
        return {
            "name": self.name,
            "kind": self.kind,
            "index": self.index,
            "source": "stated" if self.stated else "app",
            "app_reported": self.app_reported,
        }


def split_store(url: str) -> tuple[str, str | None]:
    """`URL?store=NAME` (doctor's --openwebui, as on a target) as the URL and the stated store."""
    base, _, query = url.partition("?")
    params = dict(part.partition("=")[::2] for part in query.split("&") if part)
    return base, params.get("store") or None

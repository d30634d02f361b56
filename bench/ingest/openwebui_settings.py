"""Open WebUI's ingest settings read, changed and put back through its own APIs: the embedding settings
(`/api/v1/retrieval/embedding/update`, which takes the whole embedding form) and the retrieval settings
(`/api/v1/retrieval/config/update`, which takes the fields to change: CHUNK_SIZE, CHUNK_OVERLAP, ...).

Before the first change the values to put back are written to a restore journal under the cache folder, keyed
by the server (bench/ingest/journal.py): a run killed outright (SIGKILL, power) leaves it, and the next `ragbench
ingest` against that server puts those values back first and says so; one a live ingest holds is left alone.
"""

from __future__ import annotations

from typing import Any

from bench.core.errors import UserError
from bench.core.http import HttpClient
from bench.ingest.journal import RestoreJournal
from bench.ingest.settings import SettingAxis, label, typed_axis

EMBEDDING = "/api/v1/retrieval/embedding"
RETRIEVAL = "/api/v1/retrieval/config"
# The embedding form's scalar fields; its provider sections (openai_config, ...) are sent back as the server has them.
_EMBEDDING_FIELDS = (
    "RAG_EMBEDDING_ENGINE",
    "RAG_EMBEDDING_MODEL",
    "RAG_EMBEDDING_BATCH_SIZE",
    "ENABLE_ASYNC_EMBEDDING",
    "RAG_EMBEDDING_CONCURRENT_REQUESTS",
)
_EMBEDDING_SECTIONS = ("openai_config", "ollama_config", "azure_openai_config")
_SCALAR = (bool, int, float, str)


class OpenWebUISettings:
    """The server's ingest settings: `check` the swept names, `apply` a combination, `restore` what was changed."""

    def __init__(self, http: HttpClient):
        self.http = http
        self.journal = RestoreJournal(http.base_url)
        self.saved: dict[str, object] = {}  # setting -> the server's value before ragbench changed it

    def read(self) -> tuple[dict[str, object], dict[str, object]]:
        """(embedding settings, retrieval settings) as the server has them now: scalar fields only."""
        embedding = self.http.json("GET", EMBEDDING).get(kind=dict)
        retrieval = self.http.json("GET", RETRIEVAL).get(kind=dict)
        scalars: dict[str, object] = {k: v for k, v in retrieval.items() if isinstance(v, _SCALAR) and k != "status"}
        return {k: v for k, v in embedding.items() if k in _EMBEDDING_FIELDS}, scalars

    def embedder_url(self) -> tuple[str, str | None]:
        """(the embedding engine, the URL Open WebUI sends its embedding calls to; None: it embeds in-process)."""
        form = self.http.json("GET", EMBEDDING)
        engine = form.get("RAG_EMBEDDING_ENGINE", kind=str, default="")
        section = {"openai": "openai_config", "ollama": "ollama_config", "azure_openai": "azure_openai_config"}
        if engine not in section:
            return engine, None
        url: str | None = form.get(section[engine], "url", kind=str, default=None)
        return engine, url

    def current(self) -> dict[str, object]:
        embedding, retrieval = self.read()
        return {**retrieval, **embedding}

    def typed(self, axes: list[SettingAxis]) -> list[list[Any]]:
        """Each axis's values typed as the server's; a name the server lacks is one line and nothing is changed."""
        now = self.current()
        missing = [a.name for a in axes if a.name not in now]
        if missing:
            raise UserError(
                f"--setting {missing[0]}: Open WebUI at {self.http.base_url} has no such setting in its embedding or "
                "retrieval settings (an older server, or a typo); nothing was changed"
            )
        return [typed_axis(a.name, a.values, now[a.name]) for a in axes]

    def apply(self, wanted: dict[str, object]) -> dict[str, object]:
        """Set `wanted` and return the values read back; the values first changed are saved (and journalled)."""
        embedding, retrieval = self.read()
        now = {**retrieval, **embedding}
        fresh = {k: now[k] for k in wanted if k not in self.saved}
        if fresh:
            self.saved.update(fresh)
            self.journal.write(self.saved)
        self._send(wanted, embedding)
        back = self.current()
        refused = {k: back.get(k) for k, v in wanted.items() if back.get(k) != v}
        if refused:
            name = next(iter(refused))
            raise self.http.error(f"the server did not take {name}={wanted[name]!r} (it reads {refused[name]!r})")
        return {k: back[k] for k in wanted}

    def restore(self) -> None:
        """Put every changed setting back; the journal goes once they are back."""
        if self.saved:
            try:
                self._send(self.saved, self.read()[0])
            except UserError as exc:
                raise self.http.error(
                    f"settings NOT restored; set them back by hand to {label(self.saved)} "
                    f"({exc.args[0].split(': ', 1)[-1]})"
                ) from None
            self.saved = {}
        self.journal.remove()

    def put_back_left_over(self) -> dict[str, object]:
        """Put back what a killed ingest left in the journal (the values, returned; {} when none); a journal a live
        ingest holds is left alone and refused with one line."""
        left = self.journal.read()
        if left is None:
            return {}
        self.saved = left.saved
        self.restore()
        return left.saved

    def _send(self, values: dict[str, object], embedding: dict[str, object]) -> None:
        on_embedding = {k: v for k, v in values.items() if k in _EMBEDDING_FIELDS}
        on_retrieval = {k: v for k, v in values.items() if k not in _EMBEDDING_FIELDS}
        if on_embedding:
            # The form resets any field it lacks to its default: send the whole of it.
            whole = self.http.json("GET", EMBEDDING).get(kind=dict)
            form = {k: whole[k] for k in (*_EMBEDDING_FIELDS, *_EMBEDDING_SECTIONS) if k in whole}
            self.http.call("POST", f"{EMBEDDING}/update", json={**form, **on_embedding})
        if on_retrieval:
            self.http.call("POST", f"{RETRIEVAL}/update", json=on_retrieval)

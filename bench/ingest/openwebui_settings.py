"""Open WebUI's ingest settings read, changed and put back through its own APIs: the embedding settings
(`/api/v1/retrieval/embedding/update`, which takes the whole embedding form) and the retrieval settings
(`/api/v1/retrieval/config/update`, which takes the fields to change: CHUNK_SIZE, CHUNK_OVERLAP, ...).

Before the first change the values to put back are written to a restore journal under the cache folder, keyed
by the server's identity (bench/targets/settings_journal.py, shared with every command that changes the server's
settings): a run killed outright (SIGKILL, power) leaves it, and the next run against that server puts those
values back first and says so; one a live run holds is left alone.
"""

from __future__ import annotations

from bench.core.errors import UserError
from bench.core.http import HttpClient
from bench.ingest.settings import SettingAxis, label, typed_axis
from bench.results.schema.ingest import Settings, SettingValue
from bench.targets.openwebui_settings import EMBEDDING, EMBEDDING_FIELDS, RETRIEVAL, send_settings
from bench.targets.settings_journal import journal_for

_SCALAR = (bool, int, float, str)


class OpenWebUISettings:
    """The server's ingest settings: `check` the swept names, `apply` a combination, `restore` what was changed."""

    def __init__(self, http: HttpClient):
        self.http = http
        self.journal = journal_for("openwebui", http.base_url)
        self.saved: Settings = {}  # setting -> the server's value before ragbench changed it
        self._open = False  # this sweep is one of the journal's users

    def read(self) -> tuple[Settings, Settings]:
        """(embedding settings, retrieval settings) as the server has them now: scalar fields only."""
        embedding = self.http.json("GET", EMBEDDING).get(kind=dict)
        retrieval = self.http.json("GET", RETRIEVAL).get(kind=dict)
        scalars: Settings = {k: v for k, v in retrieval.items() if isinstance(v, _SCALAR) and k != "status"}
        return {k: v for k, v in embedding.items() if k in EMBEDDING_FIELDS}, scalars

    def embedder_url(self) -> tuple[str, str | None]:
        """(the embedding engine, the URL Open WebUI sends its embedding calls to; None: it embeds in-process)."""
        form = self.http.json("GET", EMBEDDING)
        engine = form.get("RAG_EMBEDDING_ENGINE", kind=str, default="")
        section = {"openai": "openai_config", "ollama": "ollama_config", "azure_openai": "azure_openai_config"}
        if engine not in section:
            return engine, None
        url: str | None = form.get(section[engine], "url", kind=str, default=None)
        return engine, url

    def current(self) -> Settings:
        embedding, retrieval = self.read()
        return {**retrieval, **embedding}

    def typed(self, axes: list[SettingAxis]) -> list[list[SettingValue]]:
        """Each axis's values typed as the server's; a name the server lacks is one line and nothing is changed."""
        now = self.current()
        missing = [a.name for a in axes if a.name not in now]
        if missing:
            raise UserError(
                f"--setting {missing[0]}: Open WebUI at {self.http.base_url} has no such setting in its embedding or "
                "retrieval settings (an older server, or a typo); nothing was changed"
            )
        return [typed_axis(a.name, a.values, now[a.name]) for a in axes]

    def apply(self, wanted: Settings) -> Settings:
        """Set `wanted` and return the values read back; the values first changed are saved (and journalled)."""
        self._start()
        embedding, retrieval = self.read()
        now = {**retrieval, **embedding}
        fresh = {k: now[k] for k in wanted if k not in self.saved}
        if fresh:
            self.saved.update(fresh)
            self.journal.save(self.saved)
        send_settings(self.http, wanted)
        back = self.current()
        refused = {k: back.get(k) for k, v in wanted.items() if back.get(k) != v}
        if refused:
            name = next(iter(refused))
            raise self.http.error(f"the server did not take {name}={wanted[name]!r} (it reads {refused[name]!r})")
        return {k: back[k] for k in wanted}

    def restore(self) -> None:
        """Put every changed setting back; the journal goes once they are back (and no other user in this process
        has values out); where they cannot be, it stays for the next run."""
        if self.saved:
            try:
                send_settings(self.http, self.saved)
            except UserError as exc:
                self.release(restored=False)
                raise self.http.error(
                    f"settings NOT restored; set them back by hand to {label(self.saved)} "
                    f"({exc.args[0].split(': ', 1)[-1]})"
                ) from None
            self.saved = {}
        self.release(restored=True)

    def release(self, restored: bool = True) -> None:
        """This sweep is done with the journal (`restored`: nothing of its own is left to put back)."""
        if self._open:
            self._open = False
            self.journal.close(restored)

    def put_back_left_over(self) -> Settings:
        """Put back what a killed run left in the journal (the values, returned; {} when none); a journal a live
        run holds is left alone and refused with one line."""
        return self._start()

    def claim(self) -> None:
        """Journal this sweep before any change: a second run against the server refuses from now on."""
        self._start()
        self.journal.claim()

    def _start(self) -> Settings:
        if self._open:
            return {}
        left = self.journal.open(lambda values: send_settings(self.http, values))
        self._open = True
        return left

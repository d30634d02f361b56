"""The settings sweep of one Open WebUI target: each combination applied, measured on a fresh knowledge base and
written as it finishes; every changed setting put back at the end, also after an error, Ctrl-C or SIGTERM."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from bench.core.errors import ServerError, UserError
from bench.core.interrupt import uninterruptible
from bench.core.progress import ProgressFactory, console
from bench.endpoints.meter import Meter
from bench.ingest.direct import send_direct
from bench.ingest.openwebui import KnowledgeIngest, MadeOnServer, ingest_knowledge, remove_knowledge
from bench.ingest.openwebui_settings import OpenWebUISettings
from bench.ingest.record import EMBEDDING_ROUTE, Combination, DocsOutcome, failed_record, point_record, target_name
from bench.ingest.settings import SettingAxis, combinations, label
from bench.results.schema import IngestPointRecord
from bench.results.schema.ingest import Settings
from bench.targets.base import TargetKind
from bench.targets.http_shared import DedupedCorpus
from bench.targets.openwebui import OpenWebUITarget
from bench.targets.openwebui_knowledge import knowledge_base_text


@dataclass(frozen=True)
class IngestMetering:
    """The ingest's own meter between the app and its embedder (None: not metered) and where its routes lead."""

    meter: Meter | None
    upstreams: dict[str, str]
    direct: bool  # send the app's embedding calls again straight to the embedder
    timeout_s: float


class OpenWebUISweep:
    """One Open WebUI target's sweep: `prepare` checks the server and the settings before anything is written,
    `run` measures every combination."""

    def __init__(self, target: OpenWebUITarget, corpus: DedupedCorpus, metering: IngestMetering, keep: bool):
        self.target, self.corpus, self.metering = target, corpus, metering
        self.keep = keep  # leave each combination's knowledge base and files on the server
        self.settings = OpenWebUISettings(target.http)
        self.combinations: list[Settings] = []

    def prepare(self, axes: list[SettingAxis]) -> None:
        """Put back what a killed ingest left (the journal; one a live ingest holds is refused), type every swept
        value by the server's own, then journal this run: a server that cannot be reached or lacks a setting is one
        line here, with nothing changed."""
        left = self.settings.put_back_left_over()
        if left:
            where = self.target.http.base_url
            said = f"restored the settings an interrupted run left on {where}: {label(left)}"
            console.print(said, markup=False, highlight=False, soft_wrap=True)
        self.combinations = combinations([a.name for a in axes], self.settings.typed(axes))
        self._check_pointed_at_meter()
        if axes:
            self.settings.claim()

    def _check_pointed_at_meter(self) -> None:
        """With a meter, Open WebUI's embedding URL must lead to its embedding route (any host name: the app may
        reach the meter by another; the meter's port and route path): else no call would pass it, found only after
        a whole combination ran."""
        meter = self.metering.meter
        if meter is None:
            return
        engine, url = self.settings.embedder_url()
        wanted = f"{meter.url}/{EMBEDDING_ROUTE}"
        if url is None:
            raise UserError(
                f"Open WebUI at {self.target.http.base_url} embeds with engine {engine or 'local'!r}, not through "
                f"the meter: set its embedding engine to OpenAI with base URL {wanted} first"
            )
        parts, meter_parts = urlsplit(url), urlsplit(meter.url)
        if parts.port != meter_parts.port or parts.path.rstrip("/") != f"/{EMBEDDING_ROUTE}":
            raise UserError(
                f"Open WebUI at {self.target.http.base_url} sends its embedding calls to {url}, not to the meter: "
                f"point its embedding base URL (RAG_OPENAI_API_BASE_URL) at {wanted} (or the meter's host as the "
                "server reaches it) first"
            )

    def close(self) -> None:
        """Release the server: a journal this run claimed and changed nothing under goes (one with values to put
        back stays for the next ingest)."""
        self.target.close()
        if not self.settings.saved:
            self.settings.release()

    def run(
        self, write: Callable[[IngestPointRecord], None], progress: ProgressFactory
    ) -> tuple[list[IngestPointRecord], str | None]:
        """Every combination measured and written, in order, until one fails (the server refused its settings or
        went away): (the points measured, why the sweep stopped or None). The settings are restored whatever
        happens; where they cannot be (the server is gone), the journal keeps them for the next ingest."""
        settings = self.settings
        stamp = time.strftime("%Y%m%d-%H%M%S")
        points: list[IngestPointRecord] = []
        failure: str | None = None
        try:
            for i, combination in enumerate(self.combinations, 1):
                try:
                    point = self._one(combination, f"ragbench-ingest-{stamp}-{i}", progress)
                except ServerError as exc:
                    failure = f"{label(combination)}: {exc.args[0]}"
                    which = Combination(
                        target_name(self.target.spec), TargetKind.OPENWEBUI, combination, label(combination)
                    )
                    write(failed_record(which, exc.args[0]))
                    break
                write(point)
                points.append(point)
        finally:
            with uninterruptible():
                stopping = sys.exc_info()[0] is not None  # Ctrl-C, SIGTERM or an error on its way out
                note = self._restore(settings, quiet=failure is not None or stopping)
                if note and stopping:
                    console.print(f"ragbench: {note}", markup=False, highlight=False, soft_wrap=True)
        if note and failure:
            failure = f"{failure}; {note}"
        return points, failure

    @staticmethod
    def _restore(settings: OpenWebUISettings, quiet: bool) -> str | None:
        """Put the settings back; when that fails after another failure, what to say of it instead of raising."""
        try:
            settings.restore()
        except UserError as exc:
            if not quiet:
                raise
            return (
                f"{exc.args[0]}; the restore journal {settings.journal.path} keeps them: the next ingest against this "
                "server puts them back"
            )
        return None

    def _one(self, combination: Settings, kb_name: str, progress: ProgressFactory) -> IngestPointRecord:
        """The combination applied and measured on a fresh knowledge base, which goes afterwards (unless --keep)
        whatever happens: an error, Ctrl-C or SIGTERM half-way through included."""
        back = self.settings.apply(combination) if combination else {}
        made = MadeOnServer()
        try:
            return self._measured(back, label(combination), kb_name, progress, made)
        finally:
            if not self.keep:
                self._remove(made)

    def _remove(self, made: MadeOnServer) -> None:
        """Delete what the combination made; a server gone while another failure is on its way out is left to it."""
        leaving = sys.exc_info()[0] is not None  # called from a `finally` an exception is passing through
        with uninterruptible():
            try:
                remove_knowledge(self.target.http, made)
            except ServerError:
                if not leaving:
                    raise

    def _measured(
        self, back: Settings, name: str, kb_name: str, progress: ProgressFactory, made: MadeOnServer
    ) -> IngestPointRecord:
        meter, target = self.metering.meter, self.target
        index = len(meter.calls) if meter else 0
        ingest = ingest_knowledge(target.http, self.corpus, kb_name, target.concurrency, progress, made)
        if meter:
            settle(meter, lambda: target.http.call("GET", "/api/version"))
        calls = meter.calls_since(index) if meter else None
        embedded = [c for c in calls or [] if c.route == EMBEDDING_ROUTE]
        if meter and not embedded and ingest.processed:
            raise UserError(
                f"Open WebUI processed {len(ingest.processed)} documents, but no embedding call passed the meter at "
                f"{meter.url}/{EMBEDDING_ROUTE}: point its embedding base URL (RAG_OPENAI_API_BASE_URL) there"
            )
        direct = None
        if meter and self.metering.direct and embedded:
            upstream = self.metering.upstreams[EMBEDDING_ROUTE]
            direct = send_direct(EMBEDDING_ROUTE, upstream, embedded, len(ingest.processed), self.metering.timeout_s)
        which = Combination(target_name(target.spec), TargetKind.OPENWEBUI, back, name)
        not_chunks = frozenset({knowledge_base_text(ingest.kb_name)})  # embedded when the base was made
        return point_record(which, _outcome(ingest), calls, direct, ingest.kb_name, target.concurrency, not_chunks)


def settle(meter: Meter, poke: Callable[[], object], rounds: int = 10) -> None:
    """Wait until the app has no embedding call left to make. Open WebUI 0.12.4 leaves the other calls of a
    document whose embedding failed pending, and they run later, when the server next handles a request: each
    round pokes it with a harmless request and waits for the meter to be idle, until a round brings no call.
    Those calls are the finished combination's, and must not compete with the next one's."""
    for _ in range(rounds):
        seen = meter.calls_total
        poke()
        meter.wait_idle(quiet_s=1.0)
        if meter.calls_total == seen:
            return


def _outcome(ingest: KnowledgeIngest) -> DocsOutcome:
    per_doc = [d.seconds for d in ingest.documents if d.error is None and d.doc_id in ingest.processed]
    return DocsOutcome(len(ingest.documents), ingest.failed, ingest.lost, ingest.seconds, per_doc)

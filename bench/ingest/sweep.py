"""The settings sweep of one Open WebUI target: each combination applied, measured on a fresh knowledge base and
written as it finishes; every changed setting put back at the end, also after an error, Ctrl-C or SIGTERM."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.core.errors import ServerError, UserError
from bench.core.interrupt import uninterruptible
from bench.core.progress import ProgressFactory, console
from bench.endpoints.meter import Meter
from bench.ingest.direct import send_direct
from bench.ingest.openwebui import KnowledgeIngest, ingest_knowledge, remove_knowledge
from bench.ingest.openwebui_settings import OpenWebUISettings
from bench.ingest.record import EMBEDDING_ROUTE, failed_record, point_record, target_name
from bench.ingest.settings import SettingAxis, combinations, label
from bench.results.schema import IngestPointRecord
from bench.targets.http_shared import DedupedCorpus
from bench.targets.openwebui import OpenWebUITarget


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
        self.combinations: list[dict[str, Any]] = []

    def prepare(self, axes: list[SettingAxis]) -> None:
        """Put back what a killed ingest left (the journal; one a live ingest holds is refused), type every swept
        value by the server's own, then journal this run: a server that cannot be reached or lacks a setting is one
        line here, with nothing changed."""
        left = self.settings.put_back_left_over()
        if left:
            where = self.target.http.base_url
            console.print(f"restored the settings an interrupted ingest left on {where}: {label(left)}", markup=False)
        self.combinations = combinations([a.name for a in axes], self.settings.typed(axes))
        if axes:
            self.settings.journal.claim()

    def close(self) -> None:
        """Release the server: a journal this run claimed and changed nothing under goes (one with values to put
        back stays for the next ingest)."""
        self.target.close()
        if not self.settings.saved:
            self.settings.journal.remove()

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
                    spec = target_name(self.target.spec)
                    write(failed_record(spec, "openwebui", combination, label(combination), exc.args[0]))
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

    def _one(self, combination: dict[str, Any], kb_name: str, progress: ProgressFactory) -> IngestPointRecord:
        back = self.settings.apply(combination) if combination else {}
        meter, target = self.metering.meter, self.target
        index = len(meter.calls) if meter else 0
        ingest = ingest_knowledge(target.http, self.corpus, kb_name, target.concurrency, progress)
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
        point = point_record(
            target_name(target.spec),
            "openwebui",
            back,
            label(combination),
            _outcome(ingest),
            calls,
            direct,
            ingest.kb_name,
            target.concurrency,
        )
        if not self.keep:
            remove_knowledge(target.http, ingest)
        return point


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


def _outcome(ingest: KnowledgeIngest) -> tuple[int, dict[str, str], list[str], float, list[float]]:
    per_doc = [d.seconds for d in ingest.documents if d.error is None and d.doc_id in ingest.processed]
    return len(ingest.documents), ingest.failed, ingest.lost, ingest.seconds, per_doc

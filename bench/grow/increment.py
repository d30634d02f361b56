"""One target's increment at one rung: the documents sent (in batches where rungs count the app's chunks), timed,
its provider calls read from the meter, and the app's chunks counted.

`--unit chunks`: a rung's size is the app's own count of chunks in the knowledge base, which no one knows before
the app has cut the documents. A server's base is grown in batches: the next batch's documents are estimated from
the chunks per document so far, until the base holds at least the rung's chunks (the first batch is the dataset's
own documents). A local engine indexes each document whole: one document is one chunk."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass

from bench.core.errors import UserError
from bench.core.progress import ProgressFactory, no_progress
from bench.grow.ladder import Corpora, Rung
from bench.grow.metering import RungCalls, Window
from bench.results.schema.grow import GrowUnit
from bench.targets.base import Target, TargetKind, TargetSpec

INCREMENTAL = ("openwebui", "lightrag")  # their prepare skips documents already in the knowledge base


@dataclass
class Grown:
    """How far one target's knowledge base has grown: documents (a prefix of the ladder's corpus) and the app's
    chunks, where counted (None: not counted)."""

    docs: int = 0
    chunks: int | None = 0


@dataclass(frozen=True)
class Increment:
    """What growing one target to one rung took."""

    seconds: float  # the prepares' wall time, summed over the batches
    added: int  # documents the base holds over the previous rung's (those tried, where a prepare failed)
    sent: int  # documents ingested: those the app was sent (incremental) or all of them (rebuild)
    error: str | None  # the server's reason where a prepare failed
    calls: RungCalls | None  # the provider calls of the whole increment; None: no meter
    app_seconds: float | None  # the uploads-and-wait part of `seconds` (a server's target), None: a local engine


def grow_to(
    corpora: Corpora,
    window: Window,
    spec: TargetSpec,
    target: Target,
    grown: Grown,
    rung: Rung,
    progress: ProgressFactory = no_progress,
) -> Increment:
    """Grow `target`'s base (whose state is `grown`, updated here) to `rung`; a failed prepare ends it. `progress`
    shows the distractors made and the target's own ingest steps as they go."""
    seconds, sent, error, app = 0.0, 0, None, None
    start_mark, before, tried = window.mark(), grown.docs, grown.docs
    for docs in batches(corpora, spec.kind, grown, rung):
        tried = docs
        corpus = corpora.prefix(docs, progress)  # distractors made first, outside the ingest's time
        mark, uploads = window.mark(), documents_sent(target)
        start = time.perf_counter()
        try:
            target.prepare(corpus, progress)
        except UserError as exc:  # a server that refuses the increment: this target's result, not the run's end
            error = str(exc)
        elapsed = time.perf_counter() - start
        seconds += elapsed
        if (part := app_seconds(target)) is not None:
            app = (app or 0.0) + part
        if error is not None:
            break
        # What the app was sent: a server's target skips what its base already holds (another mode's target on the
        # same LightRAG, a kept knowledge base), and a rate over documents not sent would be no ingest rate.
        sent += documents_sent(target) - uploads if spec.kind in INCREMENTAL else docs
        new_files = documents_sent(target) > uploads
        grown.chunks = count_chunks(spec, target, window.read(target, mark, elapsed), grown, docs, new_files)
        grown.docs = docs
    return Increment(seconds, tried - before, sent, error, window.read(target, start_mark, seconds), app)


def app_seconds(target: Target) -> float | None:
    """The wall time of the last prepare's uploads and the wait for the app to process them (Open WebUI's upload
    loop, LightRAG's insert and wait): the app's ingest, with none of what ragbench does around it (reading the
    configuration, listing and re-checking the base, the mode's settings). None: a local engine."""
    from bench.targets.lightrag import LightRAGTarget
    from bench.targets.openwebui import OpenWebUITarget

    if isinstance(target, (OpenWebUITarget, LightRAGTarget)):
        return target.ingest.seconds
    return None


def batches(corpora: Corpora, kind: str, grown: Grown, rung: Rung) -> Iterator[int]:
    """The corpus sizes (documents) to prepare in turn: the rung's size in documents, or with --unit chunks as many
    batches as it takes the app's chunks to reach the rung's (each estimated from the chunks per document so far)."""
    base = len(corpora.dataset.corpus)
    if corpora.unit == GrowUnit.DOCS or kind not in INCREMENTAL:
        yield max(rung.size, base)
        return
    while grown.chunks is None or grown.docs < base or grown.chunks < rung.size:
        if grown.chunks is None:
            raise UserError(f"--unit chunks: the app's chunks could not be counted at {grown.docs:,} documents")
        if grown.docs < base:
            wanted = base
        else:
            per_doc = max(grown.chunks / grown.docs, 1e-9)
            wanted = grown.docs + max(1, math.ceil((rung.size - grown.chunks) / per_doc))
        docs = min(wanted, corpora.capacity)
        if docs <= grown.docs:
            raise UserError(
                f"--distractors: ran out at {grown.docs:,} documents ({grown.chunks:,} chunks), short of the rung's "
                f"{rung.size:,} chunks: give a larger source or smaller rungs"
            )
        yield docs


def count_chunks(
    spec: TargetSpec, target: Target, calls: RungCalls | None, grown: Grown, docs: int, new_files: bool
) -> int | None:
    """The app's chunks in the base once it holds `docs` documents: a local engine's documents; Open WebUI's from
    the texts its embedding calls carried (the chunks before, plus this batch's: `new_files` uploaded, whose
    embedding calls must have passed the meter); LightRAG's chunks_count."""
    if spec.kind not in INCREMENTAL:
        return docs
    if spec.kind == TargetKind.LIGHTRAG:
        return lightrag_chunks(target)
    if calls is None or grown.chunks is None:
        return None
    if calls.chunks == 0 and new_files:
        raise UserError(
            f"{spec.name}: Open WebUI processed new documents, but no embedding call passed the meter: point its "
            "embedding base URL (RAG_OPENAI_API_BASE_URL) at the meter's embedding route"
        )
    return grown.chunks + calls.chunks


def documents_sent(target: Target) -> int:
    """Documents a server's target sent its app so far: Open WebUI's uploaded files, LightRAG's inserted texts (0 for
    a local engine)."""
    from bench.targets.lightrag import LightRAGTarget
    from bench.targets.openwebui import OpenWebUITarget

    if isinstance(target, OpenWebUITarget):
        return len(target.uploaded_ids)
    return target.ingest.inserted if isinstance(target, LightRAGTarget) else 0


def lightrag_chunks(target: Target) -> int | None:
    """The chunks_count LightRAG lists for the corpus' documents, summed (None: it lists none)."""
    from bench.targets.lightrag import LightRAGTarget
    from bench.targets.lightrag_documents import documents_on_server

    if not isinstance(target, LightRAGTarget):
        return None
    listed = documents_on_server(target.http)
    counts = [listed[source].chunks_count for source in target.source_to_doc if source in listed]
    return sum(c for c in counts if isinstance(c, int)) if counts and all(isinstance(c, int) for c in counts) else None

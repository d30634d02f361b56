"""`ragbench ingest`: documents through Open WebUI or LightRAG under swept settings, metered. Its options are
`IngestRequest`'s declared fields (bench/commands/ingest.py); --out, the folder it writes, is the command line's own."""

from __future__ import annotations

from pathlib import Path

from bench.cli.declared import command
from bench.cli.options import out_folder
from bench.commands.ingest import IngestRequest


def ingest(request: IngestRequest) -> None:
    from bench.commands.ingest import ingest_command

    ingest_command(request)


command(
    "ingest",
    IngestRequest,
    ingest,
    "Ingest a corpus through Open WebUI (each --setting combination on a fresh knowledge base, settings restored) "
    "or LightRAG: docs/s, lost documents, the embedder's view through a meter, and the app against the embedder alone.",
    extra=(("targets", out_folder(Path("reports/ingest"))),),
)

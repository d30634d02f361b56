"""The plain function behind `ragbench ingest`: documents through Open WebUI / LightRAG under each settings
combination, metered, with the same embedding calls sent straight to the embedder."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from bench.commands.options import (
    KEEP,
    METER_HOST,
    METER_PORT,
    METER_UPSTREAM,
    OVERWRITE,
    SPLIT,
    Flag,
    option,
    target_flag,
)
from bench.core.errors import MeasurementFailed, UserError
from bench.results.provenance import Origin
from bench.results.schema import IngestPointRecord
from bench.targets.base import TargetKind, TargetSpec

INGESTED_KINDS = (TargetKind.OPENWEBUI, TargetKind.LIGHTRAG)


@dataclass
class IngestRequest:
    """`ragbench ingest`'s options, each declared once, here; `out` is the command line's --out."""

    dataset: Path = field(
        metadata=option(Flag(("--dataset",), "Corpus: BEIR folder, TREC folder, JSONL Q&A or builtin:numpy-docs."))
    )
    targets: list[str] = field(metadata=option(target_flag("openwebui@URL[?concurrency=N]|lightrag@URL[?...]")))
    out: Path
    split: str | None = field(default=None, metadata=option(SPLIT))
    max_docs: int | None = field(
        default=None, metadata=option(Flag(("--max-docs",), "Ingest the first N documents of the corpus.", min=1))
    )
    settings: list[str] | None = field(
        default=None,
        metadata=option(
            Flag(
                ("--setting",),
                "Open WebUI setting to sweep, NAME=V1,V2 (RAG_EMBEDDING_BATCH_SIZE, RAG_EMBEDDING_CONCURRENT_REQUESTS, "
                "CHUNK_SIZE, ...); repeat: every combination is measured on a fresh knowledge base, then restored.",
            )
        ),
    )
    meter_upstream: list[str] | None = field(default=None, metadata=option(METER_UPSTREAM))
    meter_host: str = field(default="127.0.0.1", metadata=option(METER_HOST))
    record: Path | None = field(
        default=None,
        metadata=option(
            Flag(
                ("--record",),
                "Write a trace of every call the meter forwards here (as `ragbench meter --record`: shapes and "
                "times, never texts), for `load --trace` and `size --trace`. Needs --meter-upstream.",
            )
        ),
    )
    meter_port: int = field(default=9600, metadata=option(METER_PORT))
    no_direct: bool = field(
        default=False,
        metadata=option(
            Flag(("--no-direct",), "Skip sending the app's embedding calls again straight to the embedder.")
        ),
    )
    keep: bool = field(default=False, metadata=option(KEEP))
    timeout: float = field(default=300.0, metadata=option(Flag(("--timeout",), "Per-request timeout, seconds.")))
    overwrite: bool = field(default=False, metadata=option(OVERWRITE))
    origin: Origin = field(default_factory=Origin)  # --label NAME=VALUE: the header's provenance


def meter_upstreams(given: list[str]) -> dict[str, str]:
    """`[ROUTE=]URL` items -> route -> URL (a bare URL is the embedding route)."""
    upstreams: dict[str, str] = {}
    for item in given:
        route, sep, url = item.partition("=") if "=" in item.split("://", 1)[0] else ("embedding", "=", item)
        if not sep or not url.startswith(("http://", "https://")):
            raise UserError(f"--meter-upstream {item!r}: expected [ROUTE=]http(s)://HOST[:PORT][/PATH]")
        if route in upstreams:
            raise UserError(f"--meter-upstream: route {route!r} given twice")
        upstreams[route] = url
    return upstreams


def check_record(
    record: Path | None, upstreams: dict[str, str], overwrite: bool = False, out: Path | None = None
) -> None:
    """--record writes the ingest's own meter's trace: it needs the meter, and a file it can write that is no
    file of someone else's (an earlier trace only with --overwrite: bench/results/outdir.py check_record_file)."""
    from bench.endpoints.meter_trace import is_trace_file
    from bench.results.outdir import check_record_file

    if record is None:
        return
    if not upstreams:
        raise UserError(f"--record {record}: the trace is the meter's: add --meter-upstream [ROUTE=]URL")
    if record.is_dir() or not record.parent.is_dir():
        raise UserError(f"--record {record}: expected a file in an existing folder")
    check_record_file(record, "--record", overwrite, is_trace_file, out)


def check_targets(targets: list[str], settings: list[str]) -> list[TargetSpec]:
    from bench.commands.specs import target_specs

    if not targets:
        raise UserError("--target: give at least one openwebui@URL or lightrag@URL")
    specs = target_specs(targets)
    for spec in specs:
        if spec.kind not in INGESTED_KINDS:
            raise UserError(f"--target {spec.public_text!r}: ingest measures {' or '.join(INGESTED_KINDS)} targets")
        if spec.kind == TargetKind.LIGHTRAG and settings:
            raise UserError(
                f"--target {spec.public_text!r}: --setting applies to Open WebUI; LightRAG's settings are its "
                "server's environment (run ingest once per setting)"
            )
    _refuse_repeats(specs)
    return specs


def _refuse_repeats(specs: list[TargetSpec]) -> None:
    """One server given twice would sweep its settings twice over and write each record twice; one name twice
    would make two targets one in the results."""
    servers: dict[tuple[str, str], str] = {}
    names: set[str] = set()
    for spec in specs:
        server = (spec.kind, (spec.url or "").rstrip("/"))
        if server in servers:
            raise UserError(
                f"--target {spec.public_text!r}: the same server as --target {servers[server]!r}: give each server once"
            )
        servers[server] = spec.public_text
        if spec.given_name is not None:
            if spec.given_name in names:
                raise UserError(f"--target {spec.given_name}=...: the name is given twice")
            names.add(spec.given_name)


def ingest_command(request: IngestRequest) -> list[IngestPointRecord]:
    """Check every option, then ingest; the report of what finished is written also after an error or Ctrl-C."""
    from bench.commands.ingest_console import show_ingest
    from bench.ingest.run import IngestPlan, run_ingest
    from bench.ingest.settings import parse_settings
    from bench.report import write_report
    from bench.results.lifecycle import Output

    specs = check_targets(request.targets, request.settings or [])
    upstreams = meter_upstreams(request.meter_upstream or [])
    if upstreams and "embedding" not in upstreams and any(s.kind == TargetKind.OPENWEBUI for s in specs):
        raise UserError(
            f"--meter-upstream: Open WebUI's embedding calls go through the meter's embedding route, and none is given "
            f"(routes: {', '.join(upstreams)}): add --meter-upstream embedding=URL of its embedder"
        )
    check_record(request.record, upstreams, request.overwrite, request.out)
    plan = IngestPlan(
        specs=specs,
        axes=parse_settings(request.settings or []),
        upstreams=upstreams,
        meter_host=request.meter_host,
        meter_port=request.meter_port,
        direct=not request.no_direct,
        keep=request.keep,
        timeout_s=request.timeout,
        max_docs=request.max_docs,
        record=request.record,
    )
    if request.out.exists() and not request.out.is_dir():
        raise UserError(f"--out {request.out}: is a file, not a folder")
    output = Output(
        request.out,
        request.overwrite,
        report=write_report,
        say=print,
        show=show_ingest,
        progress=True,
        origin=request.origin,
    )
    outcome = run_ingest(plan, request.dataset, request.split, output)
    report = request.out / "report.html"
    if outcome.failures:
        raise MeasurementFailed(f"{'; '.join(outcome.failures)} (the sweep stopped there; report: {report})", report)
    empty = [p for p in outcome.points if p.processed == 0]
    if empty:
        named = "; ".join(f"{p.target} {p.label}: {nothing_processed(p)}" for p in empty)
        raise MeasurementFailed(f"nothing was measured: {named} (report: {report})", report)
    return outcome.points


def nothing_processed(point: IngestPointRecord) -> str:
    """Why a combination that processed no document measured nothing, with the first document's reason."""
    example = next(iter(point.failed_examples.items()), None)
    first = f" (first: {example[0]}: {example[1]})" if example else ""
    return f"of {point.documents} documents {point.failed} failed and {point.lost} were lost{first}"

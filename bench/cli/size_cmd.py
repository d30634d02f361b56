"""`ragbench size`: the saturation rate under a p99 SLO and the TEI / Open WebUI settings for it (docs/sizing.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bench.cli.app import app
from bench.cli.identity_cmd import SPEC_HELP


@app.command()
def size(
    endpoint: Annotated[list[str], typer.Option("--endpoint", "-e", help=SPEC_HELP)],
    slo_p99: Annotated[
        float, typer.Option("--slo-p99", help="Latency SLO: p99 in milliseconds (scheduled, in the open loop).")
    ],
    op: Annotated[str, typer.Option("--op", help="embed or rerank (default: from the endpoint kind).")] = "",
    lengths: Annotated[
        str,
        typer.Option("--lengths", help="Tokens per text (words without --tokenizer), comma list; each sized apart."),
    ] = "128",
    batch: Annotated[str, typer.Option("--batch", help="Batch sizes of the closed-loop sweep (embed).")] = "1,8,32",
    documents: Annotated[
        str, typer.Option("--documents", help="Candidates per query of the closed-loop sweep (rerank).")
    ] = "10,50",
    max_concurrency: Annotated[
        int, typer.Option("--max-concurrency", help="Highest closed-loop concurrency tried.")
    ] = 32,
    max_error_rate: Annotated[
        float, typer.Option("--max-error-rate", help="Errors (unsent included) allowed at the saturation rate.")
    ] = 0.001,
    target_rps: Annotated[
        float | None, typer.Option("--target-rps", help="Requests/s to serve (at the sized batch): replicas needed.")
    ] = None,
    gpu_hourly_usd: Annotated[
        float | None,
        typer.Option("--gpu-hourly-usd", help="Price of one replica's GPU per hour: cost per 1M texts and tokens."),
    ] = None,
    ceiling: Annotated[
        Path | None,
        typer.Option("--ceiling", help="Results of `ragbench ceiling`: the server's best texts/s as a fraction of it."),
    ] = None,
    arrival: Annotated[
        str,
        typer.Option("--arrival", help="Open-loop arrivals of the saturation probes: constant, poisson or gamma:CV."),
    ] = "poisson",
    duration: Annotated[str, typer.Option("--duration", help="Measured time per point and probe.")] = "3s",
    warmup: Annotated[str, typer.Option("--warmup", help="Warm-up per point and probe, excluded.")] = "1s",
    burst: Annotated[
        int, typer.Option("--burst", help="Texts (chunks of one file) in the Open WebUI ingestion burst.")
    ] = 64,
    burst_batch: Annotated[
        str, typer.Option("--burst-batch", help="RAG_EMBEDDING_BATCH_SIZE values tried.")
    ] = "1,8,32",
    burst_concurrency: Annotated[
        str, typer.Option("--burst-concurrency", help="RAG_EMBEDDING_CONCURRENT_REQUESTS values tried (0 = unlimited).")
    ] = "1,4,0",
    max_probes: Annotated[
        int, typer.Option("--max-probes", help="Open-loop probes of the saturation search at most.")
    ] = 8,
    tolerance: Annotated[
        float,
        typer.Option(
            "--tolerance", help="The search stops when the failing rate is within this fraction of the passing one."
        ),
    ] = 0.05,
    workers: Annotated[int, typer.Option("--workers", help="Client processes, one event loop each.")] = 1,
    texts: Annotated[
        Path | None, typer.Option("--texts", help='Texts: one per line, or .jsonl of strings / {"text"}.')
    ] = None,
    dataset: Annotated[
        Path | None, typer.Option("--dataset", help="A dataset folder (corpus texts). Default: builtin:numpy-docs.")
    ] = None,
    tokenizer: Annotated[
        Path | None,
        typer.Option(
            "--tokenizer",
            help=(
                "Model folder with tokenizer.json: --lengths in tokens, tokens/s (default: the --ceiling run's model)."
            ),
        ),
    ] = None,
    nvml: Annotated[
        bool | None,
        typer.Option("--nvml/--no-nvml", help="Sample this host's GPUs (default: when the endpoint is on this host)."),
    ] = None,
    timeout: Annotated[str, typer.Option("--timeout", help="Per-request timeout.")] = "30s",
    seed: Annotated[int, typer.Option("--seed", help="Seed for poisson/gamma arrivals.")] = 0,
    out: Annotated[Path, typer.Option("--out", help="Output folder.")] = Path("reports/size"),
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace an earlier run in --out (only ragbench's files).")
    ] = False,
) -> None:
    """Closed-loop sweep, saturation search under the SLO, Open WebUI bursts, and the recommendation.
    Exit 3 when a point measured nothing or had no success (its figures cannot size anything)."""
    from bench.commands.size import SizeRequest, run_size
    from bench.core.progress import console
    from bench.load.points import p99_ms, point_label, texts_per_s
    from bench.report import write_report
    from bench.results.store import read_results

    measured = []

    def report(point) -> None:
        measured.append(point)
        scheduled, service = p99_ms(point, "scheduled"), p99_ms(point, "service")
        console.print(
            f"[dim]size: {point_label(point, point.endpoint)}: {texts_per_s(point):.1f} texts/s, service p99 "
            + (f"{service:.1f} ms" if service is not None else "- (no success)")
            + (f", scheduled p99 {scheduled:.1f} ms" if scheduled is not None else "")
            + (f", errors {sum(point.requests.errors.values())}" if point.requests.errors else "")
            + "[/dim]"
        )

    request = SizeRequest(
        endpoints=endpoint,
        slo_p99_ms=slo_p99,
        out=out,
        op=op,
        lengths=lengths,
        batches=batch,
        documents=documents,
        max_concurrency=max_concurrency,
        max_error_rate=max_error_rate,
        target_rps=target_rps,
        gpu_hourly_usd=gpu_hourly_usd,
        ceiling=ceiling,
        arrival=arrival,
        duration=duration,
        warmup=warmup,
        burst=burst,
        burst_batches=burst_batch,
        burst_concurrency=burst_concurrency,
        max_probes=max_probes,
        tolerance=tolerance,
        workers=workers,
        texts=texts,
        dataset=dataset,
        tokenizer=tokenizer,
        nvml=nvml,
        timeout=timeout,
        seed=seed,
        overwrite=overwrite,
    )
    results = out / "results.jsonl"
    try:
        run_size(request, report)
    finally:
        if measured:  # something of this run is in the results file
            for record in read_results(results).sizing:
                typer.echo(
                    f"\n{record.endpoint} ({record.op}, length {record.length}), p99 SLO {record.slo_p99_ms:g} ms:"
                )
                for line in record.lines:
                    typer.echo(f"  {line.setting}: {line.value} — {line.why}")
            typer.echo(f"report: {write_report(results)}")

"""`ragbench size`: the saturation rate under a latency SLO and the TEI / Open WebUI settings for it.

See docs/sizing.md."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bench.cli.app import app
from bench.cli.options import ArrivalSeed, Endpoints, Labels, Op, Out, Overwrite, Ray, Texts, Timeout, Workers

SloP99 = Annotated[
    float | None,
    typer.Option("--slo-p99", help="Latency SLO: p99 in milliseconds (scheduled, in the open loop); = --slo p99=MSms."),
]
SloAny = Annotated[
    str | None,
    typer.Option("--slo", help="Latency SLO on any percentile: pNN=DURATION, e.g. p95=800ms or p99=2s."),
]
MaxTime = Annotated[
    str | None,
    typer.Option(
        "--max-time",
        help="Budget for the whole run, e.g. 240s or 5m: probes fit in it; when it runs out the answer is the best "
        "so far (a lower bound), exit 0.",
    ),
]
Lengths = Annotated[
    str, typer.Option("--lengths", help="Tokens per text (words without --tokenizer), comma list; each sized apart.")
]
Batches = Annotated[str, typer.Option("--batch", help="Batch sizes of the closed-loop sweep (embed).")]
Documents = Annotated[str, typer.Option("--documents", help="Candidates per query of the closed-loop sweep (rerank).")]
MaxConcurrency = Annotated[int, typer.Option("--max-concurrency", help="Highest closed-loop concurrency tried.")]
MaxErrorRate = Annotated[
    float, typer.Option("--max-error-rate", help="Errors (unsent included) allowed at the saturation rate.")
]
TargetRps = Annotated[
    float | None, typer.Option("--target-rps", help="Requests/s to serve (at the sized batch): replicas needed.")
]
TargetTexts = Annotated[
    float | None,
    typer.Option("--target-texts-per-s", help="Texts/s to serve: replicas needed (instead of --target-rps)."),
]
TargetTokens = Annotated[
    float | None,
    typer.Option("--target-tokens-per-s", help="Tokens/s to serve: replicas needed (instead of --target-rps)."),
]
GpuHourlyUsd = Annotated[
    float | None,
    typer.Option("--gpu-hourly-usd", help="Price of one replica's GPU per hour: cost per 1M texts and tokens."),
]
Ceiling = Annotated[
    Path | None,
    typer.Option("--ceiling", help="Results of `ragbench ceiling`: the server's best texts/s as a fraction of it."),
]
Arrival = Annotated[
    str, typer.Option("--arrival", help="Open-loop arrivals of the saturation probes: constant, poisson or gamma:CV.")
]
Duration = Annotated[str, typer.Option("--duration", help="Measured time per point and probe.")]
Warmup = Annotated[str, typer.Option("--warmup", help="Warm-up per point and probe, excluded.")]
Burst = Annotated[int, typer.Option("--burst", help="Texts (chunks of one file) in the Open WebUI ingestion burst.")]
BurstBatches = Annotated[str, typer.Option("--burst-batch", help="RAG_EMBEDDING_BATCH_SIZE values tried.")]
BurstConcurrency = Annotated[
    str, typer.Option("--burst-concurrency", help="RAG_EMBEDDING_CONCURRENT_REQUESTS values tried (0 = unlimited).")
]
MaxProbes = Annotated[int, typer.Option("--max-probes", help="Open-loop probes of the saturation search at most.")]
ProbeRequests = Annotated[
    int,
    typer.Option(
        "--probe-requests",
        help="A probe lasts --duration or long enough for this many requests (at most 60 s): the p99 of fewer than "
        "100 is their slowest request.",
    ),
]
Tolerance = Annotated[
    float,
    typer.Option(
        "--tolerance", help="The search stops when the failing rate is within this fraction of the passing one."
    ),
]
Dataset = Annotated[
    Path | None, typer.Option("--dataset", help="A dataset folder (corpus texts). Default: builtin:numpy-docs.")
]
Tokenizer = Annotated[
    Path | None,
    typer.Option(
        "--tokenizer",
        help="Model folder with tokenizer.json: --lengths in tokens, tokens/s (default: the --ceiling run's model).",
    ),
]
Nvml = Annotated[
    bool | None,
    typer.Option("--nvml/--no-nvml", help="Sample this host's GPUs (default: when the endpoint is on this host)."),
]


@app.command()
def size(
    endpoints: Endpoints,
    slo_p99_ms: SloP99 = None,
    slo: SloAny = None,
    max_time: MaxTime = None,
    op: Op = "",
    lengths: Lengths = "128",
    batches: Batches = "1,8,32",
    documents: Documents = "10,50",
    max_concurrency: MaxConcurrency = 32,
    max_error_rate: MaxErrorRate = 0.001,
    target_rps: TargetRps = None,
    target_texts_per_s: TargetTexts = None,
    target_tokens_per_s: TargetTokens = None,
    gpu_hourly_usd: GpuHourlyUsd = None,
    ceiling: Ceiling = None,
    arrival: Arrival = "poisson",
    duration: Duration = "3s",
    warmup: Warmup = "1s",
    burst: Burst = 64,
    burst_batches: BurstBatches = "1,8,32",
    burst_concurrency: BurstConcurrency = "1,4,0",
    max_probes: MaxProbes = 8,
    probe_requests: ProbeRequests = 100,
    tolerance: Tolerance = 0.05,
    workers: Workers = 1,
    texts: Texts = None,
    dataset: Dataset = None,
    tokenizer: Tokenizer = None,
    nvml: Nvml = None,
    timeout: Timeout = "30s",
    seed: ArrivalSeed = 0,
    out: Out = Path("reports/size"),
    overwrite: Overwrite = False,
    ray: Ray = None,
    labels: Labels = None,
) -> None:
    """Closed-loop sweep, Open WebUI bursts, saturation search under the SLO, and the recommendation — always:
    on --max-time, Ctrl-C or SIGTERM the best so far (a lower bound). Exit 3 when a point measured nothing or had
    no success (its figures cannot size anything)."""
    options = dict(locals())  # the parameters, named as the request's fields; taken before anything else is bound
    del options["labels"]  # the header's, not a request field: `origin` below
    from bench.commands.size import SizeRequest
    from bench.commands.size_console import size_with_console
    from bench.results.provenance import Origin, parse_labels

    size_with_console(SizeRequest(**options, origin=Origin(parse_labels(labels))))

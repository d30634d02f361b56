"""`ragbench ceiling`: the reference model's in-process throughput and FLOP/s against the device's peak."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bench.cli.app import app
from bench.cli.options import Labels, Out, Overwrite

Model = Annotated[
    Path | None,
    typer.Option(
        "--model", help="Local sentence-transformers or CrossEncoder folder (default: the bundled all-MiniLM-L6-v2)."
    ),
]
Device = Annotated[str, typer.Option("--device", help="cpu | cuda")]
Dtype = Annotated[str, typer.Option("--dtype", help="float32 | float16 | bfloat16")]
Batch = Annotated[str, typer.Option("--batch", help="Batch sizes, comma-separated.")]
Lengths = Annotated[str, typer.Option("--lengths", help="Tokens per text (special tokens included), comma-separated.")]
PeakTflops = Annotated[
    float | None,
    typer.Option(
        "--peak-tflops", help="The device's peak TFLOP/s for this dtype (default: a table of known GPUs; CPU unknown)."
    ),
]
Seconds = Annotated[float, typer.Option("--seconds", help="Measured time per point.")]


@app.command()
def ceiling(
    model: Model = None,
    device: Device = "cpu",
    dtype: Dtype = "float32",
    batch: Batch = "1,32,256",
    lengths: Lengths = "16,128,512",
    peak_tflops: PeakTflops = None,
    seconds: Seconds = 2.0,
    out: Out = Path("reports/ceiling"),
    overwrite: Overwrite = False,
    labels: Labels = None,
) -> None:
    """In-process texts/s, tokens/s and achieved FLOP/s of the reference model per length and batch."""
    options = dict(locals())  # the parameters, named as the request's fields; taken before anything else is bound
    del options["labels"]  # the header's, not a request field: `origin` below
    from bench.commands.ceiling import CeilingRequest, ceiling_command
    from bench.results.provenance import Origin, parse_labels

    ceiling_command(CeilingRequest(**options, origin=Origin(parse_labels(labels))))

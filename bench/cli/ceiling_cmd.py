"""`ragbench ceiling`: the reference model's in-process throughput and FLOP/s against the device's peak."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bench.cli.app import app


@app.command()
def ceiling(
    model: Annotated[
        Path | None,
        typer.Option(
            "--model",
            help="Local sentence-transformers or CrossEncoder folder (default: the bundled all-MiniLM-L6-v2).",
        ),
    ] = None,
    device: Annotated[str, typer.Option("--device", help="cpu | cuda")] = "cpu",
    dtype: Annotated[str, typer.Option("--dtype", help="float32 | float16 | bfloat16")] = "float32",
    batch: Annotated[str, typer.Option("--batch", help="Batch sizes, comma-separated.")] = "1,32,256",
    lengths: Annotated[
        str, typer.Option("--lengths", help="Tokens per text (special tokens included), comma-separated.")
    ] = "16,128,512",
    peak_tflops: Annotated[
        float | None,
        typer.Option(
            "--peak-tflops",
            help="The device's peak TFLOP/s for this dtype (default: a table of known GPUs; CPU unknown).",
        ),
    ] = None,
    seconds: Annotated[float, typer.Option("--seconds", help="Measured time per point.")] = 2.0,
    out: Annotated[Path, typer.Option("--out", help="Output folder.")] = Path("reports/ceiling"),
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace an earlier run in --out (only ragbench's files).")
    ] = False,
) -> None:
    """In-process texts/s, tokens/s and achieved FLOP/s of the reference model per length and batch."""
    from bench.core import values as v
    from bench.core.errors import UserError
    from bench.endpoints.reference import resolve_model
    from bench.report import write_report
    from bench.results.lifecycle import Output
    from bench.sizing.ceiling import DTYPES, CeilingConfig, run_ceiling

    if device not in ("cpu", "cuda"):
        raise UserError(f"--device {device!r}: expected cpu or cuda")
    if dtype not in DTYPES:
        raise UserError(f"--dtype {dtype!r}: expected one of {', '.join(DTYPES)}")
    config = CeilingConfig(
        model=resolve_model(model),
        device=device,
        dtype=dtype,
        batches=tuple(v.number_list("--batch", batch, v.TEXTS_PER_REQUEST)),
        lengths=tuple(v.number_list("--lengths", lengths, v.TOKENS_PER_TEXT)),
        peak_tflops=None if peak_tflops is None else v.number("--peak-tflops", peak_tflops, v.PEAK_TFLOPS),
        min_seconds=v.number("--seconds", seconds, v.SECONDS),
    )
    output = Output(out, overwrite, report=write_report, show=_print_table, say=typer.echo, progress=True)
    run_ceiling(config, output)


def _print_table(results) -> None:
    points = results.ceiling
    if not points:
        return
    typer.echo(
        f"{'length':>6} {'batch':>5} {'tokens':>6} {'texts/s':>9} {'tokens/s':>10} {'TFLOP/s':>8} {'of peak':>8}"
    )
    for p in points:
        share = f"{p.peak_fraction:.1%}" if p.peak_fraction is not None else "unknown"
        typer.echo(
            f"{p.length:>6} {p.batch:>5} {p.tokens_per_text:>6.0f} {p.texts_per_s:>9.1f} {p.tokens_per_s:>10.0f} "
            f"{p.achieved_tflops:>8.3f} {share:>8}"
        )
    if points[0].peak_tflops is None:
        typer.echo(
            f"peak FLOP/s of {points[0].device_name} ({points[0].dtype}) unknown: "
            "give --peak-tflops to see the fraction"
        )

"""The plain function behind `ragbench ceiling`: check every flag, measure, print the table and the report."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from bench.commands.options import OVERWRITE, Flag, option
from bench.core import values as v
from bench.core.errors import UserError
from bench.results.lifecycle import Output
from bench.results.provenance import Origin
from bench.results.schema import CeilingPoint
from bench.results.store import Results


@dataclass
class CeilingRequest:
    """`ragbench ceiling`'s options, each declared once, here; `out` is the command line's --out."""

    out: Path
    model: Path | None = field(
        default=None,
        metadata=option(
            Flag(
                ("--model",),
                "Local sentence-transformers or CrossEncoder folder (default: the bundled all-MiniLM-L6-v2).",
            )
        ),
    )
    device: str = field(default="cpu", metadata=option(Flag(("--device",), "cpu | cuda")))
    dtype: str = field(default="float32", metadata=option(Flag(("--dtype",), "float32 | float16 | bfloat16")))
    batch: str = field(default="1,32,256", metadata=option(Flag(("--batch",), "Batch sizes, comma-separated.")))
    lengths: str = field(
        default="16,128,512",
        metadata=option(Flag(("--lengths",), "Tokens per text (special tokens included), comma-separated.")),
    )
    peak_tflops: float | None = field(
        default=None,
        metadata=option(
            Flag(
                ("--peak-tflops",),
                "The device's peak TFLOP/s for this dtype (default: a table of known GPUs; CPU unknown).",
            )
        ),
    )
    seconds: float = field(default=2.0, metadata=option(Flag(("--seconds",), "Measured time per point.")))
    overwrite: bool = field(default=False, metadata=option(OVERWRITE))
    origin: Origin = field(default_factory=Origin)  # --label NAME=VALUE: the header's provenance


def ceiling_command(request: CeilingRequest) -> list[CeilingPoint]:
    """Every point measured; the table and the report of what finished also after a failure or Ctrl-C
    (bench.results.lifecycle)."""
    from bench.endpoints.reference import resolve_model
    from bench.report import write_report
    from bench.sizing.ceiling import CeilingConfig, Device, Dtype, run_ceiling

    try:
        device = Device(request.device)
    except ValueError:
        raise UserError(f"--device {request.device!r}: expected cpu or cuda") from None
    try:
        dtype = Dtype(request.dtype)
    except ValueError:
        raise UserError(f"--dtype {request.dtype!r}: expected one of {', '.join(Dtype)}") from None
    peak = request.peak_tflops
    config = CeilingConfig(
        model=resolve_model(request.model),
        device=device,
        dtype=dtype,
        batches=tuple(v.number_list("--batch", request.batch, v.TEXTS_PER_REQUEST)),
        lengths=tuple(v.number_list("--lengths", request.lengths, v.TOKENS_PER_TEXT)),
        peak_tflops=None if peak is None else v.number("--peak-tflops", peak, v.PEAK_TFLOPS),
        min_seconds=v.number("--seconds", request.seconds, v.SECONDS),
    )
    output = Output(
        request.out,
        request.overwrite,
        report=write_report,
        show=_print_table,
        say=print,
        progress=True,
        origin=request.origin,
    )
    return run_ceiling(config, output)


def _print_table(results: Results) -> None:
    points = results.ceiling
    if not points:
        return
    print(f"{'length':>6} {'batch':>5} {'tokens':>6} {'texts/s':>9} {'tokens/s':>10} {'TFLOP/s':>8} {'of peak':>8}")
    for p in points:
        share = f"{p.peak_fraction:.1%}" if p.peak_fraction is not None else "unknown"
        print(
            f"{p.length:>6} {p.batch:>5} {p.tokens_per_text:>6.0f} {p.texts_per_s:>9.1f} {p.tokens_per_s:>10.0f} "
            f"{p.achieved_tflops:>8.3f} {share:>8}"
        )
    if points[0].peak_tflops is None:
        first = points[0]
        print(f"peak FLOP/s of {first.device_name} ({first.dtype}) unknown: give --peak-tflops to see the fraction")

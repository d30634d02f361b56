"""The in-process ceiling: what the reference model itself computes per second on this device.

`ragbench ceiling` runs the model in this process through sentence-transformers (`encode` for an
embedding model, `CrossEncoder.predict` for a reranker) on the texts `ragbench load` and `size` send
at each `--lengths` (the same cuts of the same corpus, by the model's own tokenizer), for each batch size,
and reports texts/s, tokens/s and the FLOP/s achieved against the device's peak. A server on the same device
cannot beat it by much; `size --ceiling` says how close the server got.

FLOPs per token are counted from the model's config.json for a BERT-style encoder (matrix products
only; embeddings, layer norms, softmax and activations are negligible beside them):
    per layer  2·(4·h² + 2·h·i)  for the Q, K, V, output and two feed-forward projections
             + 4·s·h             for QKᵀ and attention·V over a sequence of s tokens.
Tokens are the ones the model actually reads: special tokens included, truncated at the model's
max_seq_length; padding is not counted (the texts of one length differ by a token or two at most).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, cast

from bench.core.errors import UserError
from bench.datasets import DEMO_DATASET, resolve_dataset_path
from bench.datasets.texts import Tokenizer
from bench.load.workload import load_workload
from bench.results.lifecycle import Output, open_run
from bench.results.schema import CeilingPoint, Op

# What the model reads: texts (embed), or (query, document) pairs (rerank).
ModelInputs = list[str] | list[tuple[str, str]]


class Device(StrEnum):
    CPU = "cpu"
    CUDA = "cuda"


class Dtype(StrEnum):
    FLOAT32 = "float32"
    FLOAT16 = "float16"
    BFLOAT16 = "bfloat16"


# Dense (no sparsity) peak TFLOP/s from NVIDIA's data sheets, per dtype: float32 is the CUDA-core
# figure because PyTorch leaves TF32 matmuls off by default (torch.backends.cuda.matmul.allow_tf32);
# "tf32" is used instead when they are on. First matching name fragment wins (more specific first).
PEAK_TFLOPS: tuple[tuple[str, dict[str, float]], ...] = (
    ("H200 NVL", {"float32": 60.0, "tf32": 417.5, "float16": 835.5, "bfloat16": 835.5}),
    ("H200", {"float32": 67.0, "tf32": 494.5, "float16": 989.5, "bfloat16": 989.5}),
    ("H100 NVL", {"float32": 60.0, "tf32": 417.5, "float16": 835.5, "bfloat16": 835.5}),
    ("H100 PCIe", {"float32": 51.0, "tf32": 378.0, "float16": 756.0, "bfloat16": 756.0}),
    ("H100", {"float32": 67.0, "tf32": 494.5, "float16": 989.5, "bfloat16": 989.5}),
    ("A100", {"float32": 19.5, "tf32": 156.0, "float16": 312.0, "bfloat16": 312.0}),
    ("L40S", {"float32": 91.6, "tf32": 183.0, "float16": 362.0, "bfloat16": 362.0}),
    ("L4", {"float32": 30.3, "tf32": 60.0, "float16": 121.0, "bfloat16": 121.0}),
    ("A10", {"float32": 31.2, "tf32": 62.5, "float16": 125.0, "bfloat16": 125.0}),
    ("T4", {"float32": 8.1, "float16": 65.0}),
)


@dataclass
class CeilingConfig:
    model: Path
    device: Device = Device.CPU
    dtype: Dtype = Dtype.FLOAT32
    batches: tuple[int, ...] = (1, 32, 256)
    lengths: tuple[int, ...] = (16, 128, 512)
    peak_tflops: float | None = None  # overrides the table
    min_seconds: float = 2.0  # measured time per point (after one whole untimed call)
    min_batches: int = 3  # and at least this many batches


@dataclass(frozen=True)
class ModelShape:
    """What the FLOP count needs from config.json."""

    layers: int
    hidden: int
    intermediate: int
    max_positions: int

    def flops_per_token(self, seq_len: int) -> float:
        h, i = self.hidden, self.intermediate
        return float(self.layers * (2 * (4 * h * h + 2 * h * i) + 4 * seq_len * h))


def model_shape(model_dir: Path) -> ModelShape:
    """Layers, hidden and intermediate sizes from the model's config.json (a transformer encoder)."""
    file = model_dir / "config.json"
    try:
        config = json.loads(file.read_text(encoding="utf-8"))
        return ModelShape(
            int(config["num_hidden_layers"]),
            int(config["hidden_size"]),
            int(config["intermediate_size"]),
            int(config.get("max_position_embeddings", 512)),
        )
    except FileNotFoundError:
        raise UserError(f"{file}: not found (ceiling needs the model's config.json for its FLOP count)") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise UserError(
            f"{file}: not an encoder config with num_hidden_layers, hidden_size, intermediate_size "
            f"({type(exc).__name__}: {exc})"
        ) from None


def is_cross_encoder(model_dir: Path) -> bool:
    """A sequence-classification head means a reranker (CrossEncoder); anything else embeds."""
    try:
        config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return any(str(a).endswith("ForSequenceClassification") for a in config.get("architectures") or [])


def device_peak(device_name: str, dtype: str, tf32: bool = False) -> tuple[float | None, str | None]:
    """(peak TFLOP/s, where it came from) for a known device, else (None, None)."""
    key = "tf32" if dtype == Dtype.FLOAT32 and tf32 else dtype
    for fragment, peaks in PEAK_TFLOPS:
        if fragment.lower() in device_name.lower() and key in peaks:
            return peaks[key], f"NVIDIA data sheet, {fragment} {key} dense"
    return None, None


def texts_fingerprint(texts: list[str]) -> str:
    return hashlib.sha256("\x1e".join(texts).encode()).hexdigest()[:16]


def _torch_dtype(dtype: Dtype) -> Any:
    import torch

    return {Dtype.FLOAT32: torch.float32, Dtype.FLOAT16: torch.float16, Dtype.BFLOAT16: torch.bfloat16}[dtype]


class _Model:
    """The reference model loaded the way sentence-transformers users load it, on one device and dtype."""

    def __init__(self, path: Path, device: Device, dtype: Dtype):
        from bench.endpoints.reference import _offline

        _offline()
        import torch

        self.rerank = is_cross_encoder(path)
        if self.rerank:
            from sentence_transformers import CrossEncoder

            self.model = CrossEncoder(str(path), device=device)
        else:
            from sentence_transformers import SentenceTransformer

            self.model = SentenceTransformer(str(path), device=device)
        self.model.to(_torch_dtype(dtype))
        self.max_seq_length = int(self.model.max_length if self.rerank else self.model.max_seq_length)
        self.tokenizer = self.model.tokenizer  # the model's own: what it reads is what gets counted
        self.device_name = torch.cuda.get_device_name(0) if device == Device.CUDA else _cpu_name()
        self.tf32 = bool(device == Device.CUDA and torch.backends.cuda.matmul.allow_tf32)

    def run(self, inputs: ModelInputs, batch: int) -> None:
        if self.rerank:
            self.model.predict(inputs, batch_size=batch, convert_to_numpy=True, show_progress_bar=False)
        else:
            self.model.encode(inputs, batch_size=batch, convert_to_numpy=True, show_progress_bar=False)


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or "cpu"


def measure_ceiling(config: CeilingConfig, advance: Callable[[int], None] = lambda n: None) -> Iterator[CeilingPoint]:
    """One CeilingPoint per (length, batch), as each finishes; the model loads once."""
    from bench.endpoints.reference import model_fingerprint

    shape = model_shape(config.model)
    model = _Model(config.model, config.device, config.dtype)
    peak, peak_source = (
        (config.peak_tflops, "--peak-tflops")
        if config.peak_tflops
        else device_peak(model.device_name, config.dtype, model.tf32)
    )
    fingerprint = model_fingerprint(config.model)
    # The texts `ragbench load` and `size` send at each length (same corpus, same cuts, same tokenizer):
    # a server's throughput divides by this ceiling on identical inputs.
    workload = load_workload(None, None, config.model)
    for length in config.lengths:
        texts = workload.with_length(length).texts
        # A reranker reads (query, document) pairs: the workload's queries before texts of `length` tokens.
        inputs = (
            [(workload.queries[i % len(workload.queries)], t) for i, t in enumerate(texts)] if model.rerank else texts
        )
        tokens = _tokens_per_input(model, inputs)
        for batch in config.batches:
            done, elapsed = _timed(model, inputs, batch, config)
            texts_per_s = done / elapsed
            flops_token = shape.flops_per_token(round(tokens))
            achieved = flops_token * tokens * texts_per_s / 1e12
            yield CeilingPoint(
                model=str(config.model),
                model_fingerprint=fingerprint,
                op=Op.RERANK if model.rerank else Op.EMBED,
                device=config.device,
                device_name=model.device_name,
                dtype=config.dtype,
                batch=batch,
                length=length,
                tokens_per_text=tokens,
                max_seq_length=model.max_seq_length,
                texts=done,
                seconds=elapsed,
                texts_per_s=texts_per_s,
                tokens_per_s=tokens * texts_per_s,
                token_flops=flops_token,
                achieved_tflops=achieved,
                peak_tflops=peak,
                peak_source=peak_source,
                peak_fraction=achieved / peak if peak else None,
                texts_fingerprint=texts_fingerprint(texts),
            )
            advance(1)


def _timed(model: _Model, inputs: ModelInputs, batch: int, config: CeilingConfig) -> tuple[int, float]:
    """Inputs encoded and seconds taken: whole encode calls of several batches, as a user makes them (inputs
    repeat past the workload's end), until `min_seconds` have passed."""
    n = max(batch * config.min_batches, 64)
    chunk = (inputs * (n // len(inputs) + 1))[:n]
    # Warm-up: one whole untimed call, so every padded shape of the chunk has met its kernels (oneDNN and
    # cuBLAS pick and cache them per shape on first use) and the allocator holds its blocks.
    model.run(chunk, batch)
    done, started = 0, time.perf_counter()
    while True:
        model.run(chunk, batch)
        done += len(chunk)
        elapsed = time.perf_counter() - started
        if elapsed >= config.min_seconds:
            return done, elapsed


def _tokens_per_input(model: _Model, inputs: ModelInputs) -> float:
    """Mean tokens the model reads per input: special tokens in, truncation at max_seq_length applied."""
    if model.rerank:
        pairs = cast("list[tuple[str, str]]", inputs)  # a reranker's inputs are pairs (run_ceiling)
        encoded = model.tokenizer(
            [q for q, _ in pairs], [d for _, d in pairs], truncation=True, max_length=model.max_seq_length
        )
    else:
        encoded = model.tokenizer(inputs, truncation=True, max_length=model.max_seq_length)
    return sum(len(ids) for ids in encoded["input_ids"]) / len(inputs)


def check(config: CeilingConfig) -> None:
    """A bad model folder, length or device: one line, before anything is measured or written."""
    model_shape(config.model)
    if config.device == Device.CUDA:
        import torch

        if not torch.cuda.is_available():
            raise UserError("ceiling --device cuda: no CUDA device visible to torch here")
    special = Tokenizer(config.model).special
    short = [n for n in config.lengths if n <= special]
    if short:
        raise UserError(f"--lengths {short[0]}: a text needs more than {special} tokens (the special ones)")


def run_ceiling(config: CeilingConfig, output: Output) -> list[CeilingPoint]:
    """Measure every point into `output` (bench.results.lifecycle: each point synced as it finishes; an `end`
    record last, also after Ctrl-C, SIGTERM, or a model that fails to load or runs out of device memory)."""
    import bench
    from bench.results.frame import now_iso
    from bench.results.schema import RunCommand, RunHeader

    check(config)
    header = RunHeader(
        command=RunCommand.CEILING,
        created=now_iso(),
        ragbench_version=bench.__version__,
        dataset={
            "name": "load workload",
            "source": f"{resolve_dataset_path(DEMO_DATASET)}, cut to token lengths by the model's tokenizer",
            "lengths": list(config.lengths),
            "tokens_source": "tokenizer",
        },
        measures=[],
        measure_labels={},
        depth=0,
        seed=0,
        targets=[str(config.model)],
    )
    points: list[CeilingPoint] = []
    with open_run(output, header) as run:
        advance = run.progress("ceiling: points", len(config.batches) * len(config.lengths))
        for point in measure_ceiling(config, advance):
            run.write(point)
            points.append(point)
    return points

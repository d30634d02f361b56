"""The latency SLO a size run holds a point to: its grammar, the goodput test, and a figure's 3-digit text."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from bench.core import values as v
from bench.core.errors import UserError
from bench.load.points import error_rate, percentile_ms, texts_per_s
from bench.results.schema import LoadPointRecord


@dataclass(frozen=True)
class Slo:
    ms: float  # the latency the percentile must stay under
    max_error_rate: float = 0.001
    percentile: float = 99.0  # `--slo p95=800ms`; `--slo-p99 MS` is p99

    @property
    def name(self) -> str:
        return f"p{self.percentile:g}"

    def text(self) -> str:
        return f"{self.name} ≤ {sig3(self.ms)} ms"


def sig3(value: float) -> str:
    """A figure to 3 significant digits (7.89366 -> 7.89, 146.1 -> 146, 12345 -> 12,300, 20.0 -> 20), no exponent."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    digits = 2 - math.floor(math.log10(abs(value)))
    shown = f"{round(value, digits):,.{max(digits, 0)}f}"
    return shown.rstrip("0").rstrip(".") if "." in shown else shown  # 20.0 -> 20: trailing zeros hold nothing


_SLO = re.compile(r"^\s*p(\d+(?:\.\d+)?)\s*=\s*(.+)$", re.IGNORECASE)


def parse_slo(slo: str | None, slo_p99_ms: float | None, max_error_rate: float) -> Slo:
    """`--slo p95=800ms` (any percentile) or `--slo-p99 MS` (the same as `--slo p99=MSms`): exactly one."""
    if (slo is None) == (slo_p99_ms is None):
        raise UserError("size: give the latency SLO once: --slo pNN=DURATION (e.g. p95=800ms) or --slo-p99 MS")
    if slo_p99_ms is not None:
        return Slo(v.number("--slo-p99", slo_p99_ms, v.LATENCY_MS), max_error_rate)
    match = _SLO.match(str(slo))
    if not match or not re.search(r"[a-z]\s*$", match.group(2)):
        raise UserError(f"--slo {slo!r}: expected pNN=DURATION with a unit, such as p99=2s or p95=800ms")
    percentile = v.number("--slo", match.group(1), v.SLO_PERCENTILE)
    return Slo(v.duration("--slo", match.group(2), v.LATENCY_SECONDS) * 1000.0, max_error_rate, percentile)


def tokens_per_text(point: LoadPointRecord) -> float | None:
    texts = texts_per_s(point)
    tokens = point.throughput.tokens_per_s
    return tokens / texts if texts and tokens else None


def passes(point: LoadPointRecord, slo: Slo, quantity: str) -> bool:
    """The SLO's percentile of `quantity` under its latency and errors under the limit (goodput)."""
    value = percentile_ms(point, quantity, slo.percentile)
    return value is not None and value <= slo.ms and error_rate(point.requests) <= slo.max_error_rate

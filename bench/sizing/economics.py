"""Replicas for a target rate and the cost per million texts and tokens, from the saturation rate."""

from __future__ import annotations

import math
from dataclasses import dataclass

from bench.load.points import point_label, texts_per_s
from bench.results.schema import LoadPointRecord, SizingLine
from bench.sizing.search import Saturation
from bench.sizing.slo import sig3, tokens_per_text


@dataclass(frozen=True)
class Economics:
    target_rps: float | None = None  # requests/s at the sized batch
    gpu_hourly_usd: float | None = None
    target_texts_per_s: float | None = None  # the target in texts/s (any one of the three targets)
    target_tokens_per_s: float | None = None  # ... or in tokens/s


NO_ECONOMICS = Economics()  # no target rate, no GPU price: no economics lines


def _target(economics: Economics, sat: LoadPointRecord, rate: float) -> tuple[str, float, float, str] | None:
    """(flag, target, one replica's capacity in the target's unit, unit): capacity is the offered saturation rate,
    × batch for texts, × tokens per text for tokens; None: no target, or no tokens/text for a tokens/s one."""
    if economics.target_rps:
        return "--target-rps", economics.target_rps, rate, "requests/s"
    if economics.target_texts_per_s:
        return "--target-texts-per-s", economics.target_texts_per_s, rate * sat.batch, "texts/s"
    tokens = tokens_per_text(sat)
    if economics.target_tokens_per_s and tokens:
        return "--target-tokens-per-s", economics.target_tokens_per_s, rate * sat.batch * tokens, "tokens/s"
    return None


def economics_lines(
    saturation: Saturation | None, sat: LoadPointRecord | None, economics: Economics
) -> list[SizingLine]:
    lines: list[SizingLine] = []
    wanted = economics.target_rps or economics.target_texts_per_s or economics.target_tokens_per_s
    if sat is None or saturation is None or saturation.rate is None:
        if wanted or economics.gpu_hourly_usd:
            lines.append(SizingLine("replicas / cost", "not determined", "no saturation rate under the SLO", []))
        return lines
    target = _target(economics, sat, saturation.rate)
    if target is not None:
        flag, goal, capacity, unit = target
        lines.append(
            SizingLine(
                f"replicas for {flag}",
                ("≤ " if saturation.lower_bound else "") + str(math.ceil(goal / capacity)),
                f"{sig3(goal)} {unit} ÷ {sig3(capacity)} {unit} offered per replica at the SLO"
                + (f" (batch {sat.batch})" if unit != "requests/s" else "")
                + (" — the rate is a lower bound, so possibly fewer" if saturation.lower_bound else ""),
                [point_label(sat)],
            )
        )
    elif wanted:
        lines.append(SizingLine("replicas for --target-tokens-per-s", "not determined", "no tokens/s was measured", []))
    if economics.gpu_hourly_usd:
        per_text = economics.gpu_hourly_usd / (texts_per_s(sat) * 3600.0)
        lines.append(
            SizingLine(
                "cost per 1M texts",
                f"${sig3(per_text * 1e6)}",
                f"${economics.gpu_hourly_usd:g}/h at {sig3(texts_per_s(sat))} texts/s answered at the saturation rate",
                [point_label(sat)],
            )
        )
        tokens = tokens_per_text(sat)
        if tokens:
            lines.append(
                SizingLine(
                    "cost per 1M tokens",
                    f"${sig3(per_text / tokens * 1e6)}",
                    f"{sig3(tokens)} tokens/text ({sat.throughput.tokens_source})",
                    [point_label(sat)],
                )
            )
    return lines

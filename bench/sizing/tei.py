"""TEI's server settings a size run recommends: client batch size, concurrent requests and batch tokens."""

from __future__ import annotations

import math

from bench.load.points import percentile_ms, point_label
from bench.results.schema import LoadPointRecord, SizingLine
from bench.sizing.slo import Slo, tokens_per_text

TEI_DEFAULT_MAX_BATCH_TOKENS = 16384
TEI_DEFAULT_MAX_CONCURRENT_REQUESTS = 512
TEI_DEFAULT_MAX_CLIENT_BATCH_SIZE = 32


def pow2_at_least(value: float) -> int:
    return 1 << max(0, math.ceil(math.log2(max(value, 1.0))))


def tei_lines(
    best: LoadPointRecord | None, sat: LoadPointRecord | None, burst: LoadPointRecord | None, slo: Slo
) -> list[SizingLine]:
    lines: list[SizingLine] = []
    sources = [p for p in (best, burst) if p is not None]
    if sources:
        largest = max(max(p.batch for p in sources), 1)
        # Below the default a lower limit only refuses larger batches (422): with Open WebUI's batch unmeasured (or
        # another client's), a limit of the sized batch would refuse its batched calls; the default serves the same.
        below = (
            f"; they send at most {largest}, below TEI's default {TEI_DEFAULT_MAX_CLIENT_BATCH_SIZE}: keep the "
            "default (a lower limit serves no more, and refuses any client that batches more, such as Open WebUI)"
            if largest < TEI_DEFAULT_MAX_CLIENT_BATCH_SIZE
            else ""
        )
        lines.append(
            SizingLine(
                "TEI --max-client-batch-size",
                str(max(largest, TEI_DEFAULT_MAX_CLIENT_BATCH_SIZE)),
                "the largest batch a client sends (sized batch, Open WebUI's batch); TEI answers 422 above it"
                + (below or f" (default {TEI_DEFAULT_MAX_CLIENT_BATCH_SIZE})"),
                [point_label(p) for p in sources],
            )
        )
    concurrent = _concurrent_requests_line(best, sat, burst, slo)
    tokens = _batch_tokens_line(sat)
    return lines + [line for line in (concurrent, tokens) if line is not None]


def _concurrent_requests_line(
    best: LoadPointRecord | None, sat: LoadPointRecord | None, burst: LoadPointRecord | None, slo: Slo
) -> SizingLine | None:
    # Inputs in flight: since TEI 1.9 each input holds one permit of --max-concurrent-requests, taken
    # without waiting, so fewer permits than inputs in flight means 429s (../shared/contracts).
    in_flight: list[tuple[float, str, LoadPointRecord]] = []
    if best is not None:
        in_flight.append((best.batch * (best.concurrency or 1), "closed-loop users × batch", best))
    if sat is not None:
        seconds = (percentile_ms(sat, "scheduled", slo.percentile) or 0.0) / 1000.0
        in_flight.append(((sat.rate or 0.0) * sat.batch * seconds, f"rate × batch × {slo.name} (Little's law)", sat))
    if burst is not None:
        requests = math.ceil((burst.burst or 0) / burst.batch)
        cap = burst.concurrency or requests
        in_flight.append((min(cap, requests) * burst.batch, "Open WebUI's requests in flight × batch", burst))
    if not in_flight:
        return None
    need, how, _point = max(in_flight, key=lambda t: t[0])
    value = max(TEI_DEFAULT_MAX_CONCURRENT_REQUESTS, pow2_at_least(need))
    return SizingLine(
        "TEI --max-concurrent-requests",
        str(value),
        f"≥ {need:.0f} inputs in flight ({how}), a power of two, at least TEI's default "
        f"{TEI_DEFAULT_MAX_CONCURRENT_REQUESTS}; since TEI 1.9 every input takes a permit",
        [point_label(p) for _, _, p in in_flight],
    )


def _batch_tokens_line(sat: LoadPointRecord | None) -> SizingLine | None:
    tokens = tokens_per_text(sat) if sat is not None else None
    if sat is None or not tokens or sat.latency_ms.scheduled is None or sat.rate is None:
        return None
    mean_s = sat.latency_ms.scheduled.mean / 1000.0
    waiting = sat.rate * sat.batch * mean_s * tokens  # Little's law: mean inputs in the server × tokens each
    value = max(TEI_DEFAULT_MAX_BATCH_TOKENS, pow2_at_least(waiting))
    return SizingLine(
        "TEI --max-batch-tokens",
        str(value),
        f"the {waiting:.0f} tokens in the server on average at the saturation rate fit one forward "
        f"batch ({tokens:.0f} tokens/text); derived, not measured on TEI at this setting",
        [point_label(sat)],
    )

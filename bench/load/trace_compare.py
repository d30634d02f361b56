"""A replay beside its recording, per route: calls, latency p50/p99 (the meter's time recorded, scheduled latency
replayed), texts per call, and whether the arrivals keep the recorded shape (two-sample KS on inter-arrival gaps)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from bench.load.recorder import Outcome
from bench.load.trace_replay import RouteReplay


@dataclass(frozen=True)
class RouteComparison:
    route: str
    endpoint: str
    calls_recorded: int
    calls_replayed: int
    errors: int
    behind: int  # sends that left more than BEHIND_S after their intended time
    p50_recorded_ms: float
    p50_replayed_ms: float | None
    p99_recorded_ms: float
    p99_replayed_ms: float | None
    texts_recorded: int
    texts_replayed: int
    texts_identical: bool  # every call carried its recorded count of texts
    arrivals_ks_p: float | None  # None: fewer than 2 gaps on a side

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _ms(values: np.ndarray, q: float) -> float | None:
    return float(np.percentile(values, q) * 1000) if values.size else None


def compare_route(replay: RouteReplay, speed: float) -> RouteComparison:
    """The recording (its gaps divided by `speed`, repeated as often as the replay looped) against the replay."""
    from scipy.stats import ks_2samp

    recorded = replay.recorded
    loops = max(1, len(replay.intended_s) // max(1, len(recorded)))
    ok = np.asarray([o == Outcome.OK for o in replay.outcomes], dtype=bool)
    latencies = replay.latencies_s[ok] if ok.size else np.zeros(0)
    recorded_latency = np.asarray([c.latency for c in recorded])
    recorded_gaps = np.diff([c.at for c in recorded]) / speed
    replayed_gaps = np.diff(replay.sent_s)
    ks = (
        float(ks_2samp(recorded_gaps, replayed_gaps).pvalue)
        if recorded_gaps.size > 1 and replayed_gaps.size > 1
        else None
    )
    expected_texts = [c.texts for c in recorded] * loops
    return RouteComparison(
        route=replay.route,
        endpoint=replay.endpoint,
        calls_recorded=len(recorded),
        calls_replayed=len(replay.intended_s),
        errors=int(np.count_nonzero(~ok)),
        behind=replay.behind,
        p50_recorded_ms=float(np.percentile(recorded_latency, 50) * 1000),
        p50_replayed_ms=_ms(latencies, 50),
        p99_recorded_ms=float(np.percentile(recorded_latency, 99) * 1000),
        p99_replayed_ms=_ms(latencies, 99),
        texts_recorded=sum(expected_texts),
        texts_replayed=sum(replay.texts),
        texts_identical=list(replay.texts) == expected_texts,
        arrivals_ks_p=ks,
    )

"""A replay beside its recording, per route: calls, latency p50/p99 (the meter's time recorded, scheduled latency
replayed), texts per call, and whether the arrivals keep the recorded shape (two-sample KS on inter-arrival gaps,
compared to within GAP_TOLERANCE_S)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from bench.load.recorder import Outcome
from bench.load.trace_replay import BEHIND_S, RouteReplay

# Gaps are compared to within the replay's own timing tolerance: a send is on time up to BEHIND_S late (never early),
# so two on-time sends move the gap between them by at most this much either way.
GAP_TOLERANCE_S = BEHIND_S


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
    arrivals_ks_p: float | None  # gaps_ks_p; None: fewer than 2 gaps on a side

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _ms(values: np.ndarray, q: float) -> float | None:
    return float(np.percentile(values, q) * 1000) if values.size else None


def gaps_ks_p(recorded: np.ndarray, replayed: np.ndarray, tolerance_s: float = GAP_TOLERANCE_S) -> float | None:
    """Two-sample KS p of two gap samples, each CDF allowed `tolerance_s` of horizontal slack; None: fewer than 2
    gaps on a side.

    Plain KS rejects a constant-gap recording replayed with any jitter (a point mass against a spread: p -> 0). The
    statistic here is sup over x of F_replayed(x - tol) - F_recorded(x) and F_recorded(x - tol) - F_replayed(x)
    (0 when every difference is within the tolerance; tol 0: the KS statistic). It never exceeds the KS statistic,
    so its p from the two-sample KS distribution (scipy's asymptotic one) is a valid, conservative test: a replay
    at another rate or with another arrival process still moves the CDF by more than the tolerance and fails."""
    from scipy.stats import kstwo

    if recorded.size < 2 or replayed.size < 2:
        return None
    a, b = np.sort(recorded), np.sort(replayed)
    n, m = a.size, b.size
    # Each one-sided supremum is reached at a jump of its positive term: x = b_j + tol, then x = a_i + tol.
    replayed_ahead = np.arange(1, m + 1) / m - np.searchsorted(a, b + tolerance_s, side="right") / n
    recorded_ahead = np.arange(1, n + 1) / n - np.searchsorted(b, a + tolerance_s, side="right") / m
    statistic = max(0.0, float(replayed_ahead.max()), float(recorded_ahead.max()))
    return float(kstwo.sf(statistic, round(n * m / (n + m))))


def compare_route(replay: RouteReplay, speed: float) -> RouteComparison:
    """The recording (its gaps divided by `speed`, repeated as often as the replay looped) against the replay."""
    recorded = replay.recorded
    loops = max(1, len(replay.intended_s) // max(1, len(recorded)))
    ok = np.asarray([o == Outcome.OK for o in replay.outcomes], dtype=bool)
    latencies = replay.latencies_s[ok] if ok.size else np.zeros(0)
    recorded_latency = np.asarray([c.latency for c in recorded])
    recorded_gaps = np.diff([c.at for c in recorded]) / speed
    replayed_gaps = np.diff(replay.sent_s)
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
        arrivals_ks_p=gaps_ks_p(recorded_gaps, replayed_gaps),
    )

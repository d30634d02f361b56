"""Where an app's query time goes: the hop split of a metered query.

An app target (Open WebUI, LightRAG) with `meter=URL` sends its embedding, rerank and LLM calls through a
running `ragbench meter` (one route per provider) and runs its queries one at a time, so that two meter
snapshots around a query hold that query's calls alone. Its latency then splits into one part per route
that had calls, `<route>_ms` (the wall time with at least one of the route's calls in flight, the
meter's `busy_seconds`), and `app_ms`: the rest, which is the app itself (vector store, BM25, fusion,
its own HTTP handling) plus the hop from the app to the meter. The parts sum to the query's latency.

Through a proxy such as LiteLLM, a meter on each side of it (`app → meter/litellm → LiteLLM →
meter/embedding → TEI`) and `meter_nest=litellm>embedding` say that the outer route's time holds the
inner one's: `litellm_ms` is then LiteLLM's own share (its calls' time less the inner calls'), and
`embedding_ms` the provider's.

Calls of different routes that ran at the same time (LightRAG can ask the LLM and embed at once) are
counted once per route, so the hops can add up to more than the query took; the query then carries
HOPS_OVERLAP, `app_ms` is 0 and the parts are each route's own time.

A nesting is checked against the meter's routes before any query (a route it does not have is a typo), and
against each query's figures: an inner route busier than its outer one cannot be held by it (the pair is
reversed, or not nested), and that query carries HOPS_NEST_MISMATCH and no split. A meter restarted between a
query's two snapshots (its counters went backwards, or it answers as another instance) gives that query
METER_RESTARTED and neither cost nor split: never a negative figure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import astuple, dataclass
from typing import TypedDict

from bench.core.errors import UserError
from bench.endpoints.meter import MeterClient, Usage, cost
from bench.targets.base import QueryResult

HOPS_OVERLAP = "hops-overlap"
HOPS_NEST_MISMATCH = "hops-nest-mismatch"
METER_RESTARTED = "meter-restarted"
APP_PART = "app_ms"
# Sums of the hops within this share of the query's latency are timing noise, not overlap.
OVERLAP_TOLERANCE = 0.05


@dataclass(frozen=True)
class Nesting:
    """`outer>inner` route pairs: the outer route's calls wait on the inner route's (a proxy between them)."""

    pairs: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, text: str | None, spec: str) -> Nesting:
        if not text:
            return cls()
        pairs = []
        for item in text.split(","):
            outer, sep, inner = item.partition(">")
            if not sep or not outer.strip() or not inner.strip() or outer.strip() == inner.strip():
                raise UserError(
                    f"target {spec!r}: meter_nest={text!r}: expected OUTER>INNER route pairs, comma-separated"
                )
            pairs.append((outer.strip(), inner.strip()))
        return cls(tuple(pairs))

    def check_routes(self, routes: list[str], meter_url: str, spec: str) -> None:
        """Every route a pair names must be one of the meter's: a typo would credit all time to one hop."""
        for outer, inner in self.pairs:
            for route in (outer, inner):
                if route not in routes:
                    raise UserError(
                        f"target {spec!r}: meter_nest={outer}>{inner}: the meter at {meter_url} has no route "
                        f"{route!r} (its routes: {', '.join(sorted(routes)) or 'none'})"
                    )

    def mismatched(self, busy_ms: dict[str, float]) -> bool:
        """Whether a pair's inner route was busier than its outer one in a query: an outer route holds its inner
        route's calls, so such a pair is reversed or not nested."""
        return any(
            busy_ms[inner] > busy_ms[outer] * (1.0 + OVERLAP_TOLERANCE)
            for outer, inner in self.pairs
            if outer in busy_ms and inner in busy_ms
        )


def hop_parts(latency_ms: float, spent: dict[str, Usage], nesting: Nesting) -> tuple[dict[str, float], list[str]]:
    """A query's latency split by hop (`spent`: each route's counters over the query), and its warnings."""
    busy_ms = {route: usage.busy_seconds * 1000.0 for route, usage in spent.items() if usage.calls > 0}
    if nesting.mismatched(busy_ms):
        return {}, [HOPS_NEST_MISMATCH]
    parts = {f"{route}_ms": ms for route, ms in busy_ms.items()}
    for outer, inner in nesting.pairs:
        outer_part, inner_part = f"{outer}_ms", f"{inner}_ms"
        if outer_part in parts and inner_part in parts:
            parts[outer_part] = max(0.0, parts[outer_part] - parts[inner_part])
    hops = sum(parts.values())
    if hops > latency_ms * (1.0 + OVERLAP_TOLERANCE):
        return {**parts, APP_PART: 0.0}, [HOPS_OVERLAP]
    return {**parts, APP_PART: max(0.0, latency_ms - hops)}, []


class MeterDescription(TypedDict):
    """`config.metered` of an app target: the meter, the routes' nesting, and what the latency parts mean."""

    url: str
    nesting: list[str]  # OUTER>INNER
    latency_parts: str


class MeteredQueries:
    """Runs an app target's queries through a meter's snapshots: each query's cost and hop split."""

    def __init__(self, url: str, nesting: Nesting, spec: str):
        self.client = MeterClient(url)
        self.nesting = nesting
        self.spec = spec

    def check(self) -> None:
        """Before any query: the meter answers, and the nesting names its routes."""
        self.nesting.check_routes(list(self.client.snapshot()), self.client.url, self.spec)

    def snapshot(self) -> dict[str, Usage]:
        return self.client.snapshot()

    def run(self, query: Callable[[], QueryResult]) -> QueryResult:
        """One query, alone in flight: its result with `cost` and, when it succeeded, `parts_ms`."""
        before = self.client.reading()
        result = query()
        after = self.client.reading()
        spent = {route: now.minus(before.usage.get(route, Usage())) for route, now in after.usage.items()}
        if after.instance != before.instance or _went_backwards(before.usage, spent):
            result.warnings.append(METER_RESTARTED)
            return result
        result.cost = {**result.cost, **cost(before.usage, after.usage)}
        if result.error is None and result.latency_s is not None:
            parts, warnings = hop_parts(result.latency_s * 1000.0, spent, self.nesting)
            result.parts_ms.update(parts)
            result.warnings.extend(warnings)
        return result

    def describe(self) -> MeterDescription:
        return {
            "url": self.client.url,
            "nesting": [f"{outer}>{inner}" for outer, inner in self.nesting.pairs],
            "latency_parts": "<route>_ms: the route's busy time; app_ms: the rest (the app and its hop to the meter)",
        }

    def close(self) -> None:
        self.client.close()


def _went_backwards(before: dict[str, Usage], spent: dict[str, Usage]) -> bool:
    """A route gone, or a counter lower than before: the meter was restarted (or replaced) during the query."""
    if any(route not in spent for route in before):
        return True
    return any(value < 0 for usage in spent.values() for value in astuple(usage))

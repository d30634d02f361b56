"""The app's provider calls per rung, through the meter `ragbench ingest` runs (`--meter-upstream`): the meter
forwards `/embedding` (and any other route) to the provider, the app's provider URL points at it, and every call is
logged. A rung's increment owns the calls made from the start of its ingest until the app is idle again; its queries
own those made while they are asked (the untimed warm-up query's left out)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from bench.endpoints.meter import Meter
from bench.ingest.calls import by_route
from bench.ingest.record import EMBEDDING_ROUTE, distinct_texts
from bench.ingest.sweep import settle
from bench.results.schema import EndpointCalls
from bench.targets.base import Target


@dataclass(frozen=True)
class MeterPlan:
    """`--meter-upstream` and where the meter listens; no upstream: no meter."""

    upstreams: dict[str, str]
    host: str
    port: int
    timeout_s: float = 600.0


def start_meter(plan: MeterPlan) -> Meter | None:
    """The meter `ingest` runs (each upstream probed, the route URLs printed), or None without upstreams."""
    from bench.ingest.run import IngestPlan
    from bench.ingest.run import start_meter as start_ingest_meter

    given = IngestPlan([], [], plan.upstreams, plan.host, plan.port, False, False, plan.timeout_s, None)
    return start_ingest_meter(given)


@dataclass(frozen=True)
class RungCalls:
    """One phase's calls (an increment's ingest, or the rung's queries), by meter route."""

    calls: dict[str, EndpointCalls] = field(default_factory=dict)
    chunks: int = 0  # distinct texts the embedding route carried: the app's chunks embedded


@dataclass(frozen=True)
class Window:
    """Readings of the meter's calls between two moments; without a meter, every reading is None."""

    meter: Meter | None

    def mark(self) -> int:
        return len(self.meter.calls) if self.meter is not None else 0

    def read(self, target: Target, since: int, wall_s: float) -> RungCalls | None:
        """The calls from mark `since` on, once the app made its last (its pending calls poked out of it first)."""
        if self.meter is None:
            return None
        settle(self.meter, _poke(target))
        calls = self.meter.calls_since(since)
        embedded = [c for c in calls if c.route == EMBEDDING_ROUTE]
        return RungCalls(by_route(calls, wall_s), distinct_texts(embedded, _not_chunks(target)) or 0)


def _not_chunks(target: Target) -> frozenset[str]:
    """The texts the app embeds that are no chunk: Open WebUI's knowledge base's own name and description."""
    from bench.targets.openwebui import OpenWebUITarget
    from bench.targets.openwebui_knowledge import knowledge_base_text

    if isinstance(target, OpenWebUITarget) and target.kb_name:
        return frozenset({knowledge_base_text(target.kb_name)})
    return frozenset()


def _poke(target: Target) -> Callable[[], object]:
    """A harmless request that makes Open WebUI run the calls it left pending (bench/ingest/sweep.py `settle`);
    other apps need none."""
    from bench.targets.openwebui import OpenWebUITarget

    if isinstance(target, OpenWebUITarget):
        return lambda: target.http.call("GET", "/api/version")
    return lambda: None

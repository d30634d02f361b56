"""What each quality point costs: the run's first measure against each target's costs, and the reranker gains.

The frontier table puts every target's first measure beside its per-query latency (p50, p99: only targets that
answer one query at a time have them), its search time per query (every target has it) and its ingest rate
(texts/s of the `ingest` cost block, where the target embedded through an endpoint; a target whose vectors another
target of the run embedded, a shared embedder, is credited that target's rate, marked `shared with T`). With the
run's price of the serving hardware (`quality --hourly-usd`), each also costs $ per 1k queries (its search time) and
$ per 1M texts ingested (its ingest rate): the same order as those two costs, so no Pareto column of their own.
A target is Pareto-optimal
against a cost when no other finished target is at least as good on the measure and at least as cheap on that cost,
and better on one of the two; targets without that cost figure take no part in its comparison.

The reranker-gain table pairs each `X+rerank` target with the target `X` of the same first stage and reads the
pair's difference from the run's own comparisons (bootstrap interval, Holm correction across all the pairs of the
measure), so it always agrees with the significance table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bench.core.pvalues import fmt_p
from bench.report.quality_tables import fmt, holm_verdict, over, reranked_names
from bench.results.schema import ComparisonRecord, TargetRecord, TargetStatus
from bench.results.schema.cost import CostBlock
from bench.results.store import Results

FRONTIER_NOTE = (
    "Pareto-optimal against a cost: no other finished target is at least as good on the measure and at least as "
    "cheap on that cost (lower latency, higher ingest texts/s), and better on one of them. p50/p99 exist only for "
    "targets that answer one query at a time; ingest texts/s only where the corpus went through an embedding "
    "endpoint, credited to every target of the run that read those vectors from the cache (shared with T: the "
    "rate of the target that embedded them); vectors cached by an earlier run have no rate here; – takes no part."
)

PRICE_NOTE = (
    "At ${usd:g} per hour of serving hardware (--hourly-usd): $ per 1k queries = price × search time per query × "
    "1,000; $ per 1M texts = price ÷ ingest texts/s × 10⁶ (the shared rate where marked). They order targets as "
    "search ms/query and ingest texts/s do."
)

RERANK_GAIN_NOTE = (
    "Each `X+rerank` target against the target `X` of the same first stage at the same background rate (under "
    "--background: `X+rerank@bg5` against `X@bg5`, what reranking gains under that load), on the run's first "
    "measure: mean of "
    "the per-query gain (reranked − first stage) with its 95% bootstrap interval, and the randomization test's "
    "p-value Holm-corrected across all the pairs of the measure (the same figures as the significance table)."
)


@dataclass(frozen=True)
class Cost:
    name: str
    value: Callable[[TargetRecord], float | None]
    lower_is_better: bool
    digits: int
    note: Callable[[TargetRecord], str] = lambda t: ""  # said beside the figure (where it came from)


def _float(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def ingest_rate(t: TargetRecord) -> tuple[float | None, str]:
    """The target's ingest texts/s and where it came from: its own `ingest` cost block's, else (every text read
    from the cache) the rate of the target of this run that embedded most of them (`shared with T`); none for
    vectors an earlier run cached, or records without the block (targets that embed nothing through an endpoint)."""
    block = t.cost_block("ingest")
    own = _float(block.get("texts_per_s"))
    if own is not None:
        return own, ""
    shared = [s for s in block.get("shared") or [] if isinstance(s, dict) and _float(s.get("texts_per_s")) is not None]
    if shared:
        most = max(shared, key=lambda s: s.get("texts") or 0)
        return _float(most["texts_per_s"]), f"shared with {most['with']}"
    if block.get("from_cache"):
        return None, "from an earlier run's cache"
    return None, ""


def search_ms(t: TargetRecord) -> float | None:
    return 1000 * t.search_seconds / t.queries if t.queries else None


COSTS = [
    Cost("p50 ms", lambda t: t.latency_ms.get("p50"), True, 1),
    Cost("p99 ms", lambda t: t.latency_ms.get("p99"), True, 1),
    Cost("search ms/query", search_ms, True, 1),
    Cost("ingest texts/s", lambda t: ingest_rate(t)[0], False, 1, lambda t: ingest_rate(t)[1]),
]


def priced(usd_per_hour: float) -> list[Cost]:
    """The $ columns at a price per hour of the serving hardware: from search time and ingest rate."""
    per_s = usd_per_hour / 3600.0

    def per_1m_texts(t: TargetRecord) -> float | None:
        rate = ingest_rate(t)[0]
        return per_s / rate * 1e6 if rate else None

    def per_1k_queries(t: TargetRecord) -> float | None:
        ms = search_ms(t)
        return per_s * ms if ms is not None else None  # ms per query × 1,000 queries / 1,000 ms per s

    return [
        Cost("$ per 1k queries", per_1k_queries, True, 4),
        Cost("$ per 1M texts", per_1m_texts, True, 4, lambda t: ingest_rate(t)[1]),
    ]


def _cell(cost: Cost, t: TargetRecord) -> str:
    note = cost.note(t)
    shown = fmt(cost.value(t), cost.digits)
    return f"{shown} ({note})" if note else shown


def _quality(results: Results, t: TargetRecord) -> float | None:
    record = results.metric(t.name, results.header.measures[0])
    return record.mean if record and t.status == TargetStatus.OK else None


def _pareto(points: dict[str, tuple[float, float]], lower_is_better: bool) -> set[str]:
    """Names whose (quality, cost) no other point dominates."""

    def cheaper(a: float, b: float) -> bool:
        return a < b if lower_is_better else a > b

    def dominates(p: tuple[float, float], q: tuple[float, float]) -> bool:
        at_least = p[0] >= q[0] and (p[1] == q[1] or cheaper(p[1], q[1]))
        return at_least and (p[0] > q[0] or cheaper(p[1], q[1]))

    return {name for name, q in points.items() if not any(dominates(p, q) for p in points.values())}


@dataclass(frozen=True)
class Frontier:
    """One cost's points: target -> (quality, cost), and the Pareto-optimal targets among them."""

    cost: Cost
    points: dict[str, tuple[float, float]]
    optimal: set[str]


def frontiers(results: Results) -> list[Frontier]:
    """Each cost's frontier over the finished targets that have its figure (the table and the plot read these)."""
    quality = {t.name: _quality(results, t) for t in results.targets}
    found = []
    for cost in COSTS:
        points = {
            t.name: (q, c)
            for t in results.targets
            if (q := quality[t.name]) is not None and (c := cost.value(t)) is not None
        }
        found.append(Frontier(cost, points, _pareto(points, cost.lower_is_better)))
    return found


def frontier_note(results: Results) -> str:
    """The table's note, with the price the $ columns use where the run has one."""
    usd = results.header.hourly_usd
    return FRONTIER_NOTE + (" " + PRICE_NOTE.format(usd=usd) if usd else "")


def frontier_rows(results: Results) -> tuple[list[str], list[list[str]]]:
    measure = results.header.measures[0]
    label = results.header.measure_labels.get(measure, measure)
    quality = {t.name: _quality(results, t) for t in results.targets}
    optimal: dict[str, list[str]] = {t.name: [] for t in results.targets}
    for frontier in frontiers(results):
        for name in frontier.optimal:
            optimal[name].append(frontier.cost.name)
    shown = COSTS + (priced(results.header.hourly_usd) if results.header.hourly_usd else [])
    header = ["target", label, *[c.name for c in shown], "Pareto-optimal against"]
    rows = [
        [
            t.name,
            fmt(quality[t.name]) + over(results.metric(t.name, measure)) if t.status == TargetStatus.OK else "failed",
            *[_cell(c, t) for c in shown],
            ", ".join(optimal[t.name]) or "–",
        ]
        for t in results.targets
    ]
    return header, rows


def rerank_pairs(results: Results) -> list[tuple[TargetRecord, TargetRecord]]:
    """(first stage X, X+rerank) for every reranked target whose first stage ran as a target of its own, at the
    same background rate (bench/quality/rerank_pairs.py)."""
    by_name = {t.name: t for t in results.targets}
    return [(by_name[first], by_name[reranked]) for first, reranked in reranked_names(results)]


def _not_compared(results: Results, measure: str, first: TargetRecord, reranked: TargetRecord) -> str:
    a, b = results.metric(first.name, measure), results.metric(reranked.name, measure)
    if a is None or b is None or a.ranked == b.ranked:
        return "not compared"
    label = results.header.measure_labels.get(measure, measure)
    lengths = [over(rec).strip() or "over its full ranking" for rec in (b, a)]
    return f"not tested: {label} {lengths[0]} reranked, {lengths[1]} first stage (rankings of different lengths)"


def _comparison(results: Results, measure: str, first: str, reranked: str) -> ComparisonRecord | None:
    return next(
        (c for c in results.comparisons if c.measure == measure and {c.a, c.b} == {first, reranked}),
        None,
    )


def rerank_gain_rows(results: Results) -> tuple[list[str], list[list[str]]]:
    measure = results.header.measures[0]
    label = results.header.measure_labels.get(measure, measure)
    header = [
        "reranked",
        "first stage",
        f"{label} first stage",
        f"{label} reranked",
        "gain [95% CI, unadjusted]",
        "Holm p (rand.)",
        "verdict",
    ]
    rows = []
    for first, reranked in rerank_pairs(results):
        c = _comparison(results, measure, first.name, reranked.name)
        if c is None:  # the run stopped before the comparisons, or the rankings' lengths differ below the cut-off
            rows.append(
                [reranked.name, first.name, "–", "–", "–", "–", _not_compared(results, measure, first, reranked)]
            )
            continue
        sign = 1.0 if c.b == reranked.name else -1.0  # the gain is reranked − first stage
        low, high = sorted((sign * c.ci_low, sign * c.ci_high))
        gain = sign * c.mean_diff
        verdict = holm_verdict(c.p_randomization_holm, low, high, "reranking helps" if gain > 0 else "reranking hurts")
        means = (c.mean_a, c.mean_b) if sign > 0 else (c.mean_b, c.mean_a)
        rows.append(
            [
                reranked.name,
                first.name,
                fmt(means[0]),
                fmt(means[1]),
                f"{gain:+.4f} [{low:+.4f}, {high:+.4f}]",
                fmt_p(c.p_randomization_holm),
                verdict,
            ]
        )
    return header, rows


PARTS_NOTE = (
    "Per-query latency split into its parts. Targets that name an endpoint: embedding the query, the first-stage "
    "search (the query's latency less its measured parts) and the rerank request. Apps with `meter=` (Open WebUI, "
    "LightRAG): one part per metered hop (`embedding`, `rerank`, `llm`, …: the time with one of its calls in "
    "flight; an outer hop nested over an inner one with `meter_nest=` is the proxy's own share) and `app`, the "
    "rest: the app itself and its hop to the meter. p50 and p99 of each part over the queries that succeeded, so "
    "the parts' percentiles need not add up to the whole's."
)

COST_BLOCKS_NOTE = (
    "What embedding cost, per phase: `ingest` the corpus, `query_embed` the queries. Texts counts every text, "
    "from cache those the vector cache held (never sent): embedded by another target of this run (shared with T: "
    "the frontier credits it that target's ingest rate) or by an earlier run; tokens as the endpoint reports them "
    "or as the endpoint's tokenizer= counts them, each count with its source; texts/s and tokens/s are of the "
    "texts sent, over the phase's wall time (– when nothing was sent or no tokens were counted); request "
    "p50/p99 per request; retries and splits by cause (a split halves a batch the server refused as too large); "
    "over input limit: texts sent that are longer than the model's input limit (truncated or refused, as the "
    "endpoint's `truncate` says), counted where the endpoint tells both its limit and its tokenizer (TEI's /info "
    "and /tokenize)."
)

_PART_ORDER = ("embed_ms", "search_ms", "rerank_ms")
_LAST_PART = "app_ms"  # the app's own rest (bench/targets/hops.py): read after the hops it is the rest of


def part_names(results: Results) -> list[str]:
    """The latency parts any target has, in reading order: served parts, metered hops, the app's rest."""
    found = {k for t in results.targets for k in t.latency_parts_ms}
    ordered = [p for p in _PART_ORDER if p in found] + sorted(found - {*_PART_ORDER, _LAST_PART})
    return ordered + ([_LAST_PART] if _LAST_PART in found else [])


def latency_parts_rows(results: Results) -> tuple[list[str], list[list[str]]]:
    """Per target with a latency split: each part's p50 and p99 (ms); no rows when no target has one."""
    parts = part_names(results)
    header = ["target", *[f"{p.removesuffix('_ms')} {q} ms" for p in parts for q in ("p50", "p99")]]
    rows = [
        [t.name, *[fmt(t.latency_parts_ms.get(p, {}).get(q), 1) for p in parts for q in ("p50", "p99")]]
        for t in results.targets
        if t.latency_parts_ms
    ]
    return header, rows


def _by_cause(counts: object) -> str:
    if not isinstance(counts, dict) or not counts:
        return "none"
    return ", ".join(f"{cause}: {n}" for cause, n in sorted(counts.items()))


def _number(value: object, digits: int) -> str:
    return fmt(float(value), digits) if isinstance(value, int | float) and not isinstance(value, bool) else "–"


def _over_limit(block: CostBlock) -> str:
    """Texts sent over the model's input limit, with how they were counted (or why they were not)."""
    by = block.get("over_limit_by")
    if by is None:  # a record written before the count existed
        return "–"
    over = block.get("over_limit")
    return f"{_number(over, 0)} ({by})" if over is not None else str(by)


def _from_cache(block: CostBlock) -> str:
    """Texts read from the cache, with who embedded them: a target of this run (shared: its cost is credited) or an
    earlier run (records written before the ledger say neither)."""
    shown = _number(block.get("from_cache"), 0)
    shared = block.get("shared")
    if not block.get("from_cache") or not isinstance(shared, list):
        return shown
    said = [f"{s.get('texts')} shared with {s.get('with')}" for s in shared if isinstance(s, dict)]
    earlier = block.get("from_earlier_run")
    if earlier:
        said.append(f"{earlier} from an earlier run")
    return f"{shown} ({', '.join(said)})" if said else shown


def _tokens(block: CostBlock) -> str:
    """Tokens with where the count came from (the endpoint, a tokenizer) or why there is none."""
    by = block.get("tokens_by")
    return f"{_number(block.get('tokens'), 0)} ({by})" if by else _number(block.get("tokens"), 0)


def cost_block_rows(results: Results) -> tuple[list[str], list[list[str]]]:
    """One row per target and embedding phase (`ingest`, `query_embed`); no rows when no target has a block."""
    header = [
        "target",
        "phase",
        "texts",
        "from cache",
        "tokens",
        "wall s",
        "texts/s",
        "tokens/s",
        "request p50/p99 ms",
        "retries",
        "splits",
        "over input limit",
    ]
    rows = []
    for t in results.targets:
        for phase, b in t.cost_blocks.items():
            request = b.get("request_ms") or {}
            rows.append(
                [
                    t.name,
                    phase,
                    _number(b.get("texts"), 0),
                    _from_cache(b),
                    _tokens(b),
                    _number(b.get("wall_s"), 2),
                    _number(b.get("texts_per_s"), 1),
                    _number(b.get("tokens_per_s"), 1),
                    f"{_number(request.get('p50'), 1)} / {_number(request.get('p99'), 1)}",
                    _by_cause(b.get("retries")),
                    _by_cause(b.get("splits")),
                    _over_limit(b),
                ]
            )
    return header, rows

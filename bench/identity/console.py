"""The identity report as text for a terminal, from the identity records of a results file."""

from __future__ import annotations

from bench.results.schema import IdentityEmbedPairRecord, IdentityEndpointRecord, IdentityRerankPairRecord
from bench.results.store import Results


def _cut(text: str, width: int = 70) -> str:
    one = " ".join(text.split())
    return one if len(one) <= width else one[: width - 1] + "…"


def _num(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def _causes(pair: IdentityEmbedPairRecord | IdentityRerankPairRecord) -> list[str]:
    lines = [f"    failed: {failure}" for failure in pair.failures]
    for cause in pair.causes:
        lines += [f"    cause [{cause.code}]: {cause.detail}", f"      fix: {cause.fix}"]
    return lines


def render(results: Results) -> str:
    summary = results.of("identity")[0]
    endpoints = results.of("identity_endpoint")
    lines = [
        f"identity: {summary.texts} texts, {summary.queries} queries from {summary.source}",
        f"token lengths: {summary.token_lengths}",
    ]
    lines += _embed_lines(results.of("identity_embed_pair"), endpoints)
    lines += _rerank_lines(results.of("identity_rerank_pair"), endpoints)
    spent = ", ".join(f"{e.name} {e.seconds:.2f} s" for e in endpoints)
    lines += [
        "",
        f"time: total {summary.total_s:.2f} s; endpoints: {spent}; diagnosis probes {summary.diagnosis_s:.2f} s; "
        f"ragbench's own work {summary.suite_s:.3f} s",
        f"verdict: {summary.verdict.upper()}",
    ]
    return "\n".join(lines)


def _embed_lines(pairs: list[IdentityEmbedPairRecord], endpoints: list[IdentityEndpointRecord]) -> list[str]:
    """Per embedding pair its figures, per token length, and why it is not a pass; then batch invariance."""
    if not pairs:
        return []
    lines = [
        "",
        "embeddings",
        f"  {'pair':<28} {'dtype':<8} {'cos min':>9} {'cos p01':>9} {'cos mean':>9} {'max|Δ|':>9} "
        f"{'norm Δ':>9} {'top10':>6}  verdict",
    ]
    for p in pairs:
        lines.append(
            f"  {p.a + ' ~ ' + p.b:<28} {p.dtype:<8} {p.cosine_min:9.6f} {p.cosine_p01:9.6f} "
            f"{p.cosine_mean:9.6f} {p.max_abs_diff:9.2e} {p.max_norm_diff:9.2e} "
            f"{_num(p.top10_overlap, '6.3f'):>6}  {p.verdict.upper()}"
        )
        lines.append(
            "    by tokens: "
            + " | ".join(
                f"{b.tokens}: {b.texts} texts, mean {b.cosine_mean:.5f}, min {b.cosine_min:.5f}, {b.failing} failing"
                for b in p.by_token_length
            )
        )
        lines += [f"    insufficient data: {reason}" for reason in p.insufficient]
        if not p.failures:
            continue
        lines += _causes(p)
        for w in p.worst[:3]:
            lines.append(f"    worst #{w.index} ({w.tokens} tokens) cosine {w.cosine:.5f}: {_cut(w.text)!r}")
    lines.append("  batch invariance (a text alone vs inside a batch):")
    for e in endpoints:
        if e.batch_verdict is not None:
            lines.append(
                f"    {e.name}: min cosine {e.batch_min_cosine:.6f} over {e.batch_texts} texts  "
                f"{e.batch_verdict.upper()}"
            )
    return lines


def _rerank_lines(pairs: list[IdentityRerankPairRecord], endpoints: list[IdentityEndpointRecord]) -> list[str]:
    """Per reranker whether top_n was honoured; per rerank pair its figures and why it is not a pass."""
    rerankers = [e for e in endpoints if e.top_n_honoured is not None]
    if not pairs and not rerankers:
        return []
    lines = ["", "rerank"]
    for e in rerankers:
        honoured = "honoured" if e.top_n_honoured else f"IGNORED ({e.top_n_returned} results)"
        lines.append(f"  {e.name}: top_n={e.top_n_requested} {honoured}")
    for p in pairs:
        lines.append(
            f"  {p.a + ' ~ ' + p.b:<28} max|Δscore| {p.max_score_diff:.2e}  mean {p.mean_score_diff:.2e}  "
            f"Kendall tau mean {_num(p.kendall_tau_mean, '.4f')} min {_num(p.kendall_tau_min, '.4f')}  "
            f"{p.verdict.upper()}"
        )
        lines += [f"    insufficient data: {reason}" for reason in p.insufficient]
        lines += _causes(p)
    return lines

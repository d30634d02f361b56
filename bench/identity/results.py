"""An identity report as records of the results file (schema `ragbench.results`, bench/results/schema.py);
the writer masks secrets."""

from __future__ import annotations

from pathlib import Path

from bench.identity.run import EmbedPair, IdentityResult
from bench.results.schema import (
    IdentityEmbedPairRecord,
    IdentityEndpointRecord,
    IdentitySummaryRecord,
)
from bench.results.store import Results, complete_results


def identity_records(report: IdentityResult) -> list[object]:
    """The result as records: one per endpoint, one per compared pair, then the summary."""
    t = report.timings
    return [
        *(_endpoint_record(report, described) for described in report.endpoints),
        *(_embed_record(p) for p in report.embed_pairs),
        *report.rerank_pairs,
        IdentitySummaryRecord(
            source=report.source,
            texts=report.texts,
            queries=report.queries,
            token_lengths=report.token_lengths,
            verdict=report.verdict,
            total_s=float(t.get("total_s", 0.0)),
            diagnosis_s=float(t.get("diagnosis_s", 0.0)),
            suite_s=float(t.get("suite_s", 0.0)),
        ),
    ]


def _endpoint_record(report: IdentityResult, described: dict[str, object]) -> IdentityEndpointRecord:
    name = str(described["name"])
    batch = report.batch_invariance.get(name)
    top_n = report.rerankers.get(name)
    return IdentityEndpointRecord(
        name=name,
        config={k: v for k, v in described.items() if k != "name"},
        seconds=float(report.timings.get("endpoint_s", {}).get(name, 0.0)),
        batch_texts=batch["texts"] if batch else None,
        batch_min_cosine=batch["min_cosine"] if batch else None,
        batch_threshold=batch["threshold"] if batch else None,
        batch_verdict=batch["verdict"] if batch else None,
        top_n_requested=top_n["top_n_requested"] if top_n else None,
        top_n_returned=top_n["top_n_returned"] if top_n else None,
        top_n_honoured=top_n["top_n_honoured"] if top_n else None,
    )


def _embed_record(p: EmbedPair) -> IdentityEmbedPairRecord:
    return IdentityEmbedPairRecord(
        a=p.a,
        b=p.b,
        dtype=p.thresholds.dtype,
        thresholds=p.thresholds.limits(),
        texts=p.n,
        dims=p.dims,
        cosine_min=p.cosine_min,
        cosine_p01=p.cosine_p01,
        cosine_mean=p.cosine_mean,
        max_abs_diff=p.max_abs_diff,
        max_norm_diff=p.max_norm_diff,
        norms=p.norms,
        top10_overlap=p.top10_overlap,
        by_token_length=p.buckets,
        worst=p.worst,
        verdict=p.verdict,
        failures=p.failures,
        insufficient=p.insufficient,
        causes=p.causes,
    )


def identity_results(report: IdentityResult, path: Path) -> Results:
    """The report as a complete results file (not yet written) at `path`."""
    return complete_results(path, "identity", identity_records(report))

"""An identity report as records of the results file (schema `ragbench.results`, bench/results/schema/);
the writer masks secrets."""

from __future__ import annotations

from pathlib import Path

from bench.endpoints.base import NamedEndpoint
from bench.identity.outcome import IdentityResult
from bench.results.frame import complete_results
from bench.results.schema import IdentityEndpointRecord, IdentitySummaryRecord, RunCommand
from bench.results.store import Results


def identity_records(report: IdentityResult) -> list[object]:
    """The result as records: one per endpoint, one per compared pair, then the summary."""
    t = report.timings
    return [
        *(_endpoint_record(report, described) for described in report.endpoints),
        *report.embed_pairs,
        *report.rerank_pairs,
        IdentitySummaryRecord(
            source=report.source,
            texts=report.texts,
            queries=report.queries,
            token_lengths=report.token_lengths,
            verdict=report.verdict,
            total_s=t.total_s,
            diagnosis_s=t.diagnosis_s,
            suite_s=t.suite_s,
        ),
    ]


def _endpoint_record(report: IdentityResult, described: NamedEndpoint) -> IdentityEndpointRecord:
    name = described["name"]
    batch = report.batch_invariance.get(name)
    top_n = report.rerankers.get(name)
    return IdentityEndpointRecord(
        name=name,
        config={k: v for k, v in described.items() if k != "name"},
        seconds=report.timings.endpoint_s.get(name, 0.0),
        batch_texts=batch.texts if batch else None,
        batch_min_cosine=batch.min_cosine if batch else None,
        batch_threshold=batch.threshold if batch else None,
        batch_verdict=batch.verdict if batch else None,
        top_n_requested=top_n.top_n_requested if top_n else None,
        top_n_returned=top_n.top_n_returned if top_n else None,
        top_n_honoured=top_n.top_n_honoured if top_n else None,
    )


def identity_results(report: IdentityResult, path: Path) -> Results:
    """The report as a complete results file (not yet written) at `path`."""
    return complete_results(path, RunCommand.IDENTITY, identity_records(report))

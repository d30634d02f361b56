"""grow asks the same queries at every rung: a dense engine built for it embeds each query when asked, never
from the embedding cache, so its latency holds the query's encoding at every rung."""

from __future__ import annotations

import pytest

from bench.datasets.model import Dataset, DatasetFormat, Document
from bench.targets.base import no_progress
from bench.targets.dense_engine import DenseEngine
from bench.targets.registry import TargetOptions, build_target, parse_target_spec


@pytest.mark.slow
@pytest.mark.parametrize(("fresh", "cached_queries"), [(True, 0), (False, 1)])
def test_queries_asked_again_are_embedded_again_only_when_fresh(cache_dir, fresh, cached_queries):
    corpus = {f"d{i}": Document(f"d{i}", "", f"a document about topic {i}") for i in range(3)}
    data = Dataset("t", corpus, {"q": "topic 1"}, {"q": {"d1": 1}}, "t", DatasetFormat.BEIR)
    target = build_target(parse_target_spec("dense"), TargetOptions(fresh_queries=fresh))
    assert isinstance(target, DenseEngine)
    try:
        target.prepare(data, no_progress)
        for _ in range(2):
            target.search({"q": "topic 1"}, 3, no_progress)
        assert target.encoder.meters["query_embed"].from_cache == cached_queries
    finally:
        target.close()

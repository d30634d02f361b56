"""Pieces of suite files the suite tests share."""

from __future__ import annotations

from tests.paths import scifact


def scifact_quality(
    max_queries: int, max_docs: int, max_drop: float, targets: str = 'prod = "bm25"', measures: str = '["nDCG@10"]'
) -> str:
    """A gate, the bundled SciFact sample, targets (bm25 named `prod`) and one quality entry."""
    return f"""
[gate]
max_drop = {{ "nDCG@10" = {max_drop} }}

[datasets.scifact]
path = "{scifact()}"
split = "train"
max_queries = {max_queries}
max_docs = {max_docs}

[targets]
{targets}

[[quality]]
dataset = "scifact"
measures = {measures}
"""

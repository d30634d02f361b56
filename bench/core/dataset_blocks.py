"""The run header's blocks that describe data: `dataset` and the grow ladder's `distractor_source`. Their shapes
live here, below both the datasets layer that fills them (Dataset.header, Distractors.describe) and the results
schema that stores them (bench.results.schema.run), which may not import each other."""

from __future__ import annotations

from typing import TypedDict


class DatasetBlock(TypedDict, total=False):
    """The header's `dataset` (its wire shape; any key may be absent, read through DatasetInfo): a dataset's for
    quality, grow and ingest (Dataset.header), a workload's for load, size and ceiling."""

    name: str
    source: str
    format: str
    split: str | None
    fingerprint: str
    documents: int
    queries: int
    notes: list[str]
    distinct_texts: int  # ingest: the distinct texts, where some documents repeat another's
    identical_copies: int  # ingest: the documents that repeat another's text
    texts: int  # a load workload's texts
    lengths: list[int]  # ceiling: the token lengths measured
    tokens_source: str | None  # a workload's: what counted its tokens


class LengthWords(TypedDict):
    min: int
    median: float


class DistractorSourceBlock(TypedDict, total=False):
    """The grow ladder's `distractor_source` (bench/datasets/distractors.py's describe): where its distractors come
    from and, made ones, how."""

    source: str  # --distractors as given
    kind: str  # synthetic | dataset
    seed: int  # synthetic: the seed
    vocabulary: int  # synthetic: the words drawn from
    length_words: LengthWords  # synthetic: the corpus documents' lengths in words
    made: str  # synthetic: how a document is made
    documents: int  # dataset: the distractors it holds

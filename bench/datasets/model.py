"""The one Dataset type every loader produces and every target consumes."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from bench.core.dataset_blocks import DatasetBlock
from bench.datasets.answers import derived_qrels


class DatasetFormat(StrEnum):
    """How a dataset is laid out on disk (docs/datasets.md)."""

    BEIR = "beir"
    TREC = "trec"
    JSONL = "jsonl"


@dataclass(frozen=True)
class Document:
    doc_id: str
    title: str
    text: str

    @property
    def full_text(self) -> str:
        """Title and body as engines index them (BEIR convention: title, space, text)."""
        return f"{self.title} {self.text}".strip() if self.title else self.text


Qrels = dict[str, dict[str, int]]  # query id -> doc id -> graded relevance


@dataclass
class Dataset:
    name: str
    corpus: dict[str, Document]
    queries: dict[str, str]  # query id -> query text
    qrels: Qrels
    source: str  # the path it was loaded from
    format: DatasetFormat
    split: str | None = None
    notes: list[str] = field(default_factory=list)  # how it was derived (sampling), shown in reports
    files: dict[str, Path] = field(default_factory=dict)  # role (corpus, queries, qrels) -> file, for messages
    answers: dict[str, list[str]] = field(default_factory=dict)  # query id -> reference answers (`/re/` = regex)
    _answer_qrels: Qrels | None = field(default=None, repr=False, compare=False)

    def judged_queries(self) -> list[str]:
        """Queries that have qrels, in the order the query file gave them."""
        return [qid for qid in self.queries if qid in self.qrels]

    def answered_queries(self) -> list[str]:
        """Queries that have reference answers, in the order the query file gave them."""
        return [qid for qid in self.queries if self.answers.get(qid)]

    def evaluated_queries(self) -> list[str]:
        """Queries that some measure can score: judged or answered."""
        return [qid for qid in self.queries if qid in self.qrels or self.answers.get(qid)]

    def answer_qrels(self) -> Qrels:
        """Binary judgments derived from the answers (DPR has_answer on each document's text, title
        excluded), for ranking measures on a set without qrels; computed once."""
        if self._answer_qrels is None:
            self._answer_qrels = derived_qrels(self.answers, {d: doc.text for d, doc in self.corpus.items()})
        return self._answer_qrels

    def header(self, queries: int) -> DatasetBlock:
        """What a run's header says of this dataset (RunHeader.dataset), one set of keys for every command;
        `queries`: how many the run asks (a quality run: those with judgements)."""
        return {
            "name": self.name,
            "source": self.source,
            "format": self.format,
            "split": self.split,
            "fingerprint": self.fingerprint(),
            "documents": len(self.corpus),
            "queries": queries,
            "notes": self.notes,
        }

    def fingerprint(self) -> str:
        """A short content hash, so results from different data are never compared by accident."""
        h = hashlib.sha256()
        for doc_id in sorted(self.corpus):
            h.update(f"d\t{doc_id}\t{self.corpus[doc_id].full_text}\n".encode())
        for qid in sorted(self.queries):
            h.update(f"q\t{qid}\t{self.queries[qid]}\n".encode())
        for qid in sorted(self.qrels):
            for doc_id, rel in sorted(self.qrels[qid].items()):
                h.update(f"r\t{qid}\t{doc_id}\t{rel}\n".encode())
        for qid in sorted(self.answers):  # absent for sets without answers: their fingerprints stay as they were
            for answer in self.answers[qid]:
                h.update(f"a\t{qid}\t{answer}\n".encode())
        return h.hexdigest()[:16]

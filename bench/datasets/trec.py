"""TREC formats: qrels (`qid 0 docno rel`), topics (TSV or `<top>` SGML), corpus (`<DOC>` SGML, TSV or JSONL)."""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator
from pathlib import Path

from bench.core.errors import InputError
from bench.datasets.beir import load_corpus_jsonl
from bench.datasets.io import check_id, find_file, parse_grade, read_lines
from bench.datasets.model import Dataset, DatasetFormat, Document, Qrels


def load_trec_qrels(path: Path) -> Qrels:
    qrels: Qrels = {}
    for number, text in read_lines(path):
        fields = text.split()
        if len(fields) != 4:
            raise InputError(path, f"expected 4 columns 'qid iter docno rel', found {len(fields)}", number)
        qid, _iteration, doc_id, grade = fields
        judged = qrels.setdefault(qid, {})
        if doc_id in judged:
            raise InputError(path, f"duplicate judgment for query {qid!r}, document {doc_id!r}", number)
        judged[doc_id] = parse_grade(grade, path, number)
    if not qrels:
        raise InputError(path, "no judgments")
    return qrels


def sgml_blocks(path: Path, tag: str) -> Iterator[tuple[int, str]]:
    """(line number, inner text) of every `<tag>…</tag>` block of an SGML file such as a TREC corpus
    or topics file. Malformed structure is an error at its line, never a silent merge of two blocks:
    a block opened inside another, a block never closed, a close without an open, text outside blocks."""
    lines = list(read_lines(path))
    text = "\n".join(line for _, line in lines)
    line_of = _line_index(lines)
    open_tag, close_tag = f"<{tag}>", f"</{tag}>"
    opened: re.Match[str] | None = None
    outside_from = 0
    for match in re.finditer(rf"<(/?){tag}>", text, re.IGNORECASE):
        if not match.group(1):  # an opening tag
            if opened is not None:
                raise InputError(
                    path,
                    f"{open_tag} inside another {open_tag} (the one opened at line "
                    f"{line_of(opened.start())} has no {close_tag})",
                    line_of(match.start()),
                )
            stray = text[outside_from : match.start()]
            if stray.strip():
                raise InputError(
                    path,
                    f"text outside {open_tag} … {close_tag}",
                    line_of(outside_from + len(stray) - len(stray.lstrip())),
                )
            opened = match
        else:
            if opened is None:
                raise InputError(path, f"{close_tag} without {open_tag}", line_of(match.start()))
            yield line_of(opened.start()), text[opened.end() : match.start()]
            opened, outside_from = None, match.end()
    if opened is not None:
        raise InputError(path, f"{open_tag} without {close_tag}", line_of(opened.start()))
    stray = text[outside_from:]
    if stray.strip():
        raise InputError(
            path, f"text outside {open_tag} … {close_tag}", line_of(outside_from + len(stray) - len(stray.lstrip()))
        )


def _line_index(lines: list[tuple[int, str]]) -> Callable[[int], int]:
    """Maps an offset in the joined text back to the file's line number."""
    starts, numbers, position = [], [], 0
    for number, line in lines:
        starts.append(position)
        numbers.append(number)
        position += len(line) + 1

    def line_of(offset: int) -> int:
        return numbers[max(bisect.bisect_right(starts, offset) - 1, 0)] if numbers else 1

    return line_of


_NUM = re.compile(r"<num>\s*(?:Number:)?\s*(\S+)", re.IGNORECASE)
_TITLE = re.compile(r"<title>\s*(?:Topic:)?\s*(.*?)\s*(?=<desc>|<narr>|$)", re.IGNORECASE | re.DOTALL)


def load_topics(path: Path) -> dict[str, str]:
    """Topics as `qid<TAB>text` lines, or classic `<top><num>…<title>…</top>` blocks (title = query)."""
    first = next(read_lines(path), (0, ""))[1]
    if first.lstrip().startswith("<"):
        return _load_sgml_topics(path)
    topics: dict[str, str] = {}
    for number, text in read_lines(path):
        qid, tab, query = text.partition("\t")
        if not tab or not qid.strip() or not query.strip():
            raise InputError(path, "expected 'qid<TAB>query text'", number)
        qid = check_id(qid.strip(), "query id", path, number)
        if qid in topics:
            raise InputError(path, f"duplicate query id {qid!r}", number)
        topics[qid] = query.strip()
    return topics


def _load_sgml_topics(path: Path) -> dict[str, str]:
    topics: dict[str, str] = {}
    for start, body in sgml_blocks(path, "top"):
        num, title = _NUM.search(body), _TITLE.search(body)
        if not num or not title or not title.group(1).strip():
            raise InputError(path, "topic without <num> or <title>", start)
        qid = num.group(1)
        if qid in topics:
            raise InputError(path, f"duplicate query id {qid!r}", start)
        topics[qid] = " ".join(title.group(1).split())
    return topics


_DOCNO = re.compile(r"<DOCNO>(.*?)</DOCNO>", re.DOTALL | re.IGNORECASE)
_TAG = re.compile(r"<[^>]+>")


def load_trec_corpus(path: Path) -> dict[str, Document]:
    """`<DOC><DOCNO>id</DOCNO> … </DOC>` blocks; the text is everything after the DOCNO but the tags."""
    corpus: dict[str, Document] = {}
    for number, block in sgml_blocks(path, "DOC"):
        docnos = _DOCNO.findall(block)
        if len(docnos) != 1:
            raise InputError(
                path, "<DOC> without <DOCNO>…</DOCNO>" if not docnos else "<DOC> with several <DOCNO>", number
            )
        doc_id = check_id(docnos[0].strip(), "document id", path, number)
        if doc_id in corpus:
            raise InputError(path, f"duplicate document id {doc_id!r}", number)
        docno_tag = _DOCNO.search(block)
        assert docno_tag is not None  # findall found exactly one above
        body = _TAG.sub(" ", block[docno_tag.end() :])
        corpus[doc_id] = Document(doc_id, "", " ".join(body.split()))
    return corpus


def load_tsv_corpus(path: Path) -> dict[str, Document]:
    corpus: dict[str, Document] = {}
    for number, text in read_lines(path):
        doc_id, tab, body = text.partition("\t")
        if not tab:
            raise InputError(path, "expected 'docno<TAB>text'", number)
        doc_id = check_id(doc_id.strip(), "document id", path, number)
        if doc_id in corpus:
            raise InputError(path, f"duplicate document id {doc_id!r}", number)
        corpus[doc_id] = Document(doc_id, "", body.strip())
    return corpus


def _pick(directory: Path, prefix: str, split: str | None, what: str) -> Path:
    candidates = sorted(p for p in directory.iterdir() if p.is_file() and p.name.lower().startswith(prefix))
    if split is not None:
        candidates = [p for p in candidates if split in p.name]
        if not candidates:
            raise InputError(
                directory, f"no {what} file for split {split!r} (expected a name starting {prefix!r} containing it)"
            )
    if not candidates:
        raise InputError(directory, f"no {what} file (expected a name starting with {prefix!r})")
    if len(candidates) > 1:
        names = ", ".join(p.name for p in candidates)
        raise InputError(directory, f"several {what} files ({names}): choose one with --split")
    return candidates[0]


def qrels_file(directory: Path, split: str | None) -> Path:
    """The one `qrels*` file of `split` (or the only one there is)."""
    return _pick(directory, "qrels", split, "qrels")


def load_trec(directory: Path, split: str | None = None) -> Dataset:
    """A folder with `qrels*`, `topics*` (or `queries*`) and optionally a corpus file."""
    qrels_path = qrels_file(directory, split)
    topics_names = [p for p in directory.iterdir() if p.name.lower().startswith(("topics", "queries"))]
    if not topics_names:
        raise InputError(directory, "no topics file (expected a name starting with 'topics' or 'queries')")
    topics_path = _pick(directory, topics_names[0].name[:6].lower(), None, "topics")
    corpus: dict[str, Document] = {}
    files = {"qrels": qrels_path, "queries": topics_path}
    for stem, loader in (
        ("corpus.jsonl", load_corpus_jsonl),
        ("corpus.trec", load_trec_corpus),
        ("corpus.tsv", load_tsv_corpus),
    ):
        found = find_file(directory, stem)
        if found is not None:
            corpus = loader(found)
            files["corpus"] = found
            break
    return Dataset(
        name=directory.name,
        corpus=corpus,
        queries=load_topics(topics_path),
        qrels=load_trec_qrels(qrels_path),
        source=str(directory),
        format=DatasetFormat.TREC,
        split=split,
        files=files,
    )

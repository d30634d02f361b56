"""The report pairs a reranked target with its first stage on the spec as the run parsed it (TargetRecord.parsed),
never parsing the spec string again (issue 49); a results file written before the parsed spec was kept still
pairs as it did."""

from bench.quality.rerank_pairs import spec_record
from bench.report.quality_tables import reranked_names
from bench.results.schema import TargetSpecRecord
from bench.results.store import read_results
from bench.results.writer import ResultsWriter
from bench.targets.registry import parse_target_spec
from tests.harness.records import end_record, run_header, target_record


def _results(tmp_path, targets):
    writer = ResultsWriter(tmp_path / "results.jsonl")
    header = run_header(
        dataset={"name": "synthetic", "fingerprint": "f", "documents": 10, "queries": 1, "format": "beir"},
        measures=["ndcg_cut_10"],
        measure_labels={"ndcg_cut_10": "nDCG@10"},
        depth=100,
        seed=0,
        targets=[t.name for t in targets],
    )
    writer.write(header, *targets)
    writer.write(end_record())
    writer.close()
    return read_results(tmp_path / "results.jsonl")


def _target(name, spec, parsed):
    return target_record(name, spec=spec, index_seconds=1.0, search_seconds=1.0, queries=1, parsed=parsed)


def test_pairs_come_from_the_parsed_spec_the_results_kept(tmp_path):
    # spec strings no parser of this version reads: only the kept parsed spec can pair them
    first = _target("first", "engine-of-tomorrow", TargetSpecRecord("bm25"))
    second = _target("second", "engine-of-tomorrow+rerank", TargetSpecRecord("bm25", rerank=True))
    results = _results(tmp_path, [first, second])
    assert results.targets[1].parsed == TargetSpecRecord("bm25", rerank=True)  # written and read back typed
    assert reranked_names(results) == [("first", "second")]


def test_a_file_written_before_the_parsed_spec_still_pairs(tmp_path):
    old = [_target(s, s, None) for s in ("bm25", "bm25+rerank", "dense?model=/m")]
    assert reranked_names(_results(tmp_path, old)) == [("bm25", "bm25+rerank")]


def test_the_kept_spec_masks_secrets():
    kept = spec_record(parse_target_spec("x=openwebui:hybrid@http://user:pw@h:1?bm25_weight=0.3"))
    assert kept == TargetSpecRecord("openwebui", False, "hybrid", "http://***@h:1", {"bm25_weight": "0.3"})

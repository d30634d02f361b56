"""`compare` on identity results: verdicts that flipped, failing pairs that got worse past their thresholds,
batch invariance and top_n lost."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.results.frame import complete_results
from bench.results.schema import IdentityEmbedPairRecord, IdentityEndpointRecord, IdentityRerankPairRecord
from bench.results.store import Results
from bench.results.writer import ResultsWriter
from tests.harness.cli import run_cli


def write_results(results: Results) -> Path:
    """Write `results` whole to its path (a results file read back gives the same records)."""
    writer = ResultsWriter(results.path)
    try:
        writer.write(
            results.header,
            *[r for kind in results.records.values() for r in kind],
            *([results.end] if results.end else []),
        )
    finally:
        writer.close()
    return results.path


LIMITS = {
    "min_cosine": 0.9999,
    "mean_cosine": 0.99999,
    "max_norm_diff": 1e-3,
    "min_top10_overlap": 0.95,
    "batch_min_cosine": 0.9999,
    "max_score_diff": 1e-4,
    "min_kendall_tau": 0.99,
}


def embed_pair(a="ref", b="tei", cosine_min=0.999999, cosine_mean=0.9999999, verdict="pass", failures=()):
    return IdentityEmbedPairRecord(
        a=a,
        b=b,
        dtype="float32",
        thresholds=LIMITS,
        texts=100,
        dims={a: 384, b: 384},
        cosine_min=cosine_min,
        cosine_p01=cosine_min,
        cosine_mean=cosine_mean,
        max_abs_diff=1e-6,
        max_norm_diff=1e-6,
        norms={},
        top10_overlap=1.0,
        by_token_length=[],
        worst=[],
        verdict=verdict,
        failures=list(failures),
        insufficient=[],
        causes=[],
    )


def rerank_pair(kendall=1.0, verdict="pass"):
    return IdentityRerankPairRecord(
        a="ref-rr",
        b="tei-rr",
        dtype="float32",
        thresholds=LIMITS,
        max_score_diff=1e-6,
        mean_score_diff=1e-7,
        kendall_tau_mean=kendall,
        kendall_tau_min=kendall,
        verdict=verdict,
        failures=[] if verdict == "pass" else ["kendall tau"],
        insufficient=[],
        causes=[],
    )


def endpoint(name="tei", batch_verdict="pass"):
    return IdentityEndpointRecord(
        name=name,
        config={},
        seconds=1.0,
        batch_texts=8,
        batch_min_cosine=1.0,
        batch_threshold=0.9999,
        batch_verdict=batch_verdict,
    )


def _write(folder, records):
    return write_results(complete_results(folder / "results.jsonl", "identity", records))


@pytest.fixture
def compare(monkeypatch, capsys, tmp_path):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)

    def run(base_records, cur_records, *args):
        base, cur = _write(tmp_path / "base", base_records), _write(tmp_path / "cur", cur_records)
        return run_cli(["compare", str(base), str(cur), *args], monkeypatch, capsys)

    return run


def test_unchanged_pairs_pass(compare):
    code, out, _ = compare([embed_pair(), rerank_pair(), endpoint()], [embed_pair(), rerank_pair(), endpoint()])
    assert code == 0, out
    assert "pass  identity: embed ref vs tei: verdict pass → pass" in out
    assert "pass  identity: rerank ref-rr vs tei-rr" in out and "pass  identity: tei batch invariance" in out


def test_a_verdict_that_flipped_fails(compare):
    code, out, _ = compare(
        [embed_pair()], [embed_pair(cosine_min=0.93, verdict="fail", failures=["cosine min 0.93 < 0.9999"])]
    )
    assert code == 1
    assert "FAIL  identity: embed ref vs tei: verdict pass → fail (cosine min 0.93 < 0.9999)" in out


def test_a_failing_pair_fails_the_gate_only_when_it_got_worse(compare):
    failing = embed_pair(cosine_min=0.95, verdict="fail", failures=["cosine"])
    code, out, _ = compare([failing], [embed_pair(cosine_min=0.95, verdict="fail", failures=["cosine"])])
    assert code == 0 and "info  identity: embed ref vs tei" in out  # failing in both, not worse: reported
    code, out, _ = compare([failing], [embed_pair(cosine_min=0.90, verdict="fail", failures=["cosine"])])
    assert code == 1 and "worse past threshold: cosine_min" in out
    code, out, _ = compare([failing], [embed_pair()])
    assert code == 0 and "verdict fail → pass" in out


def test_pairs_match_in_either_order_and_by_renamed_endpoints(compare):
    code, out, _ = compare([embed_pair(a="ref", b="old")], [embed_pair(a="new", b="ref")], "--match", "old=new")
    assert code == 0 and "pass  identity: embed ref vs new" in out


def test_a_pair_missing_and_lost_batch_invariance_fail(compare):
    code, out, _ = compare(
        [embed_pair(), rerank_pair(), endpoint()],
        [rerank_pair(kendall=0.5, verdict="fail"), endpoint(batch_verdict="fail")],
    )
    assert code == 1
    assert "FAIL  identity: embed ref vs tei: not measured in the current run" in out
    assert "FAIL  identity: rerank ref-rr vs tei-rr: verdict pass → fail" in out
    assert "FAIL  identity: tei batch invariance: pass → fail" in out


def test_a_pair_appended_again_with_other_figures_is_an_input_error(tmp_path, monkeypatch, capsys):
    """A passing copy appended after a failing pair must not replace it: which one counts cannot be told."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    base = _write(tmp_path / "base", [embed_pair()])
    cur = _write(tmp_path / "cur", [embed_pair(cosine_min=0.5, verdict="fail", failures=["cosine min"])])
    lines = cur.read_text().splitlines()
    number = next(i + 1 for i, line in enumerate(lines) if '"identity_embed_pair"' in line)
    passing = _write(tmp_path / "passing", [embed_pair()]).read_text().splitlines()
    cur.write_text("\n".join([*lines, next(line for line in passing if '"identity_embed_pair"' in line)]) + "\n")
    code, _, err = run_cli(["compare", str(base), str(cur)], monkeypatch, capsys)
    assert (
        code == 2
        and f"{cur}:{len(lines) + 1}: identity_embed_pair record 'ref tei' again, different from line {number}" in err
    )

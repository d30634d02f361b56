"""`compare` never pairs the figures of two vector stores silently (issue 47): a target measured on another store
gets one info check, "different stores: A vs B, not paired", said in every output and never gated."""

from __future__ import annotations

import json

from tests.gate.helpers import noisy_scores, write_results

N = 200
PG = "pgvector-halfvec-hnsw"


def _store(name: str) -> dict:
    return {"config": {"store": {"name": name, "kind": name.split("-")[0], "source": "stated"}}}


def test_a_target_on_another_store_is_not_paired_and_says_so(tmp_path, compare):
    # Same target name (NAME=SPEC), stores stated on the spec: a worse score on pgvector would fail if paired.
    base = write_results(
        tmp_path / "base", {"owui": {"ndcg_cut_10": noisy_scores(N, 1)}}, target_fields={"owui": _store("chroma")}
    )
    cur = write_results(
        tmp_path / "cur",
        {"owui": {"ndcg_cut_10": noisy_scores(N, 1, shift=0.2)}},
        target_fields={"owui": _store(PG)},
    )
    code, out, _ = compare(base, cur, "--max-drop", "nDCG@10=0.01", "--format", "text")
    assert code == 0, out
    assert f"owui: not gated: different stores: chroma vs {PG}, not paired" in out
    assert "FAIL" not in out
    for form in ("json", "md"):  # every output says it
        code, said, _ = compare(base, cur, "--max-drop", "nDCG@10=0.01", "--format", form)
        assert code == 0
        assert f"different stores: chroma vs {PG}, not paired" in (
            json.dumps(json.loads(said)) if form == "json" else said
        )


def test_names_that_differ_only_in_store_are_the_same_target_on_two_stores(tmp_path, compare):
    chroma, pg = "openwebui:vector?store=chroma", f"openwebui:vector?store={PG}"
    base = write_results(tmp_path / "base", {chroma: {"ndcg_cut_10": noisy_scores(N, 1)}})
    cur = write_results(tmp_path / "cur", {pg: {"ndcg_cut_10": noisy_scores(N, 1)}})
    code, out, _ = compare(base, cur)
    assert code == 0, out
    assert f"different stores: chroma vs {PG}, not paired" in out
    assert "no scores in the current run" not in out  # not a missing target: the same one on another store


def test_the_same_store_pairs_as_before(tmp_path, compare):
    base = write_results(
        tmp_path / "base", {"owui": {"ndcg_cut_10": noisy_scores(N, 1)}}, target_fields={"owui": _store(PG)}
    )
    cur = write_results(
        tmp_path / "cur",
        {"owui": {"ndcg_cut_10": noisy_scores(N, 1, shift=0.2)}},
        target_fields={"owui": _store(PG)},
    )
    code, out, _ = compare(base, cur, "--max-drop", "nDCG@10=0.01")
    assert code == 1
    assert "different stores" not in out


def test_a_store_named_on_one_side_only_is_paired_and_said(tmp_path, compare):
    base = write_results(tmp_path / "base", {"owui": {"ndcg_cut_10": noisy_scores(N, 1)}})
    cur = write_results(
        tmp_path / "cur", {"owui": {"ndcg_cut_10": noisy_scores(N, 1)}}, target_fields={"owui": _store("chroma")}
    )
    code, out, _ = compare(base, cur)
    assert code == 0
    assert "store named in one run only (baseline not named, current chroma): paired as one store" in out


def test_match_pairs_two_stores_on_purpose_and_the_notes_say_so(tmp_path, compare):
    base = write_results(
        tmp_path / "base", {"chroma": {"ndcg_cut_10": noisy_scores(N, 1)}}, target_fields={"chroma": _store("chroma")}
    )
    cur = write_results(tmp_path / "cur", {"pg": {"ndcg_cut_10": noisy_scores(N, 1)}}, target_fields={"pg": _store(PG)})
    code, out, _ = compare(base, cur, "--match", "chroma=pg")
    assert code == 0
    assert f"chroma vs pg: different stores (chroma vs {PG}), paired as --match asks" in out
    assert "pass  quality: chroma" in out

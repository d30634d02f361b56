"""`history` keeps one series per vector store and says so (issue 47): runs of one target on Chroma and on pgvector
are never one series, and a note names the stores."""

from __future__ import annotations

from bench.history.series import read_history
from tests.gate.helpers import noisy_scores, write_results

PG = "pgvector-halfvec-hnsw"


def _run(folder, store: str | None, seed: int):
    spec = "openwebui:vector@http://127.0.0.1:8080" + (f"?store={store}" if store else "")
    return write_results(
        folder, {"owui": {"ndcg_cut_10": noisy_scores(50, seed)}}, target_fields={"owui": {"spec": spec}}
    )


def test_two_stores_are_two_series_and_a_note_names_them(tmp_path):
    files = [_run(tmp_path / "a", "chroma", 1), _run(tmp_path / "b", PG, 2), _run(tmp_path / "c", "chroma", 3)]
    history = read_history([str(f) for f in files])
    quality = [s for s in history.series if s.job == "quality"]
    assert sorted(len(s.observations) for s in quality) == [1, 2]  # chroma's two runs, pgvector's one
    said = [n for n in history.notes if "different stores" in n]
    assert said == [
        f"quality synthetic (f1) owui [openwebui:vector@http://127.0.0.1:8080]: different stores: chroma vs {PG}: "
        "one series per store, not paired"
    ]


def test_one_store_throughout_says_nothing_of_stores(tmp_path):
    files = [_run(tmp_path / "a", "chroma", 1), _run(tmp_path / "b", "chroma", 2)]
    assert not [n for n in read_history([str(f) for f in files]).notes if "stores" in n]

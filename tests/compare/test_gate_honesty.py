"""The gate's honesty on real data: bm25 on the bundled SciFact (the demo-sized sample), real pipeline.

Two runs of the same system with different seeds (so different distractor samples: real run-to-run noise)
must pass; the same system made worse in a known way, 10% of queries' relevant documents pushed out of the
ranking, must fail. The test prints the effect and p-value of both.
"""

from __future__ import annotations

import numpy as np
import pytest

from bench.quality.run_command import QualityRequest, quality_command
from bench.targets import registry
from bench.targets.base import QueryResult
from tests.harness.cli import run_cli
from tests.paths import BUNDLED_SCIFACT

PUSHED_OUT = 0.10
MAX_DROP = "nDCG@10=0.01"


class RelevantPushedOut:
    """A real bm25 whose rankings lose every relevant document for a seeded 10% of the queries."""

    def __init__(self, inner, share: float, seed: int):
        self.inner, self.share, self.seed = inner, share, seed
        self.name = inner.name
        self.spoiled: set[str] = set()

    def prepare(self, dataset, progress):
        self._qrels = dataset.qrels
        self.inner.prepare(dataset, progress)

    def search(self, queries, depth, progress):
        qids = sorted(queries)
        rng = np.random.default_rng(self.seed)
        self.spoiled = set(rng.choice(qids, size=round(self.share * len(qids)), replace=False).tolist())
        results = self.inner.search(queries, depth, progress)
        return [QueryResult(r.qid, [h for h in r.hits if self._qrels.get(r.qid, {}).get(h.doc_id, 0) <= 0], r.latency_s)
                if r.qid in self.spoiled else r for r in results]

    def describe(self):
        return {**self.inner.describe(), "spoiled_queries": len(self.spoiled)}

    def close(self):
        self.inner.close()


@pytest.fixture
def worse_kind(monkeypatch):
    def build(spec, options):
        from bench.targets.local import BM25Engine

        return RelevantPushedOut(BM25Engine(name=spec.name), PUSHED_OUT, seed=7)

    monkeypatch.setitem(registry.KINDS, "worse", build)


def _quality(out, target: str, seed: int):
    quality_command(QualityRequest(dataset=BUNDLED_SCIFACT, split="train", targets=[target], out=out,
                                   measures=["nDCG@10", "R@100"], max_docs=1500, seed=seed))
    return out


def test_same_system_passes_and_a_known_regression_fails(tmp_path, worse_kind, monkeypatch, capsys):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    base = _quality(tmp_path / "base", "prod=bm25", seed=1)
    same = _quality(tmp_path / "same", "prod=bm25", seed=2)
    worse = _quality(tmp_path / "worse", "prod=worse", seed=2)
    capsys.readouterr()

    def gate(current):
        code, out, err = run_cli(["compare", str(base), str(current), "--max-drop", MAX_DROP, "--format", "json"],
                                 monkeypatch, capsys)
        import json

        assert err == "", err
        data = json.loads(out)
        return code, {c["figures"]["label"]: c for c in data["checks"]}, data["notes"]

    same_code, same_checks, same_notes = gate(same)
    worse_code, worse_checks, _ = gate(worse)
    with capsys.disabled():
        for title, checks in (("same system, other seed", same_checks), ("10% of queries spoiled", worse_checks)):
            for label, c in checks.items():
                f = c["figures"]
                print(f"\n[gate honesty] {title}: {label} effect {f['effect']:+.4f} "
                      f"[{f['ci_low']:+.4f}, {f['ci_high']:+.4f}] p {f['p']:.2g} (Holm {f['p_holm']:.2g}) -> {c['status']}")
    assert same_code == 0 and all(c["status"] == "pass" for c in same_checks.values())
    assert any("DATASET CHANGED" in note for note in same_notes)  # other seed, other distractor sample
    assert worse_code == 1 and worse_checks["nDCG@10"]["status"] == "fail"
    nd = worse_checks["nDCG@10"]["figures"]
    # About 10% of queries lose roughly their whole score: the effect is near -0.1 x the mean.
    assert -0.12 < nd["effect"] < -0.04 and nd["p_holm"] < 0.001

"""The gate's honesty on real data: bm25 on the bundled SciFact (the demo-sized sample), real pipeline.

Two runs of the same system with different seeds (so different distractor samples: real run-to-run noise)
must pass; the same system made worse in a known way, 10% of queries' relevant documents pushed out of the
ranking, must fail. The test prints the effect and p-value of both.
"""

from __future__ import annotations

import pytest

from bench.commands.quality import QualityRequest, quality_command
from tests.paths import scifact

MAX_DROP = "nDCG@10=0.01"


def _quality(out, target: str, seed: int):
    quality_command(
        QualityRequest(
            dataset=scifact(),
            split="train",
            targets=[target],
            out=out,
            measures=["nDCG@10", "R@100"],
            max_docs=1500,
            seed=seed,
        )
    )
    return out


@pytest.mark.slow  # three quality runs on 1,500 SciFact documents
def test_same_system_passes_and_a_known_regression_fails(tmp_path, ragbench, worse_kind, capsys):
    base = _quality(tmp_path / "base", "prod=bm25", seed=1)
    same = _quality(tmp_path / "same", "prod=bm25", seed=2)
    worse = _quality(tmp_path / "worse", "prod=worse", seed=2)
    capsys.readouterr()

    def gate(current):
        code, out, err = ragbench("compare", str(base), str(current), "--max-drop", MAX_DROP, "--format", "json")
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
                print(
                    f"\n[gate honesty] {title}: {label} effect {f['effect']:+.4f} "
                    f"[{f['ci_low']:+.4f}, {f['ci_high']:+.4f}] p {f['p']:.2g} "
                    f"(Holm {'–' if f['p_holm'] is None else format(f['p_holm'], '.2g')}), "
                    f"detects ≥ {f['mde']:.4f} -> {c['status']}"
                )
    assert same_code == 0 and same_checks["nDCG@10"]["status"] == "pass"
    assert same_checks["R@100"]["status"] == "info"  # no --max-drop for it: reported, outside Holm's family
    assert any("DATASET CHANGED" in note for note in same_notes)  # other seed, other distractor sample
    assert worse_code == 1 and worse_checks["nDCG@10"]["status"] == "fail"
    nd = worse_checks["nDCG@10"]["figures"]
    # About 10% of queries lose roughly their whole score: the effect is near -0.1 x the mean.
    assert -0.12 < nd["effect"] < -0.04 and nd["p_holm"] < 0.001

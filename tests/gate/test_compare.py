"""`ragbench compare` on results files written by the real writer: verdicts, exit codes, outputs."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from tests.gate.helpers import noisy_scores, per_query, write_results

N = 300


def _two_runs(tmp_path, base: dict, cur: dict, **cur_kwargs):
    return write_results(tmp_path / "base", base), write_results(tmp_path / "cur", cur, **cur_kwargs)


def test_same_scores_pass_and_every_check_shows_its_figures(tmp_path, compare):
    scores = {"prod": {"ndcg_cut_10": noisy_scores(N, 1), "recall_100": noisy_scores(N, 2)}}
    base, cur = _two_runs(tmp_path, scores, scores)
    code, out, err = compare(base.parent, cur.parent)
    assert (code, err) == (0, "")
    lines = [line for line in out.splitlines() if line.startswith("pass")]
    assert len(lines) == 2
    assert "effect +0.0000" in out and "p 1.0000" in out and "n 300" in out


def test_a_significant_drop_past_the_allowance_fails_with_exit_1(tmp_path, compare):
    base, cur = _two_runs(
        tmp_path,
        {"prod": {"ndcg_cut_10": noisy_scores(N, 1)}},
        {"prod": {"ndcg_cut_10": noisy_scores(N, 1, shift=0.05)}},
    )
    code, out, _ = compare(base, cur, "--max-drop", "nDCG@10=0.01")
    assert code == 1
    assert out.startswith("ragbench compare: FAIL (1 of 1 checks regressed) — quality: prod nDCG@10")  # what decided
    assert "FAIL  quality: prod nDCG@10" in out


def test_a_significant_drop_within_the_allowance_passes(tmp_path, compare):
    base, cur = _two_runs(
        tmp_path,
        {"prod": {"ndcg_cut_10": noisy_scores(N, 1)}},
        {"prod": {"ndcg_cut_10": noisy_scores(N, 1, shift=0.02)}},
    )
    assert compare(base, cur, "--max-drop", "nDCG@10=0.05")[0] == 0
    assert compare(base, cur, "--max-drop", "10%")[0] == 0  # 10% of a ~0.5 mean
    assert compare(base, cur, "--max-drop", "1%")[0] == 1
    assert compare(base, cur)[0] == 1  # default allowance 0: any significant drop fails


def test_a_large_but_noisy_drop_passes_unless_significance_is_off(tmp_path, compare):
    base_values = np.full(12, 0.5)
    # mean change -0.05, drowned in per-query swings of +-0.4
    cur_values = base_values + np.array([0.4, -0.4, 0.4, -0.4, 0.3, -0.5, 0.4, -0.4, 0.4, -0.4, -0.2, -0.2])
    base, cur = _two_runs(
        tmp_path, {"prod": {"ndcg_cut_10": per_query(base_values)}}, {"prod": {"ndcg_cut_10": per_query(cur_values)}}
    )
    code, out, _ = compare(base, cur, "--max-drop", "0.01", "--format", "json")
    check = json.loads(out)["checks"][0]
    assert check["figures"]["effect"] < -0.01 and check["figures"]["p_holm"] > 0.05
    assert (code, check["status"]) == (0, "pass")
    assert compare(base, cur, "--max-drop", "0.01", "--no-significance")[0] == 1


def test_holm_corrects_across_the_checks_of_a_run(tmp_path, compare):
    """Alone, a borderline drop is significant; among many unchanged checks Holm lifts its p past alpha."""
    rng = np.random.default_rng(11)
    base_values = rng.random(200)
    drop = np.clip(base_values - rng.normal(0.03, 0.2, 200), 0, 1)
    base = {"t0": {"ndcg_cut_10": per_query(base_values)}}
    cur = {"t0": {"ndcg_cut_10": per_query(drop)}}
    one = _two_runs(tmp_path / "one", base, cur)
    code_one, out_one, _ = compare(*one, "--format", "json")
    p = json.loads(out_one)["checks"][0]["figures"]["p"]
    assert 0.005 < p < 0.05 and code_one == 1
    for i in range(1, 10):
        same = per_query(rng.random(200))
        base[f"t{i}"] = cur[f"t{i}"] = {"ndcg_cut_10": same}
    many = _two_runs(tmp_path / "many", base, cur)
    code, out, _ = compare(*many, "--format", "json")
    first = json.loads(out)["checks"][0]["figures"]
    assert first["p"] == p and first["p_holm"] == pytest.approx(min(1.0, 10 * p))
    assert code == 0


def test_only_queries_both_runs_judged_are_compared_and_a_changed_dataset_is_said_loudly(tmp_path, compare):
    base_scores = noisy_scores(N, 1)
    cur_scores = dict(list(base_scores.items())[:250])
    cur_scores["new-query"] = 0.0
    base, cur = _two_runs(
        tmp_path, {"prod": {"ndcg_cut_10": base_scores}}, {"prod": {"ndcg_cut_10": cur_scores}}, fingerprint="f2"
    )
    code, out, _ = compare(base, cur, "--format", "md")
    assert code == 0
    assert "**⚠️ DATASET CHANGED" in out
    assert "compared on the 250 both judged" in out


def test_match_pairs_renamed_targets_and_a_missing_target_fails(tmp_path, compare):
    scores = noisy_scores(N, 3)
    base, cur = _two_runs(
        tmp_path, {"old": {"ndcg_cut_10": scores}, "gone": {"ndcg_cut_10": scores}}, {"new": {"ndcg_cut_10": scores}}
    )
    code, out, _ = compare(base, cur, "--match", "old=new")
    assert code == 1
    assert "pass  quality: old→new nDCG@10" in out
    assert "FAIL  quality: gone nDCG@10: no scores in the current run" in out


def test_junit_summary_and_github_step_summary(tmp_path, compare, monkeypatch):
    base, cur = _two_runs(
        tmp_path,
        {"a": {"ndcg_cut_10": noisy_scores(N, 1)}, "b": {"ndcg_cut_10": noisy_scores(N, 2)}},
        {"a": {"ndcg_cut_10": noisy_scores(N, 1, shift=0.1)}, "b": {"ndcg_cut_10": noisy_scores(N, 2)}},
    )
    step = tmp_path / "step.md"
    step.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    code, _, _ = compare(base, cur, "--junit", tmp_path / "out" / "junit.xml")
    assert code == 1
    suite = ET.parse(tmp_path / "out" / "junit.xml").getroot().find("testsuite")
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert set(cases) == {"a nDCG@10", "b nDCG@10"} and suite.get("failures") == "1"
    failure = cases["a nDCG@10"].find("failure")
    assert "effect -0.0" in failure.get("message") and "p " in failure.get("message")
    assert cases["b nDCG@10"].find("failure") is None
    summary = step.read_text()
    assert summary.startswith("earlier step\n## ragbench compare: ❌ FAIL")  # appended, never overwritten
    compare(base, cur, "--summary", tmp_path / "own.md")
    assert (tmp_path / "own.md").read_text().startswith("## ragbench compare")


def test_benchmark_json_is_pytest_benchmark_shaped(tmp_path, compare):
    from pytest_benchmark.stats import Stats

    scores = {"prod": {"ndcg_cut_10": noisy_scores(20, 1)}}
    base, cur = _two_runs(tmp_path, scores, scores, latency_ms=100.0)
    assert compare(base, cur, "--benchmark-json", tmp_path / "bench.json")[0] == 0
    data = json.loads((tmp_path / "bench.json").read_text())
    assert {"machine_info", "commit_info", "benchmarks", "datetime", "version"} <= set(data)
    [entry] = data["benchmarks"]
    assert set(Stats.fields) <= set(entry["stats"])
    expected = [(100.0 + i % 7) / 1000 for i in range(20)]
    assert entry["stats"]["rounds"] == 20
    assert entry["stats"]["mean"] == pytest.approx(np.mean(expected))
    assert entry["stats"]["max"] == pytest.approx(0.106)
    assert entry["stats"]["ops"] == pytest.approx(1 / np.mean(expected))


@pytest.mark.parametrize(
    "args, message",
    [
        (["--max-drop", "nDCG@10=abc"], "--max-drop 'abc': expected a number"),
        (["--max-drop", "nDCG@5=0.01"], "--max-drop names ndcg_cut_5, which no compared run measured"),
        (["--max-drop", "Foo@3=0.1"], "measure 'Foo@3': unknown"),
        (["--alpha", "2"], "--alpha '2': must be between 0 and 1"),
        (["--match", "nope"], "--match 'nope': expected BASE_NAME=CUR_NAME"),
        (["--format", "xml"], "--format 'xml': expected one of text, md, json"),
        (["--max-p99-increase", "-5%"], "must be a finite number >= 0"),
        (
            ["--max-error-rate-increase", "150%"],
            "--max-error-rate-increase '150%': a fraction of requests is at most 1",
        ),
        (["--max-error-rate-increase", "nan"], "--max-error-rate-increase 'nan': must be a finite number >= 0"),
    ],
)
def test_bad_flags_give_one_line_and_exit_2(tmp_path, compare, args, message):
    scores = {"prod": {"ndcg_cut_10": noisy_scores(20, 1)}}
    base, cur = _two_runs(tmp_path, scores, scores)
    code, out, err = compare(base, cur, *args)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith("ragbench: error: ") and message in err


def test_bad_inputs_give_one_line_and_exit_2(tmp_path, compare):
    scores = {"prod": {"ndcg_cut_10": noisy_scores(20, 1)}}
    good = write_results(tmp_path / "good", scores)
    (tmp_path / "garbage.jsonl").write_text('{"record": "run"\n')
    (tmp_path / "empty").mkdir()
    for bad, message in [
        (tmp_path / "missing", "no such results file or folder"),
        (tmp_path / "garbage.jsonl", "garbage.jsonl:1: malformed JSON"),
        (tmp_path / "empty", "no results.jsonl in this folder"),
    ]:
        code, out, err = compare(good, bad)
        assert (code, out) == (2, "")
        assert err.count("\n") == 1 and message in err, err


def test_folders_of_several_results_pair_by_path(tmp_path, compare):
    scores = {"prod": {"ndcg_cut_10": noisy_scores(N, 1)}}
    for side in ("base", "cur"):
        write_results(tmp_path / side / "quality-a", scores)
    write_results(tmp_path / "base" / "quality-b", scores)
    write_results(tmp_path / "cur" / "quality-c", scores)
    code, out, _ = compare(tmp_path / "base", tmp_path / "cur")
    assert code == 1
    assert "pass  quality: quality-a prod nDCG@10" in out
    assert "FAIL  run: quality-b quality-b/results.jsonl is in the baseline, not in the current run" in out
    assert "!! quality-c/results.jsonl is new in the current run" in out


def test_a_null_score_is_an_input_error_not_a_nan_that_passes(tmp_path, compare):
    base, cur = _two_runs(
        tmp_path,
        {"prod": {"ndcg_cut_10": {"q1": 0.5, "q2": 0.7}}},
        {"prod": {"ndcg_cut_10": {"q1": 0.5, "q2": float("nan")}}},
    )  # NaN is written as null
    code, out, err = compare(base, cur)
    assert (code, out) == (2, "")
    assert err == (
        f"ragbench: error: {cur}: metrics record of prod ndcg_cut_10: the score of query 'q2' is not a finite number\n"
    )


def test_a_conflicting_duplicate_metrics_record_is_an_input_error_and_an_identical_one_is_not(tmp_path, compare):
    """Appending a better-looking copy of a metrics record must not hide a regression (nor replace the first)."""
    base, cur = _two_runs(
        tmp_path,
        {"prod": {"ndcg_cut_10": noisy_scores(N, 1)}},
        {"prod": {"ndcg_cut_10": noisy_scores(N, 1, shift=0.2)}},
    )
    lines = cur.read_text().splitlines()
    number, metrics = next((i + 1, line) for i, line in enumerate(lines) if '"record": "metrics"' in line)
    cur.write_text("\n".join([*lines, metrics]) + "\n")  # the same record again
    assert compare(base, cur)[0] == 1
    better = json.loads(metrics)
    better["per_query"] = noisy_scores(N, 1)
    cur.write_text("\n".join([*lines, json.dumps(better)]) + "\n")
    code, _, err = compare(base, cur)
    assert code == 2 and err.count("\n") == 1
    assert f"{cur}:{len(lines) + 1}: metrics record 'prod ndcg_cut_10' again, different from line {number}" in err

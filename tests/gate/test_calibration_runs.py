"""Calibration runs are distinct A/A runs of the baseline's sweep (bench/gate/calibration_runs.py): the same run
given twice (by path, as a copy, as a copy cut short), the baseline or the current run, or a run of another
sweep is refused at its argument, one line, exit 2, in `compare` and in a suite's `[gate] calibration`; fewer
than three runs are said beside the floor in every output."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.gate.helpers import load_point, write_load_results, write_suite

GATE = ["--min-throughput-ratio", "0.95"]


def run(directory: Path, texts_per_s: float, **point) -> Path:
    """A load run of one point (a second one at concurrency 2): its figures make it its own measurement."""
    points = [load_point(texts_per_s=texts_per_s, **point), load_point(concurrency=2, texts_per_s=texts_per_s / 2)]
    return write_load_results(directory, points)


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path, list[Path]]:
    """The baseline, the current run, and five distinct A/A runs of the same sweep (±8%)."""
    base, cur = run(tmp_path / "base", 1000.0), run(tmp_path / "cur", 980.0)
    aa = [run(tmp_path / f"aa{i}", 1000.0 * s) for i, s in enumerate([1.02, 1.1, 0.9, 1.05, 0.93])]
    return base, cur, aa


def calibrated(*paths: Path) -> list[str]:
    return [x for p in paths for x in ("--calibration", str(p))]


def refused(code: int, out: str, err: str, *words: str) -> None:
    assert (code, out) == (2, ""), (code, out, err)
    assert err.startswith("ragbench: error: ") and err.count("\n") == 1, err
    assert all(w in err for w in words), err


def test_five_distinct_runs_calibrate(runs, compare):
    base, cur, aa = runs
    code, out, err = compare(base, cur, *GATE, *calibrated(*aa), "--format", "json")
    assert code == 0, err
    (v,) = json.loads(out)["checks"][0]["figures"]["noise"]
    assert v["calibration"]["runs"] == 5 and v["calibration"]["loose"] is None and v["calibration"]["spread"] > 0.05


def test_the_same_run_given_again_is_refused_at_its_argument(runs, compare):
    """By path (five times: it would calibrate ±0.0%), as a folder and its file, as a copy elsewhere."""
    base, cur, aa = runs
    refused(
        *compare(base, cur, *GATE, *calibrated(*[aa[0]] * 5)), f"--calibration {aa[0]}: the same run as", "one file"
    )
    refused(*compare(base, cur, *GATE, *calibrated(aa[0].parent, aa[1], aa[0])), f"--calibration {aa[0]}: the same run")
    copy = aa[0].parent.parent / "copy" / "results.jsonl"
    copy.parent.mkdir()
    shutil.copy(aa[0], copy)
    refused(
        *compare(base, cur, *GATE, *calibrated(aa[0], aa[1], copy)),
        f"--calibration {copy}: the same run as --calibration {aa[0]}",
        "one run header, created",
    )


@pytest.mark.parametrize("restamped", [False, True])
def test_a_copy_cut_short_is_the_same_run(runs, compare, restamped):
    """A prefix of a run's records is that run (its header says so), and so is a copy whose header was
    changed: a point measured in both, figure for figure, is one measurement."""
    base, cur, aa = runs
    lines = aa[2].read_text().splitlines()
    if restamped:
        lines[0] = lines[0].replace('"created": "', '"created": "1999', 1)
    cut = aa[2].parent.parent / "cut" / "results.jsonl"
    cut.parent.mkdir()
    cut.write_text("\n".join(lines[:2]) + "\n")  # the header and the first point: cut off
    why = "is in both, figure for figure: a copy, whole or cut short" if restamped else "one run header"
    refused(*compare(base, cur, *GATE, *calibrated(aa[0], aa[2], cut)), f"--calibration {cut}: the same run", why)


@pytest.mark.parametrize("which", ["baseline", "current"])
def test_the_runs_compared_are_never_calibration_runs(runs, compare, which):
    base, cur, aa = runs
    compared = base if which == "baseline" else cur
    refused(
        *compare(base, cur, *GATE, *calibrated(aa[0], aa[1], compared.parent)),
        f"--calibration {compared.parent}: the same run as the {which if which == 'baseline' else 'current run'} (",
    )


@pytest.mark.parametrize(
    "other, says",
    [
        ({"endpoint": "vllm"}, "load point vllm embed closed batch 8 conc 4 is not in the baseline"),
        ({"batch": 16}, "load point tei embed closed batch 16 conc 4 is not in the baseline"),
    ],
)
def test_a_run_of_another_sweep_is_refused(runs, compare, tmp_path, other, says):
    base, cur, aa = runs
    elsewhere = run(tmp_path / "other", 1010.0, **other)
    refused(
        *compare(base, cur, *GATE, *calibrated(aa[0], elsewhere, aa[1])),
        f"--calibration {elsewhere}: not an A/A run of the baseline's sweep: {says}",
    )


def test_a_run_of_part_of_the_sweep_calibrates_that_part(runs, compare, tmp_path):
    """Fewer points than the baseline is allowed (a run cut off): the others are said uncalibrated."""
    base, cur, _aa = runs
    part = [
        write_load_results(tmp_path / f"p{i}", [load_point(texts_per_s=t)])
        for i, t in enumerate([990.0, 1040.0, 970.0])
    ]
    code, out, _ = compare(base, cur, *GATE, *calibrated(*part))
    assert code == 0 and "no calibration for load point(s) tei embed closed batch 8 conc 2" in out


def test_fewer_than_three_runs_are_said_beside_the_floor_in_every_output(runs, compare, tmp_path):
    base, cur, aa = runs
    summary = tmp_path / "s.md"
    code, text, _ = compare(base, cur, *GATE, *calibrated(aa[0], aa[1]), "--summary", summary)
    assert code == 0
    said = "only 2 runs, fewer than 3: a loose estimate"
    note = "calibrated over fewer than 3 distinct A/A runs"
    assert said in text and note in text
    assert note in summary.read_text()
    as_json = json.loads(compare(base, cur, *GATE, *calibrated(aa[0], aa[1]), "--format", "json")[1])
    (v,) = as_json["checks"][0]["figures"]["noise"]
    assert said in v["message"] and v["calibration"]["loose"].startswith(said)
    assert any(note in n for n in as_json["notes"])
    code, text, _ = compare(base, cur, *GATE, *calibrated(*aa[:3]))
    assert code == 0 and "fewer than 3" not in text


GATE_CALIBRATION = """
[gate]
calibration = [{runs}]
"""


@pytest.mark.parametrize("case", ["twice", "baseline"])
def test_a_suite_refuses_the_same_calibration_runs_before_any_job_runs(runs, tmp_path, ragbench, case):
    base, _, aa = runs
    given = [aa[0], aa[1], aa[0]] if case == "twice" else [aa[0], aa[1], base.parent]
    suite = write_suite(tmp_path, GATE_CALIBRATION.format(runs=", ".join(f'"{p}"' for p in given)))
    out = tmp_path / "out"
    code, _stdout, err = ragbench("run", str(suite), "--baseline", str(base.parent), "--out", str(out))
    assert code == 2 and err.count("\n") == 1 and not out.exists(), (code, err)
    if case == "twice":
        assert f"{suite}:" in err and "gate.calibration" in err and f"--calibration {aa[0]}: the same run as" in err
    else:
        assert f"--calibration {base.parent}: the same run as the baseline ({base.parent})" in err

"""`history` keeps an interleaved run's paired ratio B ÷ A as its own series: the rounds' ratios its samples."""

from __future__ import annotations

import pytest

from bench.history.series import Gate, read_history
from tests.gate.helpers import interleaved_run


def test_the_paired_ratio_is_a_series_of_its_own(tmp_path):
    for k, step in enumerate((1.0, 1.0, 0.9)):
        interleaved_run(tmp_path / f"run{k}", step, seed=k)
    history = read_history([str(tmp_path)])
    series = history.find("load interleaved b ÷ a closed batch 8 conc 4", "texts/s ratio")
    assert series is not None and series.gate == Gate.THROUGHPUT and series.higher_is_better
    assert len(series.observations) == 3
    last = series.observations[-1]
    assert len(last.samples) == 10 and last.value == pytest.approx(sum(last.samples) / 10, rel=1e-12)
    assert last.low is not None and last.high is not None and last.low < 0.9 < last.high
    assert series.observations[0].value == pytest.approx(1.0, abs=0.03)
    p99 = history.find("load interleaved b ÷ a closed batch 8 conc 4", "p99 ratio")
    assert p99 is not None and not p99.higher_is_better and p99.observations[-1].value > 1

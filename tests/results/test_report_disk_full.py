"""A full disk after the results are whole: the report's failure says the results are complete and how to build the
report later, exit 3 (issue 50: exit 2 "cannot write the results", though they were written)."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from bench.core.errors import EXIT_MEASUREMENT_FAILED, MeasurementFailed, UserError
from bench.results.lifecycle import Output, open_run
from bench.results.store import Results, read_results
from tests.results.test_lifecycle import run_header


def full_disk(results: Results) -> Path:
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_report_the_disk_cannot_hold_after_a_complete_run_says_the_results_are_whole(tmp_path: Path):
    with (
        pytest.raises(MeasurementFailed) as failed,
        open_run(Output(tmp_path, report=full_disk), run_header(targets=["a"])),
    ):
        pass
    said = str(failed.value)
    assert failed.value.exit_code == EXIT_MEASUREMENT_FAILED
    assert "results are complete" in said and "No space left on device" in said and "ragbench report" in said
    assert read_results(tmp_path / "results.jsonl").end.status == "complete"


def test_after_a_failed_run_its_own_error_goes_on(tmp_path: Path):
    with (
        pytest.raises(UserError, match="refused"),
        open_run(Output(tmp_path, report=full_disk), run_header(targets=["a"])),
    ):
        raise UserError("endpoint t: refused")

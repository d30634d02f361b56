"""notebooks/explore_results.ipynb executed with a real kernel (nbclient + ipykernel) on the results the
tests produce: a failing cell fails the test."""

from __future__ import annotations

import os
import re

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from tests.paths import REPO

NOTEBOOK = REPO / "notebooks" / "explore_results.ipynb"


def _execute(results: list[str], monkeypatch) -> nbformat.NotebookNode:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    # The kernel is a child process: it reads the runs, and imports this tree's `bench`, from its environment.
    monkeypatch.setenv("RAGBENCH_RESULTS", os.pathsep.join(results))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel's inline backend: plots become image outputs
    client = NotebookClient(
        notebook, kernel_name="python3", timeout=300, resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    )
    client.execute()
    return notebook


def _text(cell) -> str:
    parts = []
    for output in cell.get("outputs", []):
        parts.append(output.get("text", ""))
        parts.append(output.get("data", {}).get("text/plain", ""))
    return "".join(parts)


def test_notebook_has_no_stored_outputs():
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(notebook)
    assert all(
        not c.get("outputs") and c.get("execution_count") is None for c in notebook.cells if c.cell_type == "code"
    )


def test_notebook_runs_on_every_kind_of_results_and_compares_runs(command_outputs, monkeypatch):
    notebook = _execute([str(command_outputs.root)], monkeypatch)
    code = [c for c in notebook.cells if c.cell_type == "code"]
    runs = _text(code[0])
    for name in ("quality", "quality_b", "identity", "doctor", "load"):
        assert name in runs
    comparison = _text(code[3])  # per-query comparison of the target both quality runs have
    assert "bm25" in comparison and "quality" in comparison and "quality_b" in comparison
    images = sum(1 for c in code for o in c.get("outputs", []) if "image/png" in o.get("data", {}))
    assert images >= 3  # means, per-query scatter, load throughput
    assert "ref" in _text(code[5]) and "openwebui" in _text(code[5])  # identity pairs, doctor findings


def test_a_failing_cell_fails_the_run(tmp_path, monkeypatch):
    with pytest.raises(CellExecutionError, match=re.escape("no results.jsonl")):
        _execute([str(tmp_path)], monkeypatch)

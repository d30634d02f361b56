"""Temporary (not committed): a larger grow ladder on the real Open WebUI for docs/grow.md."""

import shutil
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def test_ladder(ragbench, tmp_path, openwebui_server, openwebui_key):
    url = openwebui_server.url
    out = Path("/tmp/growruns/owui")
    targets = ["-t", f"vector=openwebui:vector@{url}", "-t", f"hybrid=openwebui:hybrid@{url}"]
    code, stdout, err = ragbench(
        "grow", "--dataset", "builtin:numpy-docs", "--queries", "30", *targets,
        "--rungs", "100,300,1000", "--slo", "p99=2s", "--out", out, "--overwrite",
    )
    Path("/tmp/growruns/owui.log").write_text(f"{code}\n{stdout}\n{err}")
    assert code in (0, 3)

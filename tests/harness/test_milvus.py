"""The Milvus Lite environment alone (issue 47): with Open WebUI's own interpreter and the extra folder on its
PYTHONPATH (as the harness starts the app), pymilvus opens a local `.db` path through milvus-lite and answers an HNSW
search — and refuses that path in MILVUS_URI, which is why the harness leaves it unset."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.harness import openwebui
from tests.harness.milvus import env_dir, openwebui_extra

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SEARCH = """
import sys
from pymilvus import MilvusClient
c = MilvusClient(sys.argv[1])
c.create_collection("t", dimension=3, metric_type="COSINE", index_type="HNSW")
c.insert("t", [{"id": 1, "vector": [1.0, 2.0, 3.0]}, {"id": 2, "vector": [3.0, 2.0, 1.0]}])
print(c.search("t", data=[[1.0, 2.0, 2.9]], limit=1)[0][0]["id"])
"""


def _run(code: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    for folder, script in ((openwebui.env_dir(), "openwebui.sh"), (env_dir(), "milvus.sh")):
        if not (folder / ".complete").exists():
            pytest.fail(f"environment missing at {folder}: run `bash scripts/envs/{script}` first", pytrace=False)
    environ = {k: v for k, v in os.environ.items() if k != "MILVUS_URI"} | {"PYTHONPATH": str(openwebui_extra())}
    python = str(openwebui.env_dir() / "bin" / "python")
    return subprocess.run([python, "-c", code, *args], env=environ | env, capture_output=True, text=True, timeout=300)


def test_milvus_lite_answers_a_search_in_open_webuis_interpreter(tmp_path):
    done = _run(SEARCH, str(tmp_path / "m.db"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "1"
    assert (tmp_path / "m.db").exists()


def test_a_file_path_in_milvus_uri_stops_pymilvus_at_import(tmp_path):
    done = _run("import pymilvus", MILVUS_URI=str(tmp_path / "m.db"))
    assert done.returncode != 0 and "Illegal uri" in done.stderr

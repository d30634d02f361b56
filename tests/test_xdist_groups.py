"""The test command's two workers keep each shared group on one worker (scripts/test.sh: `--dist loadgroup`, the groups
set in tests/conftest.py's collection hook). With pytest 9.2 and pytest-xdist 3.8 they silently did not: the group
suffix xdist writes into the node id no longer took effect, every group was spread over both workers, and each worker
started its own Open WebUI, LightRAG and infinity (pytest-xdist issue #1386; pyproject pins pytest below 9.2)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

CONFTEST = """
import pytest

@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    for item in items:
        group = "shared" if "shared" in item.name else item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(group))
"""

# Two modules, each with grouped and ungrouped tests: spread round-robin, the shared ones land on both workers.
MODULE = "".join(f"def test_{name}():\n    pass\n\n" for name in ("shared_1", "other_1", "shared_2", "other_2"))


@pytest.mark.slow  # starts two pytest-xdist workers
def test_a_group_set_in_a_collection_hook_runs_on_one_worker(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    for module in ("test_a.py", "test_b.py"):
        (tmp_path / module).write_text(MODULE)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    ran = re.findall(r"\[(gw\d)\].*PASSED (\S+)", done.stdout)
    assert len(ran) == 8, done.stdout
    assert len({worker for worker, test in ran if "shared" in test}) == 1, done.stdout

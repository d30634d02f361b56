"""Where tests find data: the read-only shared/ folder beside the clone (reference data the project does not ship).

A user's clone has no shared/: a test that needs it is skipped with one line naming the missing folder, except
under CI=true, where a missing shared/ is a broken CI run and the test fails. Call these inside tests and fixtures
(never at import), so that only the tests that need the data are affected.
"""

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


def shared(*parts: str) -> Path:
    """A path under ../shared, or skip (fail under CI=true) when it is not there."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        message = f"needs {path}: reference data kept beside the clone in ../shared/, not shipped with ragbench"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {message}", pytrace=False)
        pytest.skip(message)
    return path


def golden() -> Path:
    """trec_eval's own regression files (qrels.test, results.test and their outputs)."""
    return shared("datasets", "trec_eval_golden")


def scifact() -> Path:
    """BEIR SciFact, train split (5,183 abstracts, 809 queries)."""
    return shared("datasets", "scifact-train")

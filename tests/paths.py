"""Where tests find data: the repo's bundled datasets and the read-only shared/ folder beside the clone."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
SHARED_DATASETS = SHARED / "datasets"
GOLDEN = SHARED_DATASETS / "trec_eval_golden"
BUNDLED_SCIFACT = REPO / "datasets" / "scifact-train"

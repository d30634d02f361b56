"""`load --requests-csv FILE`: one row per measured request, written point by point."""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

from bench.load.share import REQUEST_COLUMNS, ShareResult


class RequestsCsv:
    """`load --requests-csv FILE`: one row per measured request, as AIPerf's and k6's per-request exports: the
    endpoint, point, repeat, worker, then REQUEST_COLUMNS (times in seconds from the point's start; intended empty
    in the closed loop; outcome `ok` or the error class). Written after each point from what the workers kept;
    with no file, nothing is kept or written."""

    HEADER = ("endpoint", "point", "repeat", "worker", *REQUEST_COLUMNS)

    def __init__(self, path: Path | None):
        self.path = path
        self.file: Any = None

    def __enter__(self) -> RequestsCsv:
        if self.path is not None:
            self.file = self.path.open("w", newline="", encoding="utf-8")
            self.writer = csv.writer(self.file)
            self.writer.writerow(self.HEADER)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.file is not None:
            self.file.close()

    def write(self, endpoint: str, point: str, repeat: int, shares: list[ShareResult]) -> None:
        if self.file is None:
            return
        for result in shares:
            log = result.request_log or {}
            columns = [log.get(c, []) for c in REQUEST_COLUMNS]
            for row in zip(*columns):
                self.writer.writerow([endpoint, point, repeat, result.worker, *(_cell(value) for value in row)])
        self.file.flush()


def _cell(value: object) -> object:
    """Times to the microsecond; a closed loop's intended time (NaN) empty."""
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.6f}"
    return value

"""The grow report of a ladder across vector stores (issue 47): when its targets name two or more stores (a rung's
`store`, or `store=` in the target's name), the stores side by side — one table row per mode and rung size with each
store's p50/p99, ingest rate, app memory and bytes on disk, and one figure whose panels (p99 latency, the app's
resident memory, the store on disk) put every store's line on the same log axes: a colour per store, a line style
per mode (the target's name without its store)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from bench.report.page import Rows
from bench.report.plots import save_figure
from bench.results.schema import GrowRungRecord
from bench.results.schema.run import spec_store, without_store
from bench.results.store import Results

STYLES = ("o-", "s--", "^:", "d-.")  # one per mode


def _p50(r: GrowRungRecord) -> float | None:
    return r.latency_ms.get("p50")


def _p99(r: GrowRungRecord) -> float | None:
    return r.latency_ms.get("p99")


def _rate(r: GrowRungRecord) -> float | None:
    return r.docs_per_s


def _rss_mib(r: GrowRungRecord) -> float | None:
    return None if r.app_rss_bytes is None else r.app_rss_bytes / 2**20


def _disk_mib(r: GrowRungRecord) -> float | None:
    return None if r.store_bytes is None else r.store_bytes / 2**20


Figure = Callable[[GrowRungRecord], float | None]
PANELS: tuple[tuple[str, Figure], ...] = (
    ("p99 latency per query, ms", _p99),
    ("app's resident memory, MiB", _rss_mib),
    ("store on disk (data_dir), MiB", _disk_mib),
)
_COLUMNS: tuple[Figure, ...] = (_p50, _p99, _rate, _rss_mib, _disk_mib)


@dataclass(frozen=True)
class Line:
    """One target's rungs: its store and its mode (the target's name without the store)."""

    store: str
    mode: str
    rungs: list[GrowRungRecord]


def _store(rung: GrowRungRecord) -> str | None:
    return rung.store or spec_store(rung.target)


def _mode(target: str, store: str) -> str:
    """`hybrid-pgvector-halfvec-hnsw` and `openwebui:hybrid@…?store=…` both give their mode's name: the target's
    name without its store (as a `store=` parameter, a `-STORE` suffix or a `STORE-` prefix)."""
    bare = without_store(target)
    if bare.endswith(f"-{store}"):
        return bare[: -len(store) - 1]
    return bare.removeprefix(f"{store}-")


def lines(results: Results) -> list[Line]:
    """Every target's rungs with its store, in file order; empty unless the ladder spans two stores or more."""
    targets = list(dict.fromkeys(r.target for r in results.grow_rungs))
    found: list[Line] = []
    for target in targets:
        rungs = sorted((r for r in results.grow_rungs if r.target == target), key=lambda r: r.size)
        store = next((s for r in rungs if (s := _store(r))), None)
        if store is not None:
            found.append(Line(store, _mode(target, store), rungs))
    return found if len({line.store for line in found}) > 1 else []


def _cell(value: float | None, spec: str) -> str:
    return "-" if value is None or not np.isfinite(value) else format(value, spec)


def side_by_side_table(results: Results) -> Rows:
    """Per mode and rung size, each store's figures in adjacent columns; no rows for a one-store ladder."""
    found = lines(results)
    stores = list(dict.fromkeys(line.store for line in found))
    header = ["mode", "size"]
    for store in stores:
        header += [f"{store} p50 ms", f"{store} p99 ms", f"{store} docs/s", f"{store} RSS MiB", f"{store} disk MiB"]
    rows: list[list[str]] = []
    for mode in dict.fromkeys(line.mode for line in found):
        by_store = {line.store: {r.size: r for r in line.rungs} for line in found if line.mode == mode}
        for size in sorted({size for rungs in by_store.values() for size in rungs}):
            row = [mode, f"{size:,}"]
            for store in stores:
                r = by_store.get(store, {}).get(size)
                figures: list[float | None] = [None] * 5 if r is None else [f(r) for f in _COLUMNS]
                row += [_cell(v, spec) for v, spec in zip(figures, (",.1f", ",.1f", ".2f", ",.0f", ",.0f"))]
            rows.append(row)
    return header, rows


def stores_plot(results: Results, path: Path) -> Path | None:
    """Latency, memory and disk against size, every store on the same log axes; None for a one-store ladder."""
    found = lines(results)
    if not found:
        return None
    colours = {store: f"C{i}" for i, store in enumerate(dict.fromkeys(line.store for line in found))}
    styles = {mode: STYLES[i % len(STYLES)] for i, mode in enumerate(dict.fromkeys(line.mode for line in found))}
    fig, axes = plt.subplots(1, len(PANELS), figsize=(5.5 * len(PANELS), 4.5), squeeze=False)
    for ax, (label, value) in zip(axes[0], PANELS):
        for line in found:
            points = [(r.size, v) for r in line.rungs if (v := value(r)) is not None and v > 0]
            if points:
                sizes, values = zip(*points)
                ax.plot(sizes, values, styles[line.mode], color=colours[line.store], label=f"{line.store} {line.mode}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(f"knowledge-base size ({found[0].rungs[0].unit}, log)")
        ax.set_ylabel(f"{label} (log)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    return save_figure(fig, path)

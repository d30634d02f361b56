"""One grow report of ladders run on different vector stores (issue 47): benchmarks/grow_openwebui.py runs one
store per run (one Open WebUI per store), so their results files are read back and joined — every rung and answer
of each, the first file's header, the ladders' rungs (those of every file) — into one Results, whose report puts the
stores side by side (bench/report/grow_stores.py: latency, memory and disk vs size on log axes).

    PYTHONPATH=. .venv/bin/python benchmarks/grow_stores_report.py OUT reports/grow-ladder-chroma/results.jsonl \
        reports/grow-ladder-pg/results.jsonl[=STORE] [...]

Each target's name must differ across the files (grow_openwebui.py names them MODE-STORE), and each rung states its
store (`store`, written since grow records it), so nothing is paired or mixed across stores; `PATH=STORE` states it
for a file written before, whose rungs name none.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.report import write_report
from bench.results.store import Results, read_results


def joined(sources: list[str]) -> Results:
    files = []
    for source in sources:
        path, _, store = source.partition("=")
        files.append(read_results(Path(path)))
        for rung in files[-1].grow_rungs:
            rung.store = rung.store or store or None
    first = files[0]
    targets = [t for f in files for t in f.header.targets]
    if len(set(targets)) < len(targets):
        raise SystemExit(f"a target name is in two files ({targets}): name targets by store (MODE-STORE)")
    rungs = sorted({n for f in files for n in (f.header.grow or {}).get("rungs", [])})
    grow = dict(first.header.grow or {}, rungs=rungs)
    header = dataclasses.replace(first.header, targets=targets, grow=grow)  # type: ignore[arg-type]
    out = Results(first.path, header, end=first.end)
    for f in files:
        for kind in ("grow_rung", "grow"):
            for record in f.of(kind):
                out.add(record)
    return out


if __name__ == "__main__":
    out_dir, *sources = sys.argv[1:]
    print(write_report(joined(sources), Path(out_dir)))

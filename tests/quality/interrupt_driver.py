"""Run `ragbench ARGS` with a stop signal sent at a chosen moment, from inside the process (and with
`$SEARCH_LOG` set, log every query each scripted target is asked for).

    python -m tests.quality.interrupt_driver MOMENT=SIGNAL[,MOMENT=SIGNAL...] ragbench-args...

The signal is sent by the process to itself at the named moment, so it arrives exactly there (no
sleeps, no races): Python runs the handler in the main thread right after `os.kill`, as it would for a
signal from a terminal or a supervisor. Moments:
  search       inside a `scripted` target's search (targets `scripted`, `scripted:b`: fixed rankings, no model);
               `scripted:b`'s when both run
  search-N     inside the N-th search call (one per batch of queries) of the first `scripted` target
  searching-N  when the N-th target's search starts (any kind: its prepare() has run, settings are changed)
  run-file     while a finished target's run file is written (inside the uninterruptible batch)
  comparisons  when the pairwise comparisons start
  report       when report.html is rendered
  exit         during interpreter shutdown, after the command returned
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
from pathlib import Path

import bench.quality.pipeline as pipeline
import bench.quality.target_run as target_run
import bench.report as report
from bench.targets import registry
from bench.targets.base import Hit, QueryResult

# A worker process the command spawns imports this module too (as __mp_main__), with arguments of its own.
moments = dict(item.split("=") for item in sys.argv[1].split(",") if item) if __name__ == "__main__" else {}


def fire(moment: str) -> None:
    if moment in moments:
        os.kill(os.getpid(), getattr(signal, moments.pop(moment)))


class ScriptedTarget:
    """Ranks the corpus in a fixed order; variant `b` reverses it."""

    def __init__(self, spec, options):
        self.name, self.variant = spec.name, spec.variant

    def prepare(self, dataset, progress):
        self.docs = sorted(dataset.corpus, reverse=self.variant == "b")

    def search(self, queries, depth, progress):
        if self.variant == "b" or "scripted:b" not in sys.argv:
            fire("search")
        self.calls = getattr(self, "calls", 0) + 1
        fire(f"search-{self.calls}")
        if os.environ.get("SEARCH_LOG"):  # which queries each target was asked for
            with Path(os.environ["SEARCH_LOG"]).open("a") as log:
                log.writelines(f"{self.name} {q}\n" for q in queries)
        return [
            QueryResult(q, [Hit(d, float(len(self.docs) - i)) for i, d in enumerate(self.docs[:depth])], 0.001)
            for q in queries
        ]

    def describe(self):
        return {"scripted": self.variant}

    def close(self):
        pass


def wrap(module, name: str, moment: str) -> None:
    original = getattr(module, name)

    def wrapped(*args, **kwargs):
        fire(moment)
        return original(*args, **kwargs)

    setattr(module, name, wrapped)


def count_searches() -> None:
    original = target_run._search
    started = []

    def searching(*args, **kwargs):
        started.append(1)
        fire(f"searching-{len(started)}")
        return original(*args, **kwargs)

    target_run._search = searching


registry.TARGET_FACTORIES["scripted"] = ScriptedTarget
count_searches()
wrap(target_run, "write_run", "run-file")
wrap(pipeline, "comparisons", "comparisons")
wrap(report, "html_page", "report")
atexit.register(fire, "exit")

if __name__ == "__main__":
    from bench.cli import main

    sys.argv = ["ragbench", *sys.argv[2:]]
    main()

"""The gate's options, declared once (bench/core/flags.py): `compare`'s flags, a suite file's `[gate]` keys and
the flags `history` and `run` share with them. Each value is kept as given (`10%`, `0.1`, a suite's number) and
parsed in one place, `build_gate_config`, which names it as its caller spells it."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from bench.core.flags import Flag, Renamed, option

MAX_DROP = Flag(
    ("--max-drop",),
    "MEASURE=AMOUNT (0.01, or 2% of the baseline: compare's baseline run, history's mean before), or AMOUNT for "
    "every measure; default 0. Repeat.",
    toml=(dict, float, int, str),
)
MAX_P99_INCREASE = Flag(
    ("--max-p99-increase",),
    "Load: largest allowed p99 latency increase, current over baseline (load --interleave: B over A), 10% or 0.1; "
    "history: also the query p99.",
    toml=(str, float, int),
)
MIN_THROUGHPUT_RATIO = Flag(
    ("--min-throughput-ratio",),
    "Load: smallest allowed throughput ratio, current/baseline (load --interleave: B/A texts/s), e.g. 0.95; "
    "history: also ingest texts/s, after/before.",
    toml=(float, int, str),
)
# Was --max-error-rate, which load and size use for a point's own limit: this one bounds the rise between runs.
MAX_ERROR_RATE_INCREASE = Flag(
    ("--max-error-rate-increase",),
    "Load: largest allowed rise of a point's error rate, current over baseline (0.01 or 1%); default 0: any rise "
    "fails.",
    toml=(str, float, int),
    renamed=Renamed("--max-error-rate", "the rise of a load point's error rate between runs"),
)
HISTORY = Flag(
    ("--history",),
    "Load: earlier results (a folder of runs, e.g. CI artifacts, or a glob): each point's runs since its last change "
    "point calibrate the gate as --calibration runs would (not with --calibration).",
    toml=(str,),
)
JUNIT = Flag(("--junit",), "Write the gate's JUnit XML here: one test case per check.", suite=False)
SUMMARY = Flag(
    ("--summary",), "Append the gate's markdown summary here (default: $GITHUB_STEP_SUMMARY when set).", suite=False
)
BENCHMARK_JSON = Flag(
    ("--benchmark-json",),
    "Write pytest-benchmark JSON of the current run's latency and throughput.",
    suite=False,
)


@dataclass(frozen=True)
class GateOptions:
    """What the gate was given, as given: `build_gate_config` checks each value once (one line, exit 2)."""

    max_drop: list[str] | None = field(default=None, metadata=option(MAX_DROP))
    alpha: str = field(
        default="0.05",
        metadata=option(
            Flag(
                ("--alpha",),
                "Significance level of a quality drop (Holm across a run's gated checks).",
                toml=(float, int),
            )
        ),
    )
    significance: bool = field(
        default=True,
        metadata=option(
            Flag(
                ("--significance/--no-significance",),
                "Fail a quality drop past its allowance only when significant (--no-significance: significant or not).",
            )
        ),
    )
    max_p99_increase: str | None = field(default=None, metadata=option(MAX_P99_INCREASE))
    min_throughput_ratio: str | None = field(default=None, metadata=option(MIN_THROUGHPUT_RATIO))
    max_error_rate_increase: str = field(default="0", metadata=option(MAX_ERROR_RATE_INCREASE))
    inconclusive: str = field(
        default="pass",
        metadata=option(
            Flag(
                ("--inconclusive",),
                "What an inconclusive gate counts as, pass or fail (said in every output): a load interval (repeats "
                "on both sides) straddling its limit; a quality drop past its allowance significant alone, not "
                "after Holm over the gated checks.",
            )
        ),
    )
    primary: list[str] | None = field(
        default=None,
        metadata=option(
            Flag(
                ("--primary",),
                "MEASURE or TARGET:MEASURE: a gated quality check; Holm corrects over these only, the rest are "
                "reported, not gated. Default: the measures with a --max-drop (every measure without one). Repeat.",
                toml=(list,),
            )
        ),
    )
    min_ingest_ratio: str | None = field(
        default=None,
        metadata=option(
            Flag(
                ("--min-ingest-ratio",),
                "Quality: smallest allowed current/baseline ingest texts/s; ingest: the same for each "
                "combination's docs/s (0.9).",
                toml=(float, int, str),
            )
        ),
    )
    max_query_p99_increase: str | None = field(
        default=None,
        metadata=option(
            Flag(
                ("--max-query-p99-increase",),
                "Quality: largest allowed per-query p99 increase (20% or 0.2).",
                toml=(str, float, int),
            )
        ),
    )
    match: list[str] | None = field(
        default=None,
        metadata=option(
            Flag(
                ("--match",),
                "BASE_NAME=CUR_NAME: a target or endpoint renamed since the baseline. Repeat.",
                toml=(dict,),
            )
        ),
    )
    seed: int = field(
        default=0,
        metadata=option(Flag(("--seed",), "Seed of the randomization tests and bootstrap intervals.", suite=False)),
    )
    calibration: list[Path] | None = field(
        default=None,
        metadata=option(
            Flag(
                ("--calibration",),
                "Load: an A/A run (the same sweep, same build, on this runner); give 5 or more. Their spread is "
                "the runner's noise between runs: no gated interval is narrower. Repeat.",
                toml=(list,),
            )
        ),
    )
    history: str | None = field(default=None, metadata=option(HISTORY))


@dataclass(frozen=True)
class GateOutputs:
    """The files a gate writes besides stdout (`compare`, `run`)."""

    junit: Path | None = field(default=None, metadata=option(JUNIT))
    summary: Path | None = field(default=None, metadata=option(SUMMARY))
    benchmark_json: Path | None = field(default=None, metadata=option(BENCHMARK_JSON))

    def paths(self) -> dict[str, Path | None]:
        """Each output by its flag, the summary defaulting to $GITHUB_STEP_SUMMARY (checked before a run)."""
        return {"--junit": self.junit, "--summary": self.summary_file(), "--benchmark-json": self.benchmark_json}

    def summary_file(self) -> Path | None:
        return self.summary or step_summary()


def step_summary() -> Path | None:
    """$GITHUB_STEP_SUMMARY: GitHub's file for this step's page, when set (the one place it is read)."""
    found = os.environ.get("GITHUB_STEP_SUMMARY")
    return Path(found) if found else None

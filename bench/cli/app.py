"""The Typer application object that every command module registers on, and the table of its commands.

`ragbench --help` lists the table without importing any command module (they import the engines: numpy, scipy,
torch); `ragbench X ...` imports X's module only, which registers X on `app` (tests/cli/test_lazy.py keeps the
table's help equal to each command's own)."""

from __future__ import annotations

import importlib
from typing import Any, NamedTuple

import typer
import typer.core
import typer.main

from bench.cli.examples import add_examples, epilog


class Listed(NamedTuple):
    """A command as `ragbench --help` lists it: the module that registers it and its help's first paragraph."""

    module: str
    help: str


COMMANDS: dict[str, Listed] = {
    "ceiling": Listed(
        "ceiling_cmd",
        "In-process texts/s, tokens/s and achieved FLOP/s of the reference model per length and batch.",
    ),
    "compare": Listed(
        "compare_cmd", "Compare a run with its baseline check by check; exit 1 when something regressed."
    ),
    "doctor": Listed("doctor_cmd", "Probe each hop with tiny requests; print what is wrong and how to fix it."),
    "evaluate": Listed(
        "evaluate_cmd", "Score a run with trec_eval's exact semantics (ties: score, then docno, descending)."
    ),
    "grow": Listed(
        "grow_cmd",
        "Grow one knowledge base in rungs (the query set's documents, then distractors) through each target: ingest"
        " rate, latency p50/p99, nDCG@10 and R@100 per rung; the first rung that fails or breaks --slo, the latency's"
        " growth law and the size it reaches the SLO at.",
    ),
    "history": Listed(
        "history_cmd",
        "Every run of a suite as series: change points, sizes, p-values; exit 1 when the newest run starts one past"
        " a limit, or is out of line with the runs since the last one and past a limit.",
    ),
    "identity": Listed(
        "identity_cmd",
        "Send the same texts through every endpoint and compare: cosine, norms, neighbours, order, causes.",
    ),
    "ingest": Listed(
        "ingest_cmd",
        "Ingest a corpus through Open WebUI (each --setting combination on a fresh knowledge base, settings"
        " restored) or LightRAG: docs/s, lost documents, the embedder's view through a meter, and the app against"
        " the embedder alone.",
    ),
    "load": Listed(
        "load_cmd",
        "Measure throughput and latency over a sweep of batch x concurrency, offered rates, or bursts. Exit 0 every"
        " point measured within --max-error-rate, 1 a point past it (--interleave: or the verdict fails; --max-time: or"
        " 'too busy to decide' with --too-busy fail), 3 a point measured nothing or had no success.",
    ),
    "meter": Listed(
        "meter_cmd", "Forward /ROUTE/... to each upstream unchanged and count calls, tokens and time per route."
    ),
    "quality": Listed(
        "quality_cmd",
        "Rank every judged query with every target; write run files, results, per-query CSV and a report.",
    ),
    "demo": Listed(
        "quality_cmd",
        "Quality of bm25, dense and hybrid on numpy-docs: numpy's docstrings as a known-item search, built at run"
        " time.",
    ),
    "report": Listed("report_cmd", "Rebuild report.md and report.html (and plots, per_query.csv) from results files."),
    "run": Listed(
        "run_cmd",
        "Run every quality, identity and load entry of a suite; with --baseline, gate the run (exit 1 on a"
        " regression).",
    ),
    "size": Listed(
        "size_cmd",
        "Closed-loop sweep, Open WebUI bursts, saturation search under the SLO, and the recommendation — always:"
        " on --max-time, Ctrl-C or SIGTERM the best so far (the interval between the highest steady pass and the"
        " lowest failure; a lower bound while none failed). Exit 3 when a point measured nothing or had no success.",
    ),
    "datasets": Listed("datasets_cmd", "Load and validate reference query/answer sets."),
}


class LazyGroup(typer.core.TyperGroup):
    """`ragbench`: lists COMMANDS from the table; resolves a command by importing its module only then."""

    listing = False  # True while the help lists the commands: each is then its table entry, nothing imported

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        listed = COMMANDS.get(cmd_name)
        if listed is None:
            return None
        if self.listing:
            return typer.core.TyperCommand(cmd_name, help=listed.help)
        importlib.import_module(f"bench.cli.{listed.module}")  # registers the command on `app`
        command = typer.main.get_group(app).commands[cmd_name]
        add_examples(cmd_name, command)
        return command

    def shell_complete(self, ctx: Any, incomplete: str) -> Any:
        # Completing a command's name lists the table: importing every command module would take seconds.
        self.listing = True
        try:
            return super().shell_complete(ctx, incomplete)
        finally:
            self.listing = False

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self.listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self.listing = False


app = typer.Typer(
    cls=LazyGroup,
    name="ragbench",
    help="Benchmark RAG retrieval stacks: datasets, quality, identity, load, reports.",
    epilog=epilog(""),
    no_args_is_help=True,
    # --install-completion / --show-completion, as Typer provides them (bash, zsh, fish, PowerShell).
    add_completion=True,
    pretty_exceptions_enable=False,
)


def version_text() -> str:
    """`ragbench X.Y.Z`: the installed distribution's version, as every results header records it."""
    import bench

    return f"ragbench {bench.__version__}"


def _show_version(value: bool) -> None:
    if value:
        typer.echo(version_text())
        raise typer.Exit()


def _root(
    show_version: bool = typer.Option(
        False, "--version", is_eager=True, callback=_show_version, help="Print ragbench's version and exit."
    ),
) -> None:
    """Benchmark RAG retrieval stacks: datasets, quality, identity, load, reports."""
    _show_version(show_version)  # done already by the eager callback; here so the value has a reader


app.callback()(_root)

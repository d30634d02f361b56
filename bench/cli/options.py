"""The command line's own options, which are no request's field: `--out` of the derived commands (load, size,
ceiling), each with its default folder, and `--label` of the hand-written ones (demo, run). Every other option is
declared on its request's field (bench/commands/options.py). `--out` and `--resume` of the resumable commands
(quality, grow) choose one folder, made into the request's `out` and `resume` by `resumable`."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from bench.cli.declared import Request, typer_option
from bench.commands.options import LABELS

Out = Annotated[Path, typer.Option("--out", help="Output folder.")]
Labels = Annotated[list[str] | None, typer_option(LABELS)]
# --resume of the resumable commands (quality, grow): one folder, made into the request's `out` and `resume`.
Resume = Annotated[
    Path | None,
    typer.Option(
        "--resume",
        help="Continue the interrupted run in this folder (same options): what finished is kept (quality: its targets "
        "and queries; grow: its rungs).",
    ),
]


def out_folder(default: Path) -> inspect.Parameter:
    """`--out`, the folder a derived command writes, with its default (an `extra` of bench.cli.declared.command)."""
    return inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=default, annotation=Out)


def cli_only(name: str, annotation: Any) -> inspect.Parameter:
    """An option of the command line's own (no request's field), None when not given."""
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation)


def resumable(request: Callable[..., Request], default: Path) -> Callable[..., Request]:
    """How a resumable command's request is made (the `build` of bench.cli.declared.command): its folder is
    --resume's, else --out's, else `default`; --resume with another --out, or with --overwrite, is refused."""

    def build(*, out: Path | None, resume: Path | None, overwrite: bool, **declared: Any) -> Request:
        from bench.core.errors import UserError

        if resume is not None and out is not None and out != resume:
            raise UserError(f"--resume {resume} writes into that folder; drop --out {out}")
        if resume is not None and overwrite:
            raise UserError("--resume continues a run, --overwrite replaces it: give one of them")
        folder = resume or out or default
        return request(**declared, overwrite=overwrite, out=folder, resume=resume is not None)

    return build

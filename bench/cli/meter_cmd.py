"""`ragbench meter --upstream ROUTE=URL ... [--host H] [--port P]`: the metering pass-through proxy."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from bench.cli.app import app
from bench.core.errors import UserError

if TYPE_CHECKING:
    from bench.endpoints.meter import Meter


def _announce(proxy: Meter, record: Path | None, tokenizer: Path | None) -> None:
    """The meter's URLs, one per route, and where its trace goes (`tokenizer`: None when lengths are characters)."""
    for route, url in proxy.upstreams.items():
        replaces = " (the URL's credentials replace the client's Authorization)" if proxy.auth[route] else ""
        typer.echo(f"{proxy.url}/{route} -> {url}{replaces}")
    typer.echo(f"usage: {proxy.url}/_meter/usage  (Ctrl-C stops)")
    if record is not None:
        typer.echo(f"recording a trace in {record}" + (f", lengths in {tokenizer}'s tokens" if tokenizer else ""))


@app.command("meter")
def meter(
    upstream: Annotated[
        list[str],
        typer.Option("--upstream", help="ROUTE=URL, e.g. llm=http://host/v1 (repeat per provider)."),
    ],
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port to listen on (0: any free port).")] = 9600,
    record: Annotated[
        Path | None,
        typer.Option("--record", help="Write a trace of every call here (JSONL: shapes and times, never texts)."),
    ] = None,
    tokenizer: Annotated[
        Path | None,
        typer.Option(
            "--tokenizer",
            help="--record: each text's length in this model's tokens (a folder with tokenizer.json, or the file), "
            "not characters.",
        ),
    ] = None,
    overwrite: Annotated[
        bool,
        typer.Option("--overwrite", help="--record: replace an earlier trace (never a file ragbench did not write)."),
    ] = False,
) -> None:
    """Forward /ROUTE/... to each upstream unchanged and count calls, tokens and time per route.

    Point LightRAG's LLM_BINDING_HOST / EMBEDDING_BINDING_HOST at the printed URLs and give the
    target `?meter=URL`: each query's LLM and embedding cost then lands in the results.
    """
    measure = _token_measure(tokenizer, record)
    if record is not None:  # checked before the meter listens: no file but an earlier trace is ever truncated
        from bench.endpoints.meter_trace import is_trace_file
        from bench.results.outdir import check_record_file

        check_record_file(record, "--record", overwrite, is_trace_file)
    proxy = _listening(_upstreams(upstream), host, port, record)
    if proxy.trace is not None and measure is not None:
        proxy.trace.count_tokens_with(measure)
    _announce(proxy, record, tokenizer if measure is not None else None)
    try:
        proxy.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        typer.echo(json.dumps(proxy.snapshot(), indent=1))
        proxy.close()


def _listening(upstreams: dict[str, str], host: str, port: int, record: Path | None) -> Meter:
    """The meter listening on host:port, or one UserError for a bad upstream, --record file or address."""
    from bench.endpoints.meter import Meter

    try:
        return Meter(upstreams, host=host, port=port, record=record)
    except ValueError as exc:
        raise UserError(f"--upstream: {exc}") from None
    except OSError as exc:
        if record is not None and exc.filename == str(record):
            raise UserError(f"--record {record}: {exc.strerror or exc}") from None
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def _upstreams(items: list[str]) -> dict[str, str]:
    """--upstream ROUTE=URL, each route once."""
    upstreams: dict[str, str] = {}
    for item in items:
        route, sep, url = item.partition("=")
        if not sep or not route or not url.startswith(("http://", "https://")):
            raise UserError(f"--upstream {item!r}: expected ROUTE=http(s)://HOST[:PORT][/PATH]")
        if route in upstreams:  # the later one would silently replace the first
            raise UserError(f"--upstream {item!r}: route {route!r} is given twice (one upstream a route)")
        upstreams[route] = url
    return upstreams


def _token_measure(tokenizer: Path | None, record: Path | None) -> Callable[[str], int] | None:
    """--tokenizer's count of one text's tokens (special tokens included, as the model reads it), checked before
    the meter listens; None: characters."""
    if tokenizer is None:
        return None
    if record is None:
        raise UserError("--tokenizer counts the lengths of a --record trace: give --record FILE too")
    from bench.datasets.texts import Tokenizer

    try:
        model = Tokenizer(tokenizer)
    except UserError:
        raise
    except Exception as exc:  # tokenizers raises a bare Exception for a file that is not a tokenizer.json
        raise UserError(f"--tokenizer {tokenizer}: not a tokenizer.json ({exc})") from None
    return lambda text: int(model.lengths([text])[0])

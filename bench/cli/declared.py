"""Typer commands derived from a request's declared options (bench/commands/options.py): one parameter per
declared field, named as the field, typed as the field, with the field's default."""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from bench.cli.app import app
from bench.commands.options import LABELS, Flag, declared_fields, flag_of

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

Request = TypeVar("Request", bound="DataclassInstance")  # a command's request: a dataclass of its options


def typer_option(flag: Flag) -> Any:
    """The Typer option `flag` declares (its names, help and lower bound)."""
    return typer.Option(*flag.names, help=flag.help, min=flag.min, hidden=flag.hidden)


def field_option(request: type, name: str) -> Any:
    """The Typer option of one declared field, for a command that shares it without being derived."""
    field = next(f for f in dataclasses.fields(request) if f.name == name)
    flag = flag_of(field)
    assert flag is not None, f"{request.__name__}.{name} is not declared"
    return typer_option(flag)


OLD = "__old"  # the parameter of a renamed flag's old spelling: the field's name and this


def parameters(request: type) -> list[inspect.Parameter]:
    """The command-line parameters of the request's declared fields; a renamed flag's old spelling follows its
    field as a hidden parameter of its own, so that `invoke` can tell which one was given."""
    hints = typing.get_type_hints(request)
    found = []
    keyword = inspect.Parameter.KEYWORD_ONLY
    for field in declared_fields(request):
        flag = flag_of(field)
        assert flag is not None
        default = inspect.Parameter.empty if field.default is dataclasses.MISSING else field.default
        hint = hints[field.name]
        annotation = Annotated[hint, typer_option(flag)]  # type: ignore[valid-type]  # a type found at run time
        found.append(inspect.Parameter(field.name, keyword, default=default, annotation=annotation))
        if flag.renamed is not None:
            old = typer.Option(flag.renamed.old, help=flag.help, min=flag.min, hidden=True)
            was = Annotated[hint | None, old]  # type: ignore[valid-type]  # a type found at run time
            found.append(inspect.Parameter(field.name + OLD, keyword, default=None, annotation=was))
    return found


def take_renamed(request: type, values: dict[str, Any]) -> None:
    """A renamed flag given by its old spelling: its value moved to the field, and one deprecation line on
    stderr; both spellings at once are refused (one line, exit 2)."""
    from bench.core.errors import UserError

    for field in declared_fields(request):
        flag = flag_of(field)
        if flag is None or flag.renamed is None:
            continue
        old = values.pop(field.name + OLD)
        if old is None:
            continue
        new = flag.names[0]
        typer.echo(flag.renamed.line(flag.renamed.old, new), err=True)
        if values[field.name] != field.default:  # the new spelling given too (Typer says no more than the value)
            raise UserError(f"{new} and {flag.renamed.old}: give one of them (the second is the first's old name)")
        values[field.name] = old


def command(
    name: str,
    request: type[Request],
    run: Callable[[Request], None],
    help: str,
    extra: tuple[tuple[str, inspect.Parameter], ...] = (),
    build: Callable[..., Request] | None = None,
) -> None:
    """Register `ragbench NAME`: the request's declared options and `extra` ones, each listed after the
    declared field named with it, or first when named with "" (arguments and options the command line has
    and the request has not); `run` gets the request made from every value by parameter name (by `build`
    where the command line's own options are no field of the request). A request with an `origin` (the
    results header's provenance) takes `--label` last, and the request gets the origin made from it."""
    from bench.results.provenance import Origin, parse_labels

    stamped = "origin" in {f.name for f in dataclasses.fields(request)}

    made = build or request

    def invoke(**values: Any) -> None:  # the values Typer parsed, by parameter name
        take_renamed(request, values)
        if stamped:
            values["origin"] = Origin(parse_labels(values.pop("labels")))
        run(made(**values))

    listed = [p for after, p in extra if after == ""]
    for parameter in parameters(request):
        listed += [parameter, *(p for after, p in extra if after == parameter.name)]
    if stamped:
        labels = Annotated[list[str] | None, typer_option(LABELS)]
        listed.append(inspect.Parameter("labels", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=labels))
    signature = inspect.Signature(listed)
    invoke.__signature__ = signature  # type: ignore[attr-defined]  # what Typer reads the options from
    invoke.__annotations__ = {p.name: p.annotation for p in signature.parameters.values()}
    invoke.__doc__ = help
    app.command(name)(invoke)

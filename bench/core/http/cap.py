"""A cap on every answer body ragbench reads: a server that sends valid vectors and then 300 MB of whitespace
(issue 33: 6.9 GB of memory) is cut at the cap with one error naming it, not read to the end.

The cap travels with each request (`BODY_CAP`, a request extension), so an endpoint kind sets it from what a
legitimate answer to that request can be (bench/endpoints/base.py); every other answer has `DEFAULT_CAP`.
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx

MIB = 1 << 20
BODY_CAP = "ragbench.body_cap"  # the request extension that carries a request's BodyCap


@dataclass(frozen=True)
class BodyCap:
    """At most `size` bytes of an answer are read; `what` says whose cap it is, in the error."""

    size: int
    what: str

    def said(self) -> str:
        shown = f"{self.size / MIB:,.1f} MiB" if self.size >= MIB else f"{self.size:,} bytes"
        return f"{shown}, the cap for {self.what}"


# What an app server or API answers to anything else (settings, listings, a query's chunks): generous, bounded.
DEFAULT_CAP = BodyCap(128 * MIB, "a server's answer")


class BodyTooLarge(httpx.HTTPError):
    """An answer body over its cap: read no further."""

    def __init__(self, cap: BodyCap):
        super().__init__(f"answered more than {cap.said()}; not read further")
        self.cap = cap


def cap_of(request: httpx.Request) -> BodyCap | None:
    """The request's cap: its own where it carries one (None: uncapped, a pass-through's), else DEFAULT_CAP."""
    cap = request.extensions.get(BODY_CAP, DEFAULT_CAP)
    return cap if isinstance(cap, BodyCap) else None

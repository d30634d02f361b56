"""Secrets kept out of suite files: a secret-looking key, URL credentials or a secret-named spec parameter is
an error (secrets come from the environment, read by the targets and endpoints themselves)."""

from __future__ import annotations

import re

from bench.cli.suite.lines import SuiteText, Where, label
from bench.core.secrets import is_secret_name

_USERINFO = re.compile(r"://[^/@?#\s]+@")
_SECRET_PARAM = re.compile(r"[?&]([^=&]+)=")


def refuse_secret_key(text: SuiteText, key: str, where: Where) -> None:
    if is_secret_name(key):
        raise text.error(
            f"{label((*where, key))}: secrets come from the environment only, never from a suite "
            "file (targets read OPENWEBUI_API_KEY / LIGHTRAG_API_KEY; endpoints key_env=VAR)",
            *where,
            key,
        )


def refuse_credentials(text: SuiteText, spec: str, where: Where) -> None:
    """A spec with user:password@ in its URL or a secret-named parameter (?api_key=...)."""
    if _USERINFO.search(spec) or any(is_secret_name(k) for k in _SECRET_PARAM.findall(spec)):
        raise text.error(
            f"{label(where)}: credentials in a spec; secrets come from the environment only "
            "(OPENWEBUI_API_KEY, LIGHTRAG_API_KEY, key_env=VAR)",
            *where,
        )

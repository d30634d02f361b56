"""Where a run comes from: its labels, the runner it ran on, the suite file and the CI run behind it.

Every results header carries this (`RunHeader.labels`, `RunHeader.provenance`), so that runs of one suite can be
put in a series and told apart by what changed between them:
- labels: `--label NAME=VALUE` on every command that writes results, and a suite's `[suite] labels`; where CI
  variables are set, they fill the `commit`, `branch` and `ci_run` labels the user did not give, and the
  provenance names the labels so filled;
- the runner: its host name hashed (the same runner, not its name), CPU model and cores, memory, the GPUs NVML
  sees with their driver, Python and the versions of the packages that shape the figures;
- the CI variables read: only those in CI_VARIABLES (commit, ref, run id, repository; never a token), each value
  masked like every output.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import os
import platform
import re
import socket
from collections.abc import Mapping, Sequence, Sized
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import bench
from bench.core.errors import UserError
from bench.core.secrets import is_secret_name, mask

# The CI variables read, in the order recorded: GitHub Actions', then GitLab's. None of them holds a secret.
CI_VARIABLES = (
    "GITHUB_SHA",
    "GITHUB_REF",
    "GITHUB_RUN_ID",
    "GITHUB_REPOSITORY",
    "CI_COMMIT_SHA",
    "CI_COMMIT_REF_NAME",
    "CI_PIPELINE_ID",
    "CI_PROJECT_PATH",
)
# The labels CI variables fill when the user gave none of that key: label -> its variables, the first set wins.
CI_LABELS = {
    "commit": ("GITHUB_SHA", "CI_COMMIT_SHA"),
    "branch": ("GITHUB_REF", "CI_COMMIT_REF_NAME"),
    "ci_run": ("GITHUB_RUN_ID", "CI_PIPELINE_ID"),
}
# The distributions whose versions shape the figures (those installed are recorded).
PACKAGES = ("numpy", "scipy", "httpx", "torch", "transformers", "sentence-transformers", "nvidia-ml-py")
HOST_DIGITS = 12  # of the host name's sha256: enough to tell runners apart, too few to matter if leaked

MAX_LABELS, MAX_LABEL_NAME, MAX_LABEL_VALUE = 32, 64, 256  # a label is a commit, a branch, a run id: short
_LABEL_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


@dataclass
class Gpu:
    """One GPU as NVML sees it."""

    name: str
    driver: str  # the NVIDIA driver's version
    memory_bytes: int


@dataclass
class Runner:
    """The machine and software a run ran on."""

    host: str  # sha256 of the host name, its first 12 hex digits: the same runner, without its name
    system: str  # platform.platform(): OS, kernel, architecture
    cpu: str  # the CPU model; empty where the OS does not say
    cores: int | None  # logical CPUs
    memory_bytes: int | None  # physical memory
    python: str
    packages: dict[str, str]  # distribution -> version: ragbench and those of PACKAGES installed
    gpus: list[Gpu] | None  # None: NVML absent (nvidia-ml-py or the driver missing); []: NVML sees no GPU


@dataclass
class Provenance:
    """Where a run comes from besides its labels: the runner, the suite file, the CI run."""

    runner: Runner
    suite_sha256: str | None = None  # `run SUITE`: the suite file's sha256; None: not run from a suite
    ci_variables: dict[str, str] = field(default_factory=dict)  # the CI variables that were set -> value (masked)
    ci_labels: list[str] = field(default_factory=list)  # the labels CI variables filled (commit, branch, ci_run)


@dataclass(frozen=True)
class Origin:
    """What the user says of a run before it starts: its labels and the suite file it runs from."""

    labels: dict[str, str] = field(default_factory=dict)
    suite_sha256: str | None = None


def check_label(key: str, value: object, where: str) -> str:
    """A label's value, checked: a NAME of letters, digits, _ . -, a text value on one line, nothing secret."""
    size = len(value) if isinstance(value, str) else 0
    if len(key) > MAX_LABEL_NAME or size > MAX_LABEL_VALUE:  # checked before the patterns walk the text
        raise UserError(
            f"{where} {key[:MAX_LABEL_NAME]}: a label's NAME is at most {MAX_LABEL_NAME} characters and its value at "
            f"most {MAX_LABEL_VALUE} (given {len(key)} and {size}): every results header and report carries it"
        )
    if not _LABEL_NAME.fullmatch(key):
        raise UserError(f"{where} {key!r}: a label's NAME may hold only letters, digits, _ . -")
    if is_secret_name(key):
        raise UserError(f"{where} {key}: a label is written into every results file; secrets never are")
    if not isinstance(value, str) or not value or any(c in value for c in "\r\n\t\0"):
        raise UserError(f"{where} {key}: expected a non-empty text on one line")
    if mask(value) != value:
        raise UserError(f"{where} {key}: the value holds a credential; a label is written into every results file")
    return value


def _count(labels: Sized, where: str) -> None:
    if len(labels) > MAX_LABELS:
        raise UserError(f"{where}: {len(labels)} labels; at most {MAX_LABELS} (every results header carries them)")


def parse_labels(texts: Sequence[str] | None) -> dict[str, str]:
    """`--label NAME=VALUE` options (repeated) as labels; a bad form or a NAME given twice is a UserError."""
    labels: dict[str, str] = {}
    _count(texts or (), "--label")
    for text in texts or ():
        key, sep, value = text.partition("=")
        if not sep or not key:
            raise UserError(f"--label {text!r}: expected NAME=VALUE")
        if key in labels:
            raise UserError(f"--label {key}: given twice")
        labels[key] = check_label(key, value, "--label")
    return labels


def check_labels(table: Mapping[str, object], where: str) -> dict[str, str]:
    """A table of labels (a suite's `[suite] labels`), each checked as `--label` is."""
    _count(table, where)
    return {key: check_label(key, value, where) for key, value in table.items()}


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def ci_variables(environ: Mapping[str, str]) -> dict[str, str]:
    """The CI variables of CI_VARIABLES that are set, each value masked."""
    return {name: mask(environ[name]) for name in CI_VARIABLES if environ.get(name)}


def ci_labels(variables: Mapping[str, str]) -> dict[str, str]:
    """The labels the CI variables give: commit, branch (GitHub's `refs/heads/` left out), ci_run."""
    found = {}
    for label, names in CI_LABELS.items():
        value = next((variables[n] for n in names if n in variables), None)
        if value is not None:
            found[label] = value.removeprefix("refs/heads/") if label == "branch" else value
    return found


def stamp(origin: Origin, environ: Mapping[str, str] | None = None) -> tuple[dict[str, str], Provenance]:
    """A run's labels (the user's, then what CI fills of commit, branch, ci_run) and its provenance."""
    variables = ci_variables(os.environ if environ is None else environ)
    filled = {k: v for k, v in ci_labels(variables).items() if k not in origin.labels}
    provenance = Provenance(runner(), origin.suite_sha256, variables, sorted(filled))
    return {**origin.labels, **filled}, provenance


@functools.cache
def runner() -> Runner:
    """This process's runner, read once (it does not change while the process runs)."""
    return Runner(
        host=hashlib.sha256(socket.gethostname().encode()).hexdigest()[:HOST_DIGITS],
        system=platform.platform(),
        cpu=cpu_model(),
        cores=os.cpu_count(),
        memory_bytes=memory_bytes(),
        python=platform.python_version(),
        packages=package_versions(),
        gpus=gpus(),
    )


def cpu_model() -> str:
    """`model name` of /proc/cpuinfo (Linux), else what `platform` says."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            name, _, value = line.partition(":")
            if name.strip() == "model name" and value.strip():
                return value.strip()
    return platform.processor()


def memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # a name the OS lacks; Windows has no sysconf
        return None


def package_versions() -> dict[str, str]:
    versions = {"ragbench": bench.__version__}
    for name in PACKAGES:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            versions[name] = importlib.metadata.version(name)
    return versions


def gpus(nvml: Any = None) -> list[Gpu] | None:
    """Every GPU NVML sees; None when NVML cannot be used. `nvml`: the pynvml module (tests pass a fake)."""
    try:
        if nvml is None:
            import pynvml

            nvml = pynvml
        nvml.nvmlInit()
    except Exception:  # ImportError, or pynvml's NVMLError: no library, no driver, no permission
        return None
    try:
        driver = _text(nvml.nvmlSystemGetDriverVersion())
        handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(nvml.nvmlDeviceGetCount())]
        return [
            Gpu(_text(nvml.nvmlDeviceGetName(h)), driver, int(nvml.nvmlDeviceGetMemoryInfo(h).total)) for h in handles
        ]
    except Exception:  # a GPU that stops answering mid-read: no GPU facts rather than a failed run
        return None
    finally:
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()


def _text(value: str | bytes) -> str:
    """NVML answers bytes in older pynvml versions, str in newer ones."""
    return value.decode() if isinstance(value, bytes) else value

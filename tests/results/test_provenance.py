"""Runs that know where they come from: every results header carries its labels (`--label`, a suite's, CI's) and
its provenance (runner, suite file hash, CI variables read), nothing secret lands in the file, and files written
before version 3 still read."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from bench.core.errors import UserError
from bench.results.lifecycle import Output, open_run
from bench.results.provenance import (
    HOST_DIGITS,
    Origin,
    Provenance,
    gpus,
    parse_labels,
    runner,
    stamp,
)
from bench.results.schema import VERSION, RunHeader
from bench.results.store import read_results
from bench.results.writer import record_line
from tests.harness.beir import write_beir
from tests.harness.cli import run_cli

V2 = Path(__file__).with_name("v2")
GITHUB = {
    "GITHUB_SHA": "0123456789abcdef0123456789abcdef01234567",
    "GITHUB_REF": "refs/heads/main",
    "GITHUB_RUN_ID": "4242",
    "GITHUB_REPOSITORY": "acme/search",
}
# Set beside the CI variables read: none of them may reach a results file.
SECRETS = {
    "GITHUB_TOKEN": "ghp_TOPSECRETtoken0000000000000000000",
    "CI_JOB_TOKEN": "glcbt-HIDDENjobtoken",
    "CI_REPOSITORY_URL": "https://gitlab-ci-token:REPOPASSWORD@gitlab.example/acme/search.git",
    "OPENWEBUI_API_KEY": "sk-OWUIKEYVALUE12345",
}


@pytest.fixture
def no_ci(monkeypatch):
    for name in [*GITHUB, "CI_COMMIT_SHA", "CI_COMMIT_REF_NAME", "CI_PIPELINE_ID", "CI_PROJECT_PATH"]:
        monkeypatch.delenv(name, raising=False)


def _header() -> RunHeader:
    return RunHeader(command="doctor", created="now", ragbench_version="0")


def test_ci_variables_fill_the_labels_not_given_and_say_so():
    labels, provenance = stamp(Origin({"commit": "mine", "stack": "prod"}), {**GITHUB, **SECRETS})
    assert labels == {"commit": "mine", "stack": "prod", "branch": "main", "ci_run": "4242"}
    assert provenance.ci_labels == ["branch", "ci_run"]  # commit was the user's
    assert provenance.ci_variables == GITHUB  # only the variables read, none of the others set
    labels, provenance = stamp(
        Origin(), {"CI_COMMIT_SHA": "abc", "CI_COMMIT_REF_NAME": "feature/x", "CI_PIPELINE_ID": "7"}
    )
    assert labels == {"commit": "abc", "branch": "feature/x", "ci_run": "7"}
    assert provenance.ci_labels == ["branch", "ci_run", "commit"]
    labels, provenance = stamp(Origin(), {})
    assert (labels, provenance.ci_variables, provenance.ci_labels, provenance.suite_sha256) == ({}, {}, [], None)


def test_the_runner_is_described_without_its_name():
    found = runner()
    assert len(found.host) == HOST_DIGITS and all(c in "0123456789abcdef" for c in found.host)
    assert found.cores is not None and found.cores >= 1 and found.python.count(".") == 2
    assert {"ragbench", "numpy", "httpx"} <= set(found.packages)


def test_gpus_as_nvml_sees_them_and_none_without_nvml():
    memory = SimpleNamespace(total=141 * 2**30)
    nvml = SimpleNamespace(
        nvmlInit=lambda: None,
        nvmlShutdown=lambda: None,
        nvmlSystemGetDriverVersion=lambda: b"570.86",
        nvmlDeviceGetCount=lambda: 1,
        nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetName=lambda h: "NVIDIA H200",
        nvmlDeviceGetMemoryInfo=lambda h: memory,
    )
    (gpu,) = gpus(nvml) or []
    assert (gpu.name, gpu.driver, gpu.memory_bytes) == ("NVIDIA H200", "570.86", 141 * 2**30)

    def no_driver() -> None:
        raise OSError("NVML Shared Library Not Found")

    assert gpus(SimpleNamespace(nvmlInit=no_driver)) is None


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (["commit"], "--label 'commit': expected NAME=VALUE"),
        (["=abc"], "--label '=abc': expected NAME=VALUE"),
        (["commit="], "--label commit: expected a non-empty text on one line"),
        (["a b=c"], "--label 'a b': a label's NAME may hold only letters, digits, _ . -"),
        (["x=1", "x=2"], "--label x: given twice"),
        (["api_key=abc"], "--label api_key: a label is written into every results file; secrets never are"),
        (["repo=https://u:pw@host/x"], "--label repo: the value holds a credential"),
        (["k=" + "x" * 100_000], "--label k: a label's NAME is at most 64 characters and its value at most 256"),
        (["k" * 100_000 + "=v"], f"--label {'k' * 64}: a label's NAME is at most 64 characters"),
        ([f"k{i}=v" for i in range(33)], "--label: 33 labels; at most 32"),
    ],
)
def test_bad_labels_are_one_error(given, message):
    with pytest.raises(UserError) as raised:
        parse_labels(given)
    assert str(raised.value).startswith(message) and "\n" not in str(raised.value)


def test_a_header_carries_labels_and_provenance_and_reads_back(tmp_path, monkeypatch, no_ci):
    for name, value in {**GITHUB, **SECRETS}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("CI_COMMIT_REF_NAME", "https://builder:REFPASSWORD@git.example/x")  # read, and masked
    output = Output(tmp_path, origin=Origin({"stack": "prod"}, suite_sha256="ab" * 32))
    with open_run(output, _header()):
        pass
    text = (tmp_path / "results.jsonl").read_text()
    for secret in [*SECRETS.values(), "REPOPASSWORD", "REFPASSWORD", "TOPSECRET", "OWUIKEYVALUE"]:
        assert secret not in text
    line = json.loads(text.splitlines()[0])
    assert line["version"] == VERSION == 3
    assert line["labels"] == {"stack": "prod", "commit": GITHUB["GITHUB_SHA"], "branch": "main", "ci_run": "4242"}
    assert line["provenance"]["ci_variables"]["CI_COMMIT_REF_NAME"] == "https://***@git.example/x"
    header = read_results(tmp_path / "results.jsonl").header
    assert isinstance(header.provenance, Provenance) and header.provenance.suite_sha256 == "ab" * 32
    assert header.provenance.ci_labels == ["branch", "ci_run", "commit"]
    assert header.provenance.runner == runner()
    assert record_line(header) == text.splitlines(keepends=True)[0]


def test_a_version_2_file_reads_without_labels_or_provenance():
    for path in sorted(V2.glob("*.jsonl")):
        header = read_results(path).header
        assert (header.version, header.labels, header.provenance) == (2, {}, None), path.name
        assert record_line(header) == path.read_text(encoding="utf-8").splitlines(keepends=True)[0]


COMMANDS = {
    "quality": ["quality", "--dataset", "DATA", "-t", "bm25"],
    "demo": ["demo"],
    "identity": ["identity", "-e", "a=reference", "--texts", "TEXTS"],
    "load": ["load", "-e", "t=tei@http://127.0.0.1:9"],
    "size": ["size", "-e", "t=tei@http://127.0.0.1:9", "--slo-p99", "100"],
    "ceiling": ["ceiling"],
    "doctor": ["doctor", "--tei", "http://127.0.0.1:9"],
    "run": ["run", "SUITE"],
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_bad_label_is_one_line_and_exit_2_before_anything_runs(command, tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    args = [*COMMANDS[command], "--out", str(out), "--label", "stack=prod", "--label", "nokey"]
    code, stdout, err = run_cli(args, monkeypatch, capsys)
    assert (code, err) == (2, "ragbench: error: --label 'nokey': expected NAME=VALUE\n"), stdout + err
    assert not out.exists()


def test_commands_write_their_labels_and_reports_show_them(tmp_path, monkeypatch, capsys, no_ci):
    data = write_beir(tmp_path / "data", {"d1": "cats purr", "d2": "dogs bark"}, {"q1": "cats"}, [("q1", "d1", 1)])
    monkeypatch.setenv("GITHUB_SHA", "c0ffee")
    quality = ["quality", "--dataset", str(data), "-t", "bm25", "-m", "P@2", "--depth", "5"]
    doctor = ["doctor", "--tei", "http://127.0.0.1:9"]
    for args, code in ((quality, 0), (doctor, 1)):
        out = tmp_path / args[0]
        result = run_cli([*args, "--out", str(out), "--label", "stack=prod"], monkeypatch, capsys)
        assert result[0] == code, result
        header = read_results(out / "results.jsonl").header
        assert header.labels == {"stack": "prod", "commit": "c0ffee"} and header.provenance is not None
        said = "Labels: commit=c0ffee (CI), stack=prod."
        assert said in (out / "report.md").read_text() and said in (out / "report.html").read_text()


def test_run_passes_the_suite_and_command_line_labels_to_every_job(tmp_path, monkeypatch, capsys, no_ci):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    write_beir(tmp_path / "data", {"d1": "cats purr", "d2": "dogs bark"}, {"q1": "cats"}, [("q1", "d1", 1)])
    suite = tmp_path / "labels.toml"
    suite.write_text(
        '[suite]\nname = "labels"\nlabels = { stack = "prod", commit = "from-file" }\n\n'
        '[datasets.tiny]\npath = "data"\n\n[targets]\nbm25 = "bm25"\n\n'
        '[[quality]]\ndataset = "tiny"\nmeasures = ["P@2"]\ndepth = 5\n\n'
        '[[quality]]\ndataset = "tiny"\nname = "again"\nmeasures = ["P@2"]\ndepth = 5\n'
    )
    out = tmp_path / "out"
    code, stdout, err = run_cli(["run", str(suite), "--out", str(out), "--label", "commit=abc"], monkeypatch, capsys)
    assert code == 0, stdout + err
    digest = hashlib.sha256(suite.read_bytes()).hexdigest()
    for job in ("quality-tiny", "quality-again"):
        header = read_results(out / job / "results.jsonl").header
        assert header.labels == {"stack": "prod", "commit": "abc"}  # the command line over the file
        assert header.provenance is not None and header.provenance.suite_sha256 == digest


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        ("labels = { stack = 3 }", "suite.labels stack: expected a non-empty text on one line"),
        ('labels = { token = "x" }', "suite.labels token: a label is written into every results file"),
        ('labels = "stack=prod"', "suite.labels: expected table"),
    ],
)
def test_a_bad_suite_label_names_its_line(labels, message, tmp_path, monkeypatch, capsys):
    suite = tmp_path / "bad.toml"
    suite.write_text(f'[suite]\nname = "bad"\n{labels}\n\n[targets]\nbm25 = "bm25"\n')
    code, _, err = run_cli(["run", str(suite), "--out", str(tmp_path / "out")], monkeypatch, capsys)
    assert code == 2 and err.startswith(f"ragbench: error: {suite}:3: {message}") and err.count("\n") == 1, err

"""The app's resources per rung: `pid=` and `data_dir=` taken off the spec, the process found by its loopback
port, RSS over the process tree, bytes allocated under a folder (a ladder recording both: test_command.py)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from bench.core.errors import UserError
from bench.grow.resources import disk_bytes, listening_pid, rss_bytes, split_resources
from bench.targets.base import TargetSpec


def test_pid_and_data_dir_leave_the_spec_and_its_name_stays(tmp_path):
    spec = TargetSpec("x", "bm25", params={"pid": str(os.getpid()), "data_dir": str(tmp_path), "k": "v"})
    name = spec.name
    stripped, resources = split_resources(spec)
    assert stripped.params == {"k": "v"} and stripped.name == name
    assert resources.pid == os.getpid() and resources.data_dir == tmp_path


@pytest.mark.parametrize(
    ("key", "value", "said"), [("pid", "x1", "no running process"), ("data_dir", "/no/such", "not a folder")]
)
def test_a_bad_pid_or_data_dir_is_one_line(key, value, said):
    with pytest.raises(UserError, match=said):
        split_resources(TargetSpec("x", "bm25", params={key: value}))


def test_a_fresh_apps_store_folder_not_made_yet_is_taken_and_read_once_it_appears(tmp_path):
    """A fresh Open WebUI makes its vector store's folder at its first embedding: refused as "not a folder" before."""
    store = tmp_path / "vector_db"
    _, resources = split_resources(TargetSpec("x", "bm25", params={"data_dir": str(store)}))
    assert resources.data_dir == store and disk_bytes(store) == 0
    store.mkdir()
    (store / "chunks.bin").write_bytes(b"x" * 8192)
    assert disk_bytes(store) >= 8192
    with pytest.raises(UserError, match="not a folder"):  # nor a parent to make it in
        split_resources(TargetSpec("x", "bm25", params={"data_dir": str(tmp_path / "no" / "such")}))


def test_the_process_listening_on_a_loopback_port_is_found():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert listening_pid(f"http://127.0.0.1:{port}/x") == os.getpid()
    assert listening_pid(f"http://127.0.0.1:{port}") is None  # closed: nobody listens
    assert listening_pid("http://example.com:8080") is None  # not this host


def test_rss_counts_the_children_and_a_gone_process_is_none():
    alone = rss_bytes(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", "import time; x = bytearray(64 << 20); time.sleep(30)"])
    try:
        for _ in range(100):  # until the child holds its 64 MiB (no clock: a bounded number of looks)
            with_child = rss_bytes(os.getpid())
            if alone is not None and with_child is not None and with_child > alone + (48 << 20):
                break
            subprocess.run([sys.executable, "-c", "pass"], check=True)
        assert alone is not None and with_child is not None and with_child > alone + (48 << 20)
    finally:
        child.kill()
        child.wait()
    assert rss_bytes(child.pid) is None


def test_disk_bytes_counts_what_the_files_hold(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a").write_bytes(os.urandom(100_000))
    assert 100_000 <= disk_bytes(tmp_path) < 200_000

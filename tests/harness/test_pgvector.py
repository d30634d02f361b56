"""The PostgreSQL + pgvector harness alone (issue 47): the wheel's server starts on loopback as an unprivileged user,
has pgvector >= 0.7 (halfvec under HNSW, what Open WebUI's PGVECTOR_USE_HALFVEC needs), and leaves nothing behind."""

from __future__ import annotations

import pytest

from tests.harness.pgvector import env_dir, start_postgres, stop_postgres

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_postgres_with_pgvector_halfvec_hnsw_starts_answers_and_leaves_nothing(tmp_path):
    if not (env_dir() / ".complete").exists():
        pytest.fail(f"environment missing at {env_dir()}: run `bash scripts/envs/pgvector.sh` first", pytrace=False)
    proc, server = start_postgres(tmp_path / "postgres.log")
    try:
        server.sql("create extension vector")
        version = tuple(
            int(part) for part in server.sql("select extversion from pg_extension where extname = 'vector'").split(".")
        )
        assert version >= (0, 7)
        server.sql("create table t (id int, v halfvec(3)); create index on t using hnsw (v halfvec_cosine_ops)")
        server.sql("insert into t values (1, '[1,2,3]'), (2, '[3,2,1]')")
        assert server.sql("select id from t order by v <=> '[1,2,2.9]' limit 1") == "1"
    finally:
        stop_postgres(proc, server)
    assert proc.popen.poll() is not None and not server.root.exists()

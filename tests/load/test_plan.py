"""A `ragbench load` run builds its sweep's points once, into one typed plan that every later step consumes."""

from __future__ import annotations

from bench.load.plan import plan_sweep
from bench.load.points import PointConfig, SweepConfig
from bench.results.schema import Op
from tests.harness.cli import run_cli


def test_a_load_run_builds_its_points_once(load_server, tmp_path, monkeypatch, capsys):
    url, _ = load_server(service_ms=1)
    built: list[int] = []
    points = SweepConfig.points

    def counted(self: SweepConfig) -> list[PointConfig]:
        built.append(1)
        return points(self)

    monkeypatch.setattr(SweepConfig, "points", counted)
    flags = ["--concurrency", "1,2", "--duration", "0.3s", "--warmup", "0s", "--out", str(tmp_path / "out")]
    code, _, stderr = run_cli(["load", "-e", f"t=tei@{url}", *flags], monkeypatch, capsys)
    assert code == 0, stderr
    assert len(built) == 1


def test_a_plan_with_a_requests_csv_logs_every_point(tmp_path):
    sweep = SweepConfig(PointConfig(op=Op.EMBED), concurrencies=[1, 2])
    assert not any(p.log_requests for p in plan_sweep(sweep).points)
    plan = plan_sweep(sweep, tmp_path / "rows.csv")
    assert [p.concurrency for p in plan.points] == [1, 2]
    assert all(p.log_requests for p in plan.points)

"""The runner's noise between runs, read from A/A calibration runs (`compare --calibration RUN`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from bench.core.errors import InputError, UserError
from bench.gate import calibration_runs, noise
from bench.gate.inputs import locate_results
from bench.gate.points import checked_points, p99_quantity
from bench.load.points import PointKey
from bench.results.store import read_results


@dataclass(frozen=True)
class Calibration:
    """This runner's noise between runs, per load point and gated figure, from A/A runs (`--calibration RUN`):
    the same sweep of the same build measured several times on the runner that gates."""

    runs: tuple[str, ...] = ()  # the calibration runs' paths, as given
    floors: dict[tuple[str, PointKey], dict[noise.Figure, noise.NoiseFloor]] = field(
        default_factory=dict
    )  # (source, point)
    read: tuple[tuple[str, calibration_runs.RunFiles], ...] = field(default=(), repr=False)  # (argument, files)
    notes: tuple[str, ...] = ()  # said with the comparison's notes: where the floors were learned
    origin: str = "--calibration runs (the same sweep, on this runner)"  # the runs a floor needs two of, in words


def load_calibration(paths: list[Path]) -> Calibration:
    """The noise floor of every load point the A/A runs at `paths` measured (folders pair their results files
    by path, as compare does); a point needs a figure in two runs at least. A run given twice (or a copy of
    one) is refused at its argument: check_calibration then checks them against the runs compared."""
    if not paths:
        return Calibration()
    if len(paths) < 2:
        raise UserError("--calibration: give two A/A runs at least (five or more: few runs estimate the noise loosely)")
    figures: dict[tuple[str, PointKey], dict[noise.Figure, list[float]]] = {}
    repeats: dict[tuple[str, PointKey], int] = {}
    read: list[tuple[str, calibration_runs.RunFiles]] = []
    for path in paths:
        files: calibration_runs.RunFiles = {}
        for source, file in locate_results(path).items():
            results = files[source] = read_results(file)
            if not results.load_points:
                raise InputError(file, "--calibration: no load_point records (calibrate with `ragbench load` runs)")
            for key, point in checked_points(results).items():
                for figure in noise.Figure:
                    value = noise.run_figure(point, figure, p99_quantity(point))
                    if value is not None:
                        figures.setdefault((source, key), {}).setdefault(figure, []).append(value)
                repeats[(source, key)] = max(len(point.repeats), 1)
        read.append((f"--calibration {path}", files))
    calibration_runs.check_distinct(read)
    floors = {
        where: {f: floor for f, found in by_figure.items() if (floor := noise.noise_floor(found, repeats[where]))}
        for where, by_figure in figures.items()
    }
    return Calibration(tuple(str(p) for p in paths), floors, tuple(read))


def check_calibration(calibration: Calibration, baseline: Path, current: Path | None, match: dict[str, str]) -> None:
    """Refuse a calibration run that is the baseline or the current run (`current`: None where it is not
    measured yet), or a run of another sweep than the baseline's: one line naming its argument, exit 2."""
    if not calibration.read:
        return

    def files(path: Path) -> calibration_runs.RunFiles:
        return {source: read_results(file) for source, file in locate_results(path).items()}

    compared = (f"the current run ({current})", files(current)) if current is not None else None
    calibration_runs.check_against(calibration.read, (f"the baseline ({baseline})", files(baseline)), compared, match)

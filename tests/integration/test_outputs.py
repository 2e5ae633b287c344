"""``suite samples``, ``suite plot`` and ``suite report`` with ``--out``: never into a run folder, never
over a file they did not write unless ``--force`` (``suite.outputs``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from suite.cli import main
from suite.outputs import OUTPUTS_FILE
from tests.unit.test_plots import results as results  # the fixture: two seeds of four samplers with records


def a_run_folder(results: Path) -> Path:
    (folder,) = list(results.glob("runs/*/infonoise/seed0"))
    assert (folder / "run.json").is_file()
    return folder


def tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("command", ["plot", "report", "samples"])
@pytest.mark.parametrize("inside", [".", "figures", "deeper/still"])
def test_out_inside_a_run_folder_is_refused_in_one_line_before_anything_is_written(
    results,
    capsys,
    command,
    inside,  # noqa: F811
):
    run = a_run_folder(results)
    before = tree(results)
    out = run / inside
    argv = {
        "plot": ["plot", "--results", str(results), "--out", str(out)],
        "report": ["report", "--results", str(results), "--out", str(out)],
        "samples": ["samples", str(run), "--out", str(out)],
    }[command]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == (
        f"error: --out {out} is inside the run folder {run.resolve()}, which only its training writes; "
        "give a folder outside every run folder\n"
    )
    assert tree(results) == before


@pytest.mark.slow
def test_out_overwrites_only_what_it_wrote_and_a_strangers_file_only_with_force(results, tmp_path, capsys):
    out = tmp_path / "shared"
    assert main(["plot", "--results", str(results), "--out", str(out)]) == 0
    written = [Path(line.removeprefix("wrote ")) for line in capsys.readouterr().out.splitlines()]
    stranger = out / "notes.md"
    stranger.write_text("mine")
    (out / "REPORT.md").write_text("someone's report")
    assert main(["report", "--results", str(results), "--out", str(out)]) == 2
    err = capsys.readouterr().err  # the figures' own warnings (a missing post hoc profile) may come first
    assert err.endswith(
        f"error: {out / 'REPORT.md'} exists and was not written by suite samples, plot, report or profile; "
        "refusing to overwrite it (--force overwrites it)\n"
    )
    assert err.count("error: ") == 1
    assert (out / "REPORT.md").read_text() == "someone's report"
    assert main(["report", "--results", str(results), "--out", str(out), "--force"]) == 0
    assert (out / "REPORT.md").read_text().startswith("#") and stranger.read_text() == "mine"
    assert main(["report", "--results", str(results), "--out", str(out)]) == 0  # now its own, as the figures
    assert (out / OUTPUTS_FILE).is_file() and all(p.is_file() for p in written)

"""``suite table``'s first screen: the user's own runs first, compact blocks within 120 columns, each shared
remark and caption once as a numbered note, committed evidence only when asked, and one error line for a
filter or target that names nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from suite.cli import main
from suite.report.results import EVIDENCE_MARKER
from suite.report.summary import short_verdict, split_remarks
from tests.unit.test_table import write_run

SAMPLERS = ("logu", "cos", "fm", "edm", "kg", "kg-uncorrected", "infonoise", "laplace", "cauchy")


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """The user's nine one-seed demo runs (128 samples: not the published protocol) under ``runs/``, and a
    committed evidence set with three seeds of edm and infonoise on stand-in data under ``cpu-smoke/``."""
    root = tmp_path / "results"
    for i, sampler in enumerate(SAMPLERS):
        write_run(root, "bfashion", sampler, 0, [(0.8, 400.0), (1.6, 300.0 - i)], budget="demo", samples=128)
    for seed in range(3):
        for sampler, final in (("edm", 90.0 + seed), ("infonoise", 80.0 + 2 * seed)):
            write_run(
                root,
                "cifar10",
                sampler,
                seed,
                [(6.4, 200.0), (12.8, final)],
                origin="cpu-smoke",
                stand_in=True,
                data="5000 random 32×32 crops of 10 photographs, written as CIFAR-10 python batches",
            )
    (root / "cpu-smoke" / EVIDENCE_MARKER).write_text("committed evidence\n")
    return root


def notes_of(out: str) -> list[str]:
    return [line for line in out.splitlines() if re.match(r"\[\d+\] ", line)]


def test_the_default_shows_the_users_runs_within_120_columns_and_each_note_once(results: Path, capsys):
    assert main(["table", "--results", str(results)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 120
    assert lines[0].startswith("bfashion · demo · fid ↓")  # no declared target: every baseline, a vs column
    assert re.search(r"^ sampler +seeds +final \(95% CI\) +vs ", out, re.M)
    assert all(re.search(rf"^ {re.escape(s)} +1 ", out, re.M) for s in SAMPLERS)  # nine rows, one seed each
    assert "cifar10" not in out.split("Left out")[0]
    assert f"Left out: committed evidence {results / 'cpu-smoke'}" in out
    notes = notes_of(out)
    texts = [note.split("] ", 1)[1] for note in notes]
    assert len(texts) == len(set(texts)) and [n.split("]")[0] for n in notes] == [
        f"[{k}" for k in range(1, len(notes) + 1)
    ]
    assert out.count("1 seed: no interval") == 1 and out.count("published protocol") == 1
    assert out.count("as transcribed in results/paper/") == 1  # the caption, once
    assert "**" not in out  # no winner is marked


def test_all_and_named_folders_bring_in_the_committed_evidence(results: Path, capsys):
    assert main(["table", "--results", str(results), "--all"]) == 0
    out = capsys.readouterr().out
    assert "cifar10 (stand-in data [" in out and "Left out" not in out
    assert max(len(line) for line in out.splitlines()) <= 120
    assert out.count("5000 random 32×32 crops") == 1  # the stand-in description, once, in a note
    assert re.search(r"^ infonoise +3 +81\.98 \[", out, re.M)  # three seeds: geometric mean, its interval
    assert main(["table", str(results / "cpu-smoke")]) == 0
    named = capsys.readouterr().out
    assert "cifar10 (stand-in data [" in named and "bfashion" not in named


def test_task_sampler_and_budget_filters(results: Path, capsys):
    assert (
        main(["table", "--results", str(results), "--all", "--task", "cifar10", "--sampler", "infonoise"])
        == 0
    )
    out = capsys.readouterr().out
    rows = [line.split()[0] for line in out.splitlines() if re.match(r"^ [a-z]", line)]
    assert rows == ["sampler", "infonoise"] and "target edm" in out  # the target still set by edm
    assert main(["table", "--results", str(results), "--budget", "demo", "--format", "md"]) == 0
    assert "bfashion" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, fix",
    [
        (["--budget", "dmeo"], "unknown budget 'dmeo'; did you mean demo?"),
        (["--target-samplers", "edmm"], "unknown target sampler 'edmm'; did you mean edm?"),
        (["--task", "bfahsion"], "unknown task 'bfahsion'; did you mean bfashion?"),
        (["--sampler", "infonose"], "unknown sampler 'infonose'; did you mean infonoise?"),
    ],
)
def test_a_filter_or_target_that_names_nothing_is_one_error_line(results: Path, capsys, argv, fix):
    assert main(["table", "--results", str(results), *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and captured.err.startswith(f"error: {fix}")


def test_a_results_path_that_is_a_file_is_one_error_line(tmp_path: Path, capsys):
    (tmp_path / "notes.txt").write_text("x")
    assert main(["table", "--results", str(tmp_path / "notes.txt")]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith(f"error: --results {tmp_path / 'notes.txt'} is a file; give a results folder")
        and err.count("\n") == 1
    )


def test_remarks_become_notes_and_verdicts_keep_their_judgement():
    assert split_remarks("71.17 (1 seed: no interval)") == ("71.17", ["1 seed: no interval"])
    assert split_remarks("1.2 (published 0.9 (50k samples); ours 128)") == (
        "1.2",
        ["published 0.9 (50k samples); ours 128"],
    )
    verdict = (
        "infonoise better than edm by 3.00 FID, 95% CI [1.76, 4.24], 3 seed pairs; reaches edm's final FID "
        "2.00× sooner, 95% CI [1.15, 3.48]"
    )
    assert short_verdict(verdict, "infonoise") == "better; 2.00× sooner"
    assert short_verdict("target: the best final FID among the target samplers", "edm") == "target"
    odd = "cos said something new (with a remark), 95% CI [1, 2]"
    assert short_verdict(odd, "cos") == "said something new"


def test_a_damaged_run_json_is_the_same_run_to_status_and_table(tmp_path: Path, capsys):
    """The damaged run is "run.json damaged" in ``suite status`` and absent from ``suite table``, so it never
    sets the target."""
    root = tmp_path / "results"
    edm = write_run(root, "bfashion", "edm", 0, [(1.6, 10.0)], budget="demo")
    write_run(root, "bfashion", "cos", 0, [(1.6, 20.0)], budget="demo")
    (edm / "run.json").write_text("{damaged")
    with pytest.warns(UserWarning, match="is not a JSON object"):
        assert main(["status", "--results", str(root)]) == 1
        status = capsys.readouterr().out
        assert main(["table", "--results", str(root)]) == 1
    (edm_line,) = [line for line in status.splitlines() if " edm " in line]
    assert "run.json damaged" in edm_line and "re-run the launch command" in edm_line
    table = capsys.readouterr().out
    assert "target cos" in table and not re.search(r"^ edm ", table, re.M)

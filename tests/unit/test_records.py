"""Run records against links and any bytes: the JSONL reader, appender and resume rewrite, the clean-up of
temporary files and the checkpoint listing (``suite.records``, ``suite.lease.clean_temporary_files``,
``suite.run.checkpoint``). The CLI-level cases, on real runs, are in ``tests/integration/test_faults.py``."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
import torch

from suite.lease import clean_temporary_files
from suite.records import (
    OWN_FILES,
    LinkedRunFile,
    RunDirectory,
    append_jsonl,
    read_jsonl,
    scan_jsonl,
    truncate_jsonl,
)
from suite.run.checkpoint import checkpoint_path, list_checkpoints, save_checkpoint

ROWS = [{"nimg": 64, "loss": 1.5}, {"nimg": 128, "loss": 1.25}, {"nimg": 192, "loss": 1.0}]
GARBAGE = {
    "invalid UTF-8": b'{"nimg": 99, "loss": "\xff\xfe"}',
    "a 5000-digit number": b'{"nimg": ' + b"7" * 5000 + b"}",
    "a JSON array": b'[{"nimg": 99}]',
    "nesting past the recursion limit": b"[" * 200_000,
    "not JSON": b'{"nimg": 99, "loss": 1.',
}


def lines_of(rows: list[dict]) -> bytes:
    return b"".join(json.dumps(row, sort_keys=True).encode() + b"\n" for row in rows)


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (links not followed) and its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("kind", sorted(GARBAGE))
def test_any_bytes_as_the_last_line_are_dropped_without_a_warning(tmp_path, capsys, kind):
    path = tmp_path / "stats.jsonl"
    for ending in (b"", b"\n"):  # torn mid-line by a kill, or garbage ending in a newline
        path.write_bytes(lines_of(ROWS) + GARBAGE[kind] + ending)
        content = scan_jsonl(path)
        assert content.rows == ROWS and content.torn and content.unreadable == []
    assert capsys.readouterr().err == ""


def test_every_other_unreadable_line_is_warned_naming_file_and_line_once_per_read(tmp_path, capsys):
    path = tmp_path / "records.jsonl"
    kinds = sorted(GARBAGE)
    path.write_bytes(b"\n".join([lines_of(ROWS[:1]).strip(), *(GARBAGE[k] for k in kinds)]) + b"\n")
    path.write_bytes(path.read_bytes() + lines_of(ROWS[1:]))
    for _ in range(2):
        assert read_jsonl(path) == ROWS
        err = capsys.readouterr().err.splitlines()
        assert len(err) == len(kinds)
        for line, number in zip(err, range(2, 2 + len(kinds)), strict=True):
            assert line.startswith(f"warning: {path} line {number} is not a record (")
    assert scan_jsonl(path).unreadable == list(range(2, 2 + len(kinds)))


def test_a_resume_drops_the_torn_line_and_later_rows_and_keeps_unreadable_lines_verbatim(tmp_path):
    path = tmp_path / "stats.jsonl"
    middle = GARBAGE["invalid UTF-8"]
    path.write_bytes(lines_of(ROWS[:1]) + middle + b"\n" + lines_of(ROWS[1:]) + GARBAGE["a JSON array"])
    truncate_jsonl(path, 128)
    assert path.read_bytes() == lines_of(ROWS[:1]) + middle + b"\n" + lines_of(ROWS[1:2])


def test_an_append_drops_a_torn_last_line_and_ends_an_unterminated_record(tmp_path):
    path = tmp_path / "stats.jsonl"
    path.write_bytes(lines_of(ROWS[:1]) + GARBAGE["a 5000-digit number"])
    append_jsonl(path, ROWS[1:2])
    assert path.read_bytes() == lines_of(ROWS[:2])
    path.write_bytes(lines_of(ROWS[:2]).rstrip(b"\n"))  # the kill fell between a row and its newline
    append_jsonl(path, ROWS[2:])
    assert path.read_bytes() == lines_of(ROWS)


def test_a_symlinked_jsonl_file_is_never_read_or_written_through(tmp_path):
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_bytes(lines_of(ROWS))
    run = tmp_path / "run"
    run.mkdir()
    link = run / "records.jsonl"
    link.symlink_to(outside)
    for act in (
        lambda: append_jsonl(link, [{"nimg": 256}]),
        lambda: truncate_jsonl(link, 64),
        lambda: scan_jsonl(link),
        RunDirectory(run).refuse_links,
    ):
        with pytest.raises(LinkedRunFile, match=f"^{link} is a symbolic link \\(to {outside}\\)"):
            act()
    assert outside.read_bytes() == lines_of(ROWS) and link.is_symlink()


def test_a_run_json_past_the_int_string_limit_counts_as_unrecorded(tmp_path):
    (tmp_path / "run.json").write_bytes(b'{"status": "done", "kimg": ' + b"9" * 5000 + b"}")
    with pytest.warns(UserWarning, match="is not a JSON object"):
        assert RunDirectory(tmp_path).status() == "pending"


def test_clean_up_removes_exactly_the_suites_temporary_names_and_nothing_through_a_link(tmp_path):
    run, outside = tmp_path / "run", tmp_path / "elsewhere"
    (run / "checkpoints").mkdir(parents=True)
    outside.mkdir()
    (run / "snapshots").symlink_to(outside, target_is_directory=True)
    debris = [Path(tempfile.mkstemp(dir=run, prefix=f".{name}.", suffix=".tmp")[1]) for name in OWN_FILES] + [
        Path(tempfile.mkstemp(dir=run / "checkpoints", prefix=".ckpt-000000000064.pt.", suffix=".tmp")[1])
    ]
    for name in (
        ".snapshot-000000000064.pt.abcdefgh.tmp",  # a snapshot temporary name, but reached through a link
        ".ckpt-000000000064.pt.abcdefgh.tmp",
        "ckpt-000000000001.pt",
    ):
        (outside / name).write_bytes(b"not the run's")
    kept = [
        run / ".notes.txt.abcdefgh.tmp",  # not a file the suite writes
        run / ".run.json.tmp",  # not mkstemp's name
        run / ".slurm.json.abcdefgh.tmp",  # written by the submitting process
        run / "checkpoints" / ".ckpt-64.pt.abcdefgh.tmp",
    ]
    for path in kept:
        path.write_bytes(b"x")
    linked = run / ".stats.jsonl.abcdefgh.tmp"
    linked.symlink_to(outside / "ckpt-000000000001.pt")
    before = snapshot(outside)
    assert sorted(clean_temporary_files(run)) == sorted(debris)
    assert all(path.exists() for path in kept) and linked.is_symlink()
    assert snapshot(outside) == before


def test_a_linked_checkpoints_folder_is_refused_before_anything_is_written_or_pruned(tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    state = {"weights": torch.arange(4.0)}
    for nimg in (64, 128, 192):  # three checkpoints: saving a fourth would prune two of them
        torch.save(state | {"nimg": nimg}, checkpoint_path(outside, nimg))
    before = snapshot(outside)
    linked = tmp_path / "run" / "checkpoints"
    linked.parent.mkdir()
    linked.symlink_to(outside, target_is_directory=True)
    for act in (lambda: save_checkpoint(linked, 256, state), lambda: list_checkpoints(linked)):
        with pytest.raises(LinkedRunFile, match=f"^{linked} is a symbolic link"):
            act()
    assert snapshot(outside) == before


def test_links_inside_the_checkpoints_folder_are_not_checkpoints_and_never_pruned(tmp_path):
    outside = tmp_path / "elsewhere.pt"
    torch.save({"nimg": 1}, outside)
    folder = tmp_path / "checkpoints"
    folder.mkdir()
    checkpoint_path(folder, 1).symlink_to(outside)
    state = {"weights": torch.arange(4.0)}
    for nimg in (64, 128, 192):
        save_checkpoint(folder, nimg, state)
    assert [p.name for p in list_checkpoints(folder)] == [checkpoint_path(folder, n).name for n in (128, 192)]
    assert checkpoint_path(folder, 1).is_symlink() and torch.load(outside)["nimg"] == 1
    assert os.path.samefile(checkpoint_path(folder, 1), outside)


def test_the_results_reader_reports_a_linked_record_file_and_flags_the_done_run(tmp_path, capsys):
    from suite.report.results import find_runs

    run_dir = tmp_path / "runs" / "bfashion-smoke-0123abcd" / "edm" / "seed0"
    RunDirectory(run_dir).update(status="done")
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_bytes(lines_of(ROWS))
    for name in ("records.jsonl", "sampler.jsonl"):
        (run_dir / name).symlink_to(outside)
    (run,) = find_runs(tmp_path)
    assert run.rows() == [] and run.sampler_log() == []
    assert run.records_incomplete == "records.jsonl is a link, not read; no evaluation rows"
    err = capsys.readouterr().err
    for name in ("records.jsonl", "sampler.jsonl"):
        assert f"warning: {run_dir / name} is a symbolic link (to {outside})" in err

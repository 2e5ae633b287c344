"""``suite data dna`` as a command: a zero-byte genome is refused with a non-zero exit naming the
chromosomes it lacks and the command to prepare the data again, and nothing is written. ``suite run`` with
best-validation selection killed before a check resumes by re-running to the uninterrupted run's best."""

import json
import math
import shutil
import signal
import subprocess
import sys

import torch

from infonoise_modalities.dna import data as dna
from suite.records import RunDirectory
from suite.run.checkpoint import FAULT_ENV
from suite.run.selection import BEST_FILE
from tests.helpers.subprocesses import cli_command, cli_env
from tests.unit import test_dna

example = test_dna.example  # the unit tier's fixture: raw DDSM-format files for 15 TSSs, prepared


def test_a_zero_byte_genome_is_refused_with_exit_non_zero_naming_the_chromosomes_and_the_command(
    example, tmp_path
):
    folder = shutil.copytree(example[0], tmp_path / "raw")
    (folder / dna.GENOME).write_bytes(b"")
    result = subprocess.run(
        cli_command("data", "dna", str(folder), str(tmp_path / "out")),
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode != 0, result.stdout
    assert "(0 bytes) has no record of 5 chromosome(s)" in result.stderr
    assert "chr1, chr10, chr2, chr8, chr9" in result.stderr
    assert f"suite data dna data.tar.gz {tmp_path / 'out'}" in result.stderr
    assert not (tmp_path / "out" / "promoters.json").exists()


TRAIN = (
    "import json, sys; from suite.config import compose_run; from suite.run.training import train; "
    "train(compose_run('dna', 'edm', 'smoke', json.loads(sys.argv[1])), sys.argv[2])"
)


def launch_selection(run_dir, overrides, fault=None):
    """The unit tier's selection run (4 epochs of batch 4, a check after each) in a process of its own, as
    ``suite run`` trains it (``suite.run.training.train``, under the run's lease)."""
    command = [sys.executable, "-c", TRAIN, json.dumps(overrides), str(run_dir)]
    env = cli_env(**({FAULT_ENV: fault} if fault else {}))
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_a_run_killed_before_a_validation_check_resumes_by_rerunning_to_the_best_of_an_uninterrupted_one(
    example, tmp_path
):
    """SIGKILL right after the step that completes the third epoch (before that point's checkpoint and check);
    re-running it resumes from the checkpoint of the second check, whose best travelled in it, and
    the run ends with the checks, the best weights (checkpoints/best-validation.pt) and the final rows of an
    uninterrupted run."""
    overrides = test_dna.selection_overrides(example[1], tmp_path)
    whole_dir, cut_dir = tmp_path / "whole", tmp_path / "cut"
    whole = launch_selection(whole_dir, overrides)
    assert whole.returncode == 0, whole.stderr[-2000:]
    reference = RunDirectory(whole_dir).info()
    third = math.ceil(3 * reference["train_examples"] / 4) * 4
    killed = launch_selection(cut_dir, overrides, fault=f"step@{third}")
    assert killed.returncode == -signal.SIGKILL
    assert len(RunDirectory(cut_dir).info()["selection"]["checks"]) == 2
    so_far = torch.load(
        cut_dir / "checkpoints" / BEST_FILE, weights_only=True
    )  # whole: the kill is not in a write
    assert so_far["checks"] == [
        [round(c["kimg"] * 1000), c["value"]] for c in reference["selection"]["checks"][:2]
    ]
    resumed = launch_selection(cut_dir, overrides)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    info = RunDirectory(cut_dir).info()
    assert info["selection"]["checks"] == reference["selection"]["checks"]
    assert len(info["selection"]["checks"]) == 4
    assert info["selection"]["best_kimg"] == reference["selection"]["best_kimg"]
    best = [torch.load(d / "checkpoints" / BEST_FILE, weights_only=True) for d in (whole_dir, cut_dir)]
    assert best[0]["nimg"] == best[1]["nimg"] and best[0]["checks"] == best[1]["checks"]
    assert all(torch.equal(best[0]["model"][k], best[1]["model"][k]) for k in best[0]["model"])
    rows = [
        [(r["metric"], r["value"], r["extra"].get("weights")) for r in RunDirectory(d).rows()]
        for d in (whole_dir, cut_dir)
    ]
    assert rows[0] == rows[1]
    assert {weights for _, _, weights in rows[1]} == {"best-validation raw", "final EMA"}

"""The SLURM launcher's pure helpers without a cluster: array chunking at the max array size, profiles,
executor parameters, sacct parsing, the last error line, and stale records corrected by the job state.
The end-to-end cases on a real cluster are in ``tests/cluster/test_slurm.py``."""

from __future__ import annotations

import re

import pytest

from suite.cli import main
from suite.launch.cluster import DEFAULT_MAX_ARRAY_SIZE, Resources, load_profile, max_array_size
from suite.launch.slurm import chunked, executor_parameters
from suite.report.status import effective_status, last_error_line, parse_sacct


def test_chunked_splits_at_the_max_array_size():
    assert chunked(list(range(8)), 4) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert chunked(list(range(9)), 4) == [[0, 1, 2, 3], [4, 5, 6, 7], [8]]
    assert chunked(list(range(8)), DEFAULT_MAX_ARRAY_SIZE) == [list(range(8))]
    with pytest.raises(ValueError):
        chunked([1], 0)


def test_max_array_size_falls_back_without_scontrol(monkeypatch, tmp_path):
    # (A SLURM_CONF naming a missing file would do too, but scontrol retries that for 60 s.)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert max_array_size() == DEFAULT_MAX_ARRAY_SIZE


def test_profiles_resolve_defaults_modality_task_and_flags():
    local = load_profile("local").resources("bfashion", "image")
    assert (local.gpus_per_run, local.cpus_per_task, local.partition) == (0, 1, None)
    gpu = load_profile("example-gpu")
    assert gpu.resources("bfashion", "image") == Resources("gpu", 1, 8, 48, 1440, 32, 300, 20)
    assert gpu.resources("fashion", "image").gpus_per_run == 2
    assert gpu.resources("bmnist", "image").time_min == 240
    flags = gpu.resources("bmnist", "image", {"time_min": 30, "partition": "short", "gpus_per_run": None})
    assert (flags.time_min, flags.partition, flags.gpus_per_run) == (30, "short", 1)


def test_profile_errors_name_the_problem(tmp_path):
    with pytest.raises(ValueError, match="unknown cluster profile 'nope'"):
        load_profile("nope")
    bad = tmp_path / "bad.yaml"
    bad.write_text("defaults:\n  gpus: 1\n")
    with pytest.raises(ValueError, match="unknown key"):
        load_profile(str(bad))
    with pytest.raises(ValueError, match="cpus_per_task"):
        Resources(cpus_per_task=0)


def test_executor_parameters_give_one_task_per_gpu():
    gpu = load_profile("example-gpu")
    params = executor_parameters("fashion", gpu.resources("fashion", "image"), gpu)
    assert (params["tasks_per_node"], params["gpus_per_node"], params["nodes"]) == (2, 2, 1)
    assert params["slurm_additional_parameters"] == {"account": "my-project", "requeue": True}
    assert params["slurm_partition"] == "gpu" and params["slurm_signal_delay_s"] == 300
    local = load_profile("local")
    params = executor_parameters("bfashion", local.resources("bfashion", "image"), local)
    assert params["tasks_per_node"] == 1 and "gpus_per_node" not in params and "slurm_partition" not in params


def test_parse_sacct_expands_pending_array_ranges():
    text = "12_0|COMPLETED\n12_[1-3,5%2]|PENDING\n13|CANCELLED by 0\n14_4|RUNNING\n"
    assert parse_sacct(text) == {
        "12_0": "COMPLETED",
        "12_1": "PENDING",
        "12_2": "PENDING",
        "12_3": "PENDING",
        "12_5": "PENDING",
        "13": "CANCELLED",
        "14_4": "RUNNING",
    }


def test_last_error_line_skips_sruns_own_lines(tmp_path):
    log = tmp_path / "job_log.err"
    log.write_text(
        "Traceback (most recent call last):\n  File 'x'\nValueError: bad\n"
        "srun: error: localhost: task 0: Exited with exit code 1\n\n"
    )
    assert last_error_line(log) == "ValueError: bad"
    assert last_error_line(tmp_path / "missing.err") == ""


def test_stale_records_are_corrected_by_the_job_state():
    assert effective_status("running", "OUT_OF_MEMORY") == "failed"
    assert effective_status("pending", "FAILED") == "failed"
    assert effective_status("pending", "RUNNING") == "running"
    assert effective_status("interrupted", "PENDING") == "interrupted"
    assert effective_status("done", "CANCELLED") == "done"


@pytest.mark.parametrize("partition", ["gpu\n#SBATCH --wrap=touch /tmp/x", "gpu;id", "gpu $(id)", "a b"])
def test_a_partition_that_is_no_slurm_name_is_refused_in_words_before_planning(tmp_path, capsys, partition):
    argv = ["run", "--task", "ring2d", "--launcher", "slurm", "--dry-run", "--partition", partition]
    assert main([*argv, "--results", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"error: --partition {partition!r} is not a SLURM partition name: valid are letters, digits, _ . - "
        "and commas between names (no whitespace, newline or shell character, which would end up in the job "
        "script)\n"
    )
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    "sbatch",
    ['account: "proj\\n#SBATCH --wrap=id"', "qos: 'normal; id'", "constraint: '`id`'", "'mail user': a@b"],
)
def test_every_sbatch_string_of_a_profile_is_checked_as_one_directive(tmp_path, sbatch):
    profile = tmp_path / "cluster.yaml"
    profile.write_text(f"defaults: {{gpus_per_run: 1}}\nsbatch:\n  {sbatch}\n")
    with pytest.raises(ValueError, match=rf"^{profile}: sbatch option"):
        load_profile(str(profile))
    allowed = "sbatch:\n  account: my-project\n  constraint: 'intel&(a100|h100)'\n  exclusive: true\n"
    profile.write_text(allowed)
    assert load_profile(str(profile)).sbatch["constraint"] == "intel&(a100|h100)"
    profile.write_text('defaults: {partition: "gpu\\nx"}\n')
    with pytest.raises(ValueError, match=re.escape("partition 'gpu\\nx' is not a SLURM partition name")):
        load_profile(str(profile)).resources("ring2d", "points")

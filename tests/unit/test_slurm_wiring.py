"""The SLURM wiring without a cluster: the sbatch files of planned job arrays, and SLURM's answers read back.

Golden sbatch files. For each case a ``suite run --launcher slurm`` command line is parsed, its runs planned
(``suite.launch.plan.plan_runs``) and grouped into arrays (``suite.launch.slurm.array_plan``, split at the
MaxArraySize of a recorded ``scontrol show config``), and each array's executor is built as
``suite.launch.slurm.submit`` builds it (``array_executor``). The sbatch text is the one submitit's
``SlurmExecutor`` writes when it submits: with
``map_count`` set as it sets it for an array of more than one task, through ``_make_submission_file_text``.
``tests/unit/golden/<case>.sbatch`` holds the texts of the case's arrays in order, with the results folder
written ``<RESULTS>`` and the interpreter ``<PYTHON>``. A change to what is submitted (resources, requeue and
signal flags, profiles, array limits, the log layout, or submitit's own script) makes the test fail with
the diff; after checking it, ``SUITE_UPDATE_GOLDEN=1 pytest tests/unit/test_slurm_wiring.py`` rewrites the
files.

Recorded answers. ``sbatch``, ``scontrol``, ``sacct`` and ``squeue`` outputs as Slurm 22.05 (the local
cluster's, slurm/local-cluster.sh) prints them for the commands the suite runs, read by the suite's parsers:
MaxArraySize, the job id of a submitted array, a job's state when its run stopped on a signal (requeue
itself, or leave it to SLURM), and the states ``suite status`` turns into a run's status (requeued,
preempted, pending array ranges, every failure state). The real cluster (tests/test_slurm.py) keeps the
end-to-end cases.
"""

from __future__ import annotations

import difflib
import os
import shlex
import shutil
import sys
from pathlib import Path

import pytest
from submitit import SlurmExecutor
from submitit.slurm.slurm import SlurmJob

from suite.cli import build_parser
from suite.commands.run import launch_request
from suite.launch.cluster import (
    DEFAULT_MAX_ARRAY_SIZE,
    DEFAULT_PROFILE,
    load_profile,
    parse_job_state,
    parse_max_array_size,
    read_submission,
)
from suite.launch.plan import plan_runs
from suite.launch.slurm import _record_submission, array_executor, array_plan, log_folder, requeue_refusal
from suite.report.status import ENDED_STATES, effective_status, job_state, parse_sacct, parse_squeue

GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE = os.environ.get("SUITE_UPDATE_GOLDEN") == "1"

# `scontrol show config` (an excerpt, as printed: a header line, then "Key<padding> = value")
SHOW_CONFIG = """Configuration data as of 2026-12-01T17:20:03
AccountingStorageBackupHost = (null)
AccountingStorageEnforce = none
AccountingStorageHost   = localhost
AccountingStoragePort   = 6819
AccountingStorageType   = accounting_storage/slurmdbd
ClusterName             = localcluster
MailProg                = /bin/true
MaxArraySize            = {max_array_size}
MaxDBDMsgs              = 20008
MaxJobCount             = 10000
MaxStepCount            = 40000
MaxTasksPerNode         = 512
PreemptMode             = OFF
PreemptType             = preempt/none
"""

# (case, the `suite run` flags after the task's, the cluster's MaxArraySize)
CASES = {
    "local-bfashion": ("bfashion", [], 1001),
    "local-bfashion-packed-split": (
        "bfashion",
        ["--runs-per-gpu", "2", "--time", "30", "--array-parallelism", "1"],
        2,
    ),
    "example-gpu-fashion": ("fashion", ["--profile", "example-gpu"], 1001),
}


@pytest.fixture(scope="module")
def planned(tmp_path_factory) -> tuple[Path, dict]:
    """The results folder and its planned runs per task: 5 seeds of bfashion, 2 of fashion at paper."""
    results = tmp_path_factory.mktemp("results")
    return results, {
        "bfashion": plan_runs("bfashion", "edm", "smoke", 5, results),
        "fashion": plan_runs("fashion", "edm", "paper", 2, results),
    }


def sbatch_texts(results: Path, runs: list, flags: list[str], limit: int) -> str:
    """The sbatch files submitit would write for the arrays of ``suite run --launcher slurm FLAGS``."""
    task = runs[0].spec.task
    request = launch_request(build_parser().parse_args(["run", f"--task={task}", "--launcher=slurm", *flags]))
    profile = load_profile(request.profile or DEFAULT_PROFILE)
    per_task = request.runs_per_gpu
    plan = array_plan(runs, profile, request.resources, limit, per_task)
    texts = []
    for number, (task, resources, packs) in enumerate(plan, 1):
        slurm = array_executor(results, task, resources, profile, per_task)._executor
        assert isinstance(slurm, SlurmExecutor)
        if len(packs) > 1:  # submitit submits a single task as a plain job
            slurm.parameters["map_count"] = len(packs)
        text = slurm._make_submission_file_text(slurm._submitit_command_str, uid="golden")
        labels = [run.label for pack in packs for run in pack]
        texts.append(
            f"### sbatch file {number} of {len(plan)}: {len(packs)} array task(s), runs {', '.join(labels)}\n"
            + text
        )
    normalised = "\n".join(texts).replace(str(log_folder(results).parent), "<RESULTS>")
    return normalised.replace(shlex.quote(sys.executable), "<PYTHON>")


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_sbatch_file_of_a_planned_array_is_the_golden_one(case, planned):
    if shutil.which("srun") is None:
        pytest.skip("submitit's SlurmExecutor needs srun on PATH (Debian: apt-get install slurm-client)")
    results, runs = planned
    task, flags, max_array = CASES[case]
    limit = parse_max_array_size(SHOW_CONFIG.format(max_array_size=max_array))
    text = sbatch_texts(results, runs[task], flags, limit)
    golden = GOLDEN / f"{case}.sbatch"
    if UPDATE:
        golden.write_text(text)
    expected = golden.read_text()
    diff = "".join(
        difflib.unified_diff(expected.splitlines(True), text.splitlines(True), str(golden), "planned now")
    )
    assert text == expected, (
        f"the sbatch text of {case} changed; if intended, rerun with SUITE_UPDATE_GOLDEN=1:\n{diff}"
    )


def test_the_golden_files_ask_for_requeue_and_the_signal_before_the_time_limit():
    """What the golden files hold, read from them: every script requeues, and warns its run before the
    time limit by its profile's delay, with the resources of its profile and flags."""
    scripts = {path.stem: path.read_text() for path in GOLDEN.glob("*.sbatch")}
    assert set(scripts) == set(CASES)
    for text in scripts.values():
        assert text.count("#!/bin/bash") == text.count("#SBATCH --requeue\n") >= 1
    local, packed = scripts["local-bfashion"], scripts["local-bfashion-packed-split"]
    gpu = scripts["example-gpu-fashion"]
    assert "#SBATCH --array=0-4%5\n" in local and "#SBATCH --signal=USR2@90\n" in local
    # 5 runs, 2 to an array task, at most 2 tasks to an array: an array of 2 tasks, then a plain job of 1
    assert packed.count("#SBATCH --array=") == 1 and "#SBATCH --array=0-1%1\n" in packed
    assert packed.count("#SBATCH --cpus-per-task=2\n") == packed.count("#SBATCH --mem=4GB\n") == 2
    assert packed.count("#SBATCH --time=30\n") == 2
    for line in ("--gpus-per-node=2", "--ntasks-per-node=2", "--partition=gpu", "--account=my-project"):
        assert f"#SBATCH {line}\n" in gpu
    assert "#SBATCH --signal=USR2@300\n" in gpu and "#SBATCH --time=1440\n" in gpu


def test_max_array_size_is_read_from_scontrol_show_config():
    assert parse_max_array_size(SHOW_CONFIG.format(max_array_size=4)) == 4
    assert parse_max_array_size(SHOW_CONFIG.format(max_array_size=0)) == DEFAULT_MAX_ARRAY_SIZE
    assert parse_max_array_size("") == DEFAULT_MAX_ARRAY_SIZE
    without = "".join(line for line in SHOW_CONFIG.splitlines(True) if not line.startswith("MaxArraySize"))
    assert parse_max_array_size(without) == DEFAULT_MAX_ARRAY_SIZE


def test_an_array_task_records_the_job_id_sbatch_answered_and_its_log_files(planned):
    results, runs = planned
    answer = "Submitted batch job 4242\n"  # what sbatch prints; submitit reads the id from it
    array_id = SlurmExecutor._get_job_id_from_submission_command(answer)
    run = runs["bfashion"][3]
    profile = load_profile("local")
    resources = profile.resources("bfashion", "image")
    job = SlurmJob(folder=log_folder(results) / "%j", job_id=f"{array_id}_3")
    _record_submission(run, job, profile, resources)
    record = read_submission(run.run_dir)
    assert (record["job_id"], record["array_job_id"], record["array_index"]) == ("4242_3", "4242", 3)
    assert record["stdout"] == str(log_folder(results) / "4242_3" / "4242_3_0_log.out")
    assert record["stderr"] == str(log_folder(results) / "4242_3" / "4242_3_0_log.err")
    assert record["resources"]["max_requeues"] == 10 and record["profile"] == "local"


def show_job(state: str, reason: str = "None", restarts: int = 0) -> str:
    """``scontrol show job -o 57_2``: one line of Key=Value fields (an excerpt of them, in their order)."""
    return (
        f"JobId=59 ArrayJobId=57 ArrayTaskId=2 JobName=suite-bfashion UserId=root(0) GroupId=root(0) "
        f"MCS_label=N/A Priority=4294901758 Nice=0 Account=(null) QOS=(null) JobState={state} "
        f"Reason={reason} Dependency=(null) Requeue=1 Restarts={restarts} BatchFlag=1 Reboot=0 ExitCode=0:0 "
        "RunTime=00:00:41 TimeLimit=01:00:00 TimeMin=N/A SubmitTime=2026-12-01T17:02:11 Partition=debug "
        "NodeList=localhost BatchHost=localhost NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 "
        "TRES=cpu=1,mem=2G,node=1,billing=1 Command=/tmp/r/slurm/%j/submission_file.sh "
        "StdErr=/tmp/r/slurm/57_2/57_2_0_log.err StdIn=/dev/null StdOut=/tmp/r/slurm/57_2/57_2_0_log.out\n"
    )


def test_a_stopped_job_requeues_itself_only_while_slurm_still_runs_it():
    # SIGUSR2 before the time limit (or scancel --signal=USR2): the job still runs; it requeues itself
    assert parse_job_state(show_job("RUNNING")) == "RUNNING"
    assert requeue_refusal("57_2", parse_job_state(show_job("RUNNING")), 0, 10) is None
    assert requeue_refusal("57_2", "RUNNING", 9, 10) is None
    assert "restarted 10 times (max_requeues=10)" in requeue_refusal("57_2", "RUNNING", 10, 10)
    # scontrol requeue, preemption, scancel, the time limit's SIGTERM: SLURM is ending it and decides
    for state, reason in [("COMPLETING", "None"), ("REQUEUED", "None"), ("PREEMPTED", "None"),
                          ("CANCELLED", "None"), ("TIMEOUT", "TimeLimit")]:  # fmt: skip
        read = parse_job_state(show_job(state, reason))
        assert read == state
        assert (
            requeue_refusal("57_2", read, 0, 10)
            == f"job 57_2 is {state}: SLURM decides whether it runs again"
        )
    # the job is gone from the controller: scontrol prints nothing on stdout
    assert parse_job_state("") is None
    assert "in an unknown state" in requeue_refusal("57_2", None, 0, 10)


# `sacct -j 40,41 -X -n -P --format=JobID,State` while array 40 has ended in every way a job can end: a
# requeued (preempted) task, running and pending ones (a pending range collapsed with its limit)
SACCT = """40_0|COMPLETED
40_1|FAILED
40_2|CANCELLED by 0
40_3|TIMEOUT
40_4|OUT_OF_MEMORY
40_5|NODE_FAIL
40_6|PREEMPTED
40_7|RUNNING
40_11|BOOT_FAIL
40_12|DEADLINE
40_[8-9,13%2]|PENDING
41|REQUEUED
"""
# `squeue --me -h -r -o %i|%T` at the same time: the preempted task is queued again, one array task per line
SQUEUE = """40_7|RUNNING
40_6|PENDING
40_8|PENDING
40_9|PENDING
40_13|PENDING
41|PENDING
"""


def test_sacct_and_squeue_answers_give_each_run_its_status():
    accounted, queue = parse_sacct(SACCT), parse_squeue(SQUEUE)
    assert accounted["40_2"] == "CANCELLED" and accounted["40_13"] == "PENDING" and "40_10" not in accounted
    assert queue == {"40_7": "RUNNING", "40_6": "PENDING", "40_8": "PENDING", "40_9": "PENDING",
                     "40_13": "PENDING", "41": "PENDING"}  # fmt: skip
    # job → (the run's recorded status, the state `suite status` shows, the status it shows)
    expected = {
        "40_0": ("done", "COMPLETED", "done"),
        "40_1": ("running", "FAILED", "failed"),
        "40_2": ("running", "CANCELLED", "failed"),
        "40_3": ("interrupted", "TIMEOUT", "interrupted"),  # it checkpointed at the time limit's signal
        "40_4": ("running", "OUT_OF_MEMORY", "failed"),
        "40_5": ("running", "NODE_FAIL", "failed"),
        "40_6": ("interrupted", "PENDING", "running"),  # preempted, queued again: it will resume
        "40_7": ("pending", "RUNNING", "running"),  # the record has not caught up yet
        "40_8": ("pending", "PENDING", "pending"),
        "40_10": ("pending", "unknown", "pending"),  # not in the accounting yet
        "40_11": ("pending", "BOOT_FAIL", "failed"),
        "40_12": ("pending", "DEADLINE", "failed"),
        "41": ("running", "PENDING", "running"),  # requeued by scontrol requeue
        "": ("pending", "", "pending"),  # never submitted to SLURM
    }
    for job, (recorded, state, status) in expected.items():
        shown, queued = job_state(job, accounted, queue)
        assert shown == state, job
        assert effective_status(recorded, shown, None, queued) == status, job
    # without accounting (sacct fails): squeue still knows the queued jobs, the others are unknown
    assert job_state("40_6", None, queue) == ("PENDING", True)
    assert job_state("40_1", None, queue) == ("unknown", False)
    assert effective_status("running", "unknown", None, False) == "running"


def test_every_state_of_an_ended_job_is_a_failure_of_a_run_that_did_not_finish():
    recorded_ended = {state for job, state in parse_sacct(SACCT).items() if job not in parse_squeue(SQUEUE)}
    still_held = {"PENDING", "RUNNING", "REQUEUED", "SUSPENDED", "COMPLETING", "RESIZING", "REQUEUE_HOLD"}
    assert recorded_ended <= ENDED_STATES and not ENDED_STATES & still_held
    for state in ENDED_STATES:
        assert effective_status("running", state, None, False) == "failed"
        assert effective_status("done", state, None, False) == "done"
    for state in still_held:
        assert effective_status("running", state, None, False) == "running"

"""SLURM launcher: cluster profiles, a submitit job array per (task, resource class), the job entry point.

``suite run ... --launcher slurm`` calls :func:`submit`, which returns as soon as the arrays are queued:

* resources come from a cluster profile (``slurm/profiles/<name>.yaml``, default ``local``), resolved as
  defaults < the task's modality < the task < the command-line flags;
* runs whose records say done are skipped, and so are runs whose recorded job is still queued or running;
* the other runs are grouped by (task, resources), each group is split at the cluster's ``MaxArraySize``
  (``scontrol show config``) and each part is submitted with ``AutoExecutor.map_array``;
* a run with ``gpus_per_run`` = G gets G tasks on one node, one GPU and one process each, and
  ``suite.run.distributed`` builds the process group from SLURM's variables;
* with ``--runs-per-gpu K`` each array task carries up to K runs of one group (single-GPU or CPU runs
  only), asks for K times the run's CPUs and memory and one run's GPUs, and trains them as K processes on
  that device (:func:`run_pack_job`, through ``suite.launch.packed.run_concurrently``);
* every submitted run gets ``slurm.json`` in its directory (job id, array index, log files, submit time),
  which ``suite status`` reads to ask ``sacct`` about the job.

``suite run --study FILE --dry-run --launcher slurm`` prints the arrays that would be submitted
(:func:`describe_arrays`) and submits nothing.

Requeue and preemption. Each job runs :func:`run_job`, which calls ``suite.launch.local.run_one``. A run
checkpoints by itself on SIGTERM, SIGUSR2 and SIGINT (``suite.stopping``, handled from the job's start) and
resumes from its newest checkpoint when it starts again,
dropping any record written after that checkpoint, so it never writes a record twice; submitit's own
checkpoint mechanism is not used (it ignores SIGTERM, which ``scontrol requeue`` and preemption send). When
the run stops on a signal (in an array task carrying several runs: when any of them did, after all have
ended; the task forwards SIGTERM and SIGUSR2 to its runs), :func:`run_job` asks SLURM about the job:

* the job is no longer RUNNING (``scontrol requeue``, preemption, ``scancel``, the time limit's SIGTERM):
  SLURM is ending it and decides whether it runs again; the job is submitted with ``--requeue``, so a
  requeue or preemption starts it again and it resumes;
* the job is still RUNNING (SIGUSR2 before the time limit, ``--signal=USR2@slurm_signal_delay_s``, or a
  user's ``scancel --signal=USR2``): nothing would bring it back, so the job requeues itself with
  ``scontrol requeue``, at most ``max_requeues`` times.

Either way the process exits with status 130 without writing a submitit result, so a submitit ``Job`` of a
requeued run does not look finished. A requeued job re-executes the same pickled call; a run that is done
by then returns at once. On whatever node it lands, it takes over its own run lease (``suite.lease``: the same
``SLURM_JOB_ID`` with a higher restart count), so a requeue never waits for the old lease to go stale.

Plugins. Jobs start a new interpreter, which only knows the plugins that ``suite`` discovers itself. Set
``SUITE_PLUGINS`` to a comma list of module names to import in the job before the run, as every ``suite``
command does (e.g. the tests' feature extractor: ``SUITE_PLUGINS=tests.helpers.fid_extractor`` with the
checkout on ``PYTHONPATH``); sbatch passes the submitting shell's environment to the job, and a profile's
``setup`` lines may export these variables as well.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from suite.config import to_dict
from suite.exits import EXIT_INTERRUPTED
from suite.launch.cluster import (
    DEFAULT_PROFILE,
    SUBMISSION_FILE,
    Profile,
    Resources,
    _job_state,
    active_jobs,
    load_profile,
    max_array_size,
    read_submission,
    slurm_command,
)
from suite.launch.local import done_already, run_one
from suite.launch.packed import check_pack_size, run_concurrently
from suite.launch.plan import PlannedRun
from suite.launch.request import LaunchRequest
from suite.records import RunDirectory, host_info, now, write_json
from suite.registry import import_plugins
from suite.stopping import Interrupted, stop_requests
from suite.task import TASKS

if TYPE_CHECKING:
    import submitit


T = TypeVar("T")


def chunked(items: Sequence[T], size: int) -> list[list[T]]:
    """``items`` in consecutive parts of at most ``size`` (array indices 0..size-1 each)."""
    if size < 1:
        raise ValueError(f"chunk size must be positive, got {size}")
    return [list(items[start : start + size]) for start in range(0, len(items), size)]


def executor_parameters(
    task: str, resources: Resources, profile: Profile, runs_per_task: int = 1
) -> dict[str, Any]:
    """``AutoExecutor.update_parameters`` keywords of one job array whose tasks carry ``runs_per_task``
    runs each (their CPUs and memory add up; they share the GPUs)."""
    gpus = resources.gpus_per_run
    params: dict[str, Any] = {
        "name": f"suite-{task}",
        "timeout_min": resources.time_min,
        "nodes": 1,
        "tasks_per_node": max(gpus, 1),
        "cpus_per_task": resources.cpus_per_task * runs_per_task,
        "mem_gb": resources.mem_gb * runs_per_task,
        "slurm_array_parallelism": resources.array_parallelism,
        "slurm_signal_delay_s": resources.slurm_signal_delay_s,
        "slurm_setup": list(profile.setup),
        "slurm_additional_parameters": {**profile.sbatch, "requeue": True},
    }
    if gpus > 0:
        params["gpus_per_node"] = gpus
    if resources.partition:
        params["slurm_partition"] = resources.partition
    return params


def _queued(runs: Sequence[PlannedRun]) -> tuple[list[PlannedRun], int]:
    """The runs to submit, printing those that are done or still queued; also the number skipped."""
    active = active_jobs()
    if active is None:
        print("warning: squeue failed; not checking for runs that are queued already", file=sys.stderr)
    todo = []
    for run in runs:
        status = run.status
        job = read_submission(run.run_dir).get("job_id")
        if status == "done":
            done_already(run)
        elif job and active and job in active:
            print(f"queued or running already as job {job}: {run.label}")
        else:
            if status != "pending":
                print(f"resubmitting ({status}): {run.label}")
            todo.append(run)
    return todo, len(runs) - len(todo)


def _record_submission(run: PlannedRun, job: Any, profile: Profile, resources: Resources) -> None:
    job_id = str(job.job_id)
    array_id, _, index = job_id.partition("_")
    write_json(
        run.run_dir / SUBMISSION_FILE,
        {
            "job_id": job_id,
            "array_job_id": array_id,
            "array_index": int(index) if index else None,
            "submitted": now(),
            "task": run.spec.task,
            "budget": run.spec.budget.name,
            "sampler": run.run_dir.parent.name,
            "seed": run.spec.seed,
            "stdout": str(job.paths.stdout),
            "stderr": str(job.paths.stderr),
            "profile": profile.name,
            "resources": asdict(resources),
        },
    )


def array_plan(
    runs: Sequence[PlannedRun],
    profile: Profile,
    overrides: Mapping[str, Any],
    limit: int,
    runs_per_task: int = 1,
) -> list[tuple[str, Resources, list[list[PlannedRun]]]]:
    """The job arrays to submit: (task, resources, one list of runs per array task), the runs grouped by
    task and resources, ``runs_per_task`` to an array task, at most ``limit`` tasks to an array."""

    check_pack_size(runs_per_task)
    groups: dict[tuple[str, Resources], list[PlannedRun]] = {}
    for run in runs:
        task = run.spec.task
        resources = profile.resources(task, TASKS.get(task).modality, overrides)
        if runs_per_task > 1 and resources.gpus_per_run > 1:
            raise ValueError(
                f"--runs-per-gpu {runs_per_task} shares one GPU among runs, but runs of {task} ask for "
                f"{resources.gpus_per_run} GPUs each (profile {profile.name} or --gpus-per-run); use "
                "--runs-per-gpu 1 or --gpus-per-run 1"
            )
        groups.setdefault((task, resources), []).append(run)
    return [
        (task, resources, part)
        for (task, resources), members in groups.items()
        for part in chunked(chunked(members, runs_per_task), limit)
    ]


def describe_arrays(runs: Sequence[PlannedRun], request: LaunchRequest) -> str:
    """The job arrays ``submit`` would queue for the runs that are not done (``--dry-run``); whether a run
    is queued already is looked up only when submitting."""
    profile = load_profile(request.profile or DEFAULT_PROFILE)
    todo = [run for run in runs if run.status != "done"]
    limit = max_array_size()
    per_task = request.runs_per_gpu
    arrays = array_plan(todo, profile, request.resources, limit, per_task)
    lines = [
        f"SLURM job arrays (profile {profile.name}, MaxArraySize {limit}): {len(arrays)} array(s) of "
        f"{len(todo)} run(s); {len(runs) - len(todo)} run(s) done already"
    ]
    for task, resources, packs in arrays:
        first, last = packs[0][0], packs[-1][-1]
        count = sum(len(pack) for pack in packs)
        carried = f", {per_task} per array task" if per_task > 1 else ""
        lines.append(
            f"  {count} run(s) of {task}{carried} ({resources.describe()}): {first.label} … {last.label}"
        )
    return "\n".join(lines)


def log_folder(results: str | Path) -> Path:
    """Where the jobs of a results folder keep their pickles and logs (a folder per array under it)."""
    return Path(results).resolve() / "slurm"


def array_executor(
    results: str | Path, task: str, resources: Resources, profile: Profile, runs_per_task: int = 1
) -> submitit.AutoExecutor:
    """The submitit executor that submits one job array of :func:`array_plan` (its sbatch options from
    :func:`executor_parameters`, its files under :func:`log_folder`)."""
    import submitit

    executor = submitit.AutoExecutor(folder=log_folder(results) / "%j", cluster="slurm")
    executor.update_parameters(**executor_parameters(task, resources, profile, runs_per_task))
    return executor


def submit(runs: Sequence[PlannedRun], request: LaunchRequest) -> int:
    """Submit the unfinished ``runs`` as job arrays and return at once, printing the job ids."""
    import submitit

    profile = load_profile(request.profile or DEFAULT_PROFILE)
    overrides = request.resources
    per_task = request.runs_per_gpu
    todo, skipped = _queued(runs)
    if not todo:
        print(f"nothing to submit: all {len(runs)} run(s) are done or queued")
        return 0
    plan = array_plan(todo, profile, overrides, max_array_size(), per_task)
    submitted = 0
    for task, resources, packs in plan:
        executor = array_executor(request.results, task, resources, profile, per_task)
        requeues = [resources.max_requeues] * len(packs)
        try:
            if per_task == 1:
                jobs = executor.map_array(
                    run_job,
                    [to_dict(run.cfg) for (run,) in packs],
                    [str(run.run_dir.resolve()) for (run,) in packs],
                    requeues,
                )
            else:
                jobs = executor.map_array(
                    run_pack_job,
                    [[to_dict(run.cfg) for run in pack] for pack in packs],
                    [[str(run.run_dir.resolve()) for run in pack] for pack in packs],
                    requeues,
                )
        except (submitit.core.utils.FailedJobError, subprocess.SubprocessError, OSError) as err:
            count = sum(len(pack) for pack in packs)
            print(f"error: submitting {count} run(s) of {task} failed: {err}", file=sys.stderr)
            return 1
        members = [(run, job) for pack, job in zip(packs, jobs, strict=True) for run in pack]
        for run, job in members:
            _record_submission(run, job, profile, resources)
        array_id = str(jobs[0].job_id).partition("_")[0]
        carried = f", {per_task} per array task" if per_task > 1 else ""
        print(
            f"submitted job {array_id}: {len(members)} run(s) of {task}{carried} ({resources.describe()}; "
            f"profile {profile.name})"
        )
        for run, job in members:
            print(f"  {job.job_id:<12} {run.label}")
        submitted += len(members)
    print(
        f"{submitted} run(s) submitted, {skipped} skipped; logs in {log_folder(request.results)}; "
        f"see `suite status --results {request.results}`"
    )
    return 0


def requeue_refusal(job_id: str, state: str | None, restarts: int, max_requeues: int) -> str | None:
    """Why a job stopped on a signal must not requeue itself (None: it must): SLURM ends a job that is no
    longer RUNNING and decides on its own whether it runs again; a job requeues itself at most
    ``max_requeues`` times (``SLURM_RESTART_COUNT``)."""
    if state != "RUNNING":
        return f"job {job_id} is {state or 'in an unknown state'}: SLURM decides whether it runs again"
    if restarts >= max_requeues:
        return f"job {job_id} has been restarted {restarts} times (max_requeues={max_requeues}): not requeued"
    return None


def requeue_after_interrupt(max_requeues: int) -> str:
    """After a run stopped on a signal: requeue the job if SLURM would let it end; returns what happened."""
    job_id = os.environ.get("SLURM_JOB_ID")
    if not job_id:
        return "not in a SLURM job: not requeued"
    restarts = int(os.environ.get("SLURM_RESTART_COUNT", "0"))
    refusal = requeue_refusal(job_id, _job_state(job_id), restarts, max_requeues)
    if refusal:
        return refusal
    result = slurm_command("scontrol", "requeue", job_id)
    if result is None or result.returncode != 0:
        return f"scontrol requeue {job_id} failed: {result.stderr.strip() if result else 'no scontrol'}"
    return f"job {job_id} requeued itself (restart {restarts + 1} of at most {max_requeues})"


def run_job(cfg_dict: dict[str, Any], run_dir: str, max_requeues: int) -> dict[str, Any]:
    """Entry point of one SLURM array task: run (or resume) one run; see the module docstring on requeue."""
    main_rank = int(os.environ.get("SLURM_PROCID", "0")) == 0
    try:
        with stop_requests():  # from the job's start: a stop during imports or data loading is clean too
            import_plugins()
            return run_one(cfg_dict, run_dir)
    except Interrupted as stop:
        message = requeue_after_interrupt(max_requeues) if main_rank else "not the main rank"
        print(f"{stop}; {message}", file=sys.stderr, flush=True)
        raise SystemExit(EXIT_INTERRUPTED) from None
    except Exception as err:
        # train() records failures of the training loop; this records those before it (config, data, plugins).
        run = RunDirectory(run_dir)
        if main_rank and run.status() != "failed":
            run.update(status="failed", error=f"{type(err).__name__}: {err}", failed=now(), **host_info())
        raise


def run_pack_job(
    cfg_dicts: list[dict[str, Any]], run_dirs: list[str], max_requeues: int
) -> list[dict[str, Any]]:
    """Entry point of an array task carrying several runs: train them at once, each in its own process on
    the task's device (``suite.launch.packed.run_concurrently``, which forwards SIGTERM and SIGUSR2 to them),
    and
    return their run.json. After all have ended: when one stopped on a signal, requeue as :func:`run_job`
    does and exit 130; when one failed, record the failure in its run.json if train() could not and raise."""

    outcomes = run_concurrently(list(zip(cfg_dicts, run_dirs, strict=True)), len(run_dirs), run_dirs)
    for (outcome, why), run_dir in zip(outcomes, run_dirs, strict=True):
        print(f"  {outcome:<12} {run_dir}" + (f"  {why}" if why else ""), flush=True)
    if any(outcome in ("interrupted", "not started") for outcome, _ in outcomes):
        print(
            f"a run stopped on a signal; {requeue_after_interrupt(max_requeues)}", file=sys.stderr, flush=True
        )
        raise SystemExit(EXIT_INTERRUPTED)
    failed = [
        (run_dir, why)
        for (outcome, why), run_dir in zip(outcomes, run_dirs, strict=True)
        if outcome == "failed"
    ]
    for run_dir, why in failed:
        run = RunDirectory(run_dir)
        if run.status() != "failed":
            run.update(status="failed", error=why, failed=now(), **host_info())
    if failed:
        raise RuntimeError(
            f"{len(failed)} of {len(run_dirs)} runs failed: " + "; ".join(f"{d}: {w}" for d, w in failed)
        )
    return [RunDirectory(run_dir).info() for run_dir in run_dirs]

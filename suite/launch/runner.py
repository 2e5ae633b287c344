"""Planning and local execution of runs.

``plan_runs`` expands a command line (task, samplers, budget, seeds, sweeps) into run configs and their
directories, ``results/runs/<task>-<budget>-<comparison hash>/<sampler label>/seed<k>/``: every run of
one comparison shares the directory of its comparison hash, and the comparison's config is written
once to ``comparison.json`` there. A run whose record says done is skipped, so re-running a command
resumes what is unfinished and does nothing more; a run that another live process trains (it holds the
run's lease, ``suite.lease``) is skipped with a line naming that process, and the next run starts. A run
whose lease was taken over while it trained stops at its next write, and the next run starts. A stop
request (``suite.stopping``) ends the launch with status 130: a run that trains checkpoints and stops, and
a request that arrives between runs starts no further run.

A local launch ends with a closing summary: the count of each outcome, one line per run (its outcome:
done, done already, failed, busy, lease lost, interrupted, not started; with a done run's final values on
its own grid, or why), and the command to run next; it exits with ``EXIT_DONE`` (0) when every run is
done, ``EXIT_FAILED`` (1) when a run failed, ``EXIT_BUSY`` (3) when none failed but a run was left to
another process (skipped as busy, or its lease lost), and ``EXIT_INTERRUPTED`` (130) when SIGTERM/SIGUSR2
stopped it (the runs after it are not started).

Several runs on one device (``--runs-per-gpu K``, :func:`run_packed`): the runs are trained K at a time
as K child processes on the same device, each started fresh (``spawn``: the launcher's main module is
imported again, so plugins it registers are there, and ``$SUITE_PLUGINS`` is imported as in a SLURM job)
with ``OMP_NUM_THREADS`` = cores // K (the CPUs this process may use, divided evenly). A child trains its
run exactly as a launch of that run alone does (its own lease, records, checkpoints and resume), so K
packed runs write the same records as the K runs launched one by one, value for value (on the CPU, when
both use the same number of threads: a reduction's order follows the thread count). When a child ends,
the next run starts in its place. Each child runs in a process group of its own (it starts with the stop
signals blocked, leaves the launcher's group, discards what reached it meanwhile, then handles stop requests
and says so on its pipe), so the launcher alone gets a terminal's Ctrl-C: a stop request to the launcher
(SIGINT, SIGTERM, SIGUSR2) is forwarded once to every child, as soon as it is ready, which checkpoints and
stops with status 130 (a child still loading stops at once and resumes from its last checkpoint), and no
further run starts; a second SIGINT aborts every child and the launcher at once, without a checkpoint, as
for one run (``suite.stopping``). A child gets SIGTERM when the launcher dies (Linux ``PR_SET_PDEATHSIG``),
since a terminal's hang-up no longer reaches it. A child that dies without an outcome (killed, crashed) is
a failed run, named in the summary with its ``log.txt``, and the other runs go on; the launch ends with the
same lines and exit codes as above (1 when a child failed). Separate processes
rather than one process stepping K stacked networks (``torch.func``): each run stays isolated (a failure,
a lease lost or a stop touches its own run only), writes exactly what it writes alone, and the training
loop is unchanged. Whether stacking would gain more on a GPU is measured by ``suite bench sweep``.

Before anything runs (and for ``--dry-run``), :func:`check_runs` reads every planned run's spec
(``suite.run.spec``) and builds its loss weight, noise sampler, task and network with the functions training
uses (``suite.run.assembly``), without loading data, and reports every invalid value at once.
"""

from __future__ import annotations

import functools
import json
import multiprocessing
import os
import signal
import sys
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from suite.config import (
    comparison_config,
    compose_seeds,
    config_hash,
    expand_sweeps,
    group_options,
    to_dict,
)
from suite.exits import EXIT_BUSY, EXIT_DONE, EXIT_FAILED, EXIT_INTERRUPTED
from suite.lease import LeaseLost, RunBusy
from suite.names import path_name, unknown_name
from suite.noise.sampler import SAMPLERS
from suite.records import RunDirectory, read_json, write_json
from suite.run.assembly import build_loss_weight, build_model, build_noise_sampler, build_task
from suite.run.seeds import parse_seeds
from suite.run.spec import RunSpec, SpecError, guidance_problem, read_spec
from suite.run.training import train
from suite.stopping import STOP_SIGNALS, Interrupted, check, requested, stop_requests
from suite.task import TASKS
from suite.watch import check_watchers

CHILD_STATUS = {  # a packed child's exit status, by its run's outcome
    "done": EXIT_DONE,
    "done already": EXIT_DONE,
    "failed": EXIT_FAILED,
    "busy": EXIT_BUSY,
    "lease lost": EXIT_BUSY,
    "interrupted": EXIT_INTERRUPTED,
}
READY = "ready"  # what a packed child sends once it handles stop requests itself
PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when its parent dies


@dataclass
class PlannedRun:
    """One run: its resolved config and directory."""

    cfg: DictConfig
    run_dir: Path

    @functools.cached_property
    def _read(self) -> tuple[RunSpec, list[str]]:
        return read_spec(self.cfg)

    @property
    def label(self) -> str:
        return self._read[0].label

    @property
    def status(self) -> str:
        return RunDirectory(self.run_dir).status()

    @property
    def spec(self) -> RunSpec:
        """The run's spec; raises SpecError naming its invalid values."""
        spec, problems = self._read
        if problems:
            raise SpecError(problems)
        return spec


def resolve_samplers(spec: str) -> list[str]:
    """``all`` → every sampler with a config; else a comma list of names, each checked."""
    configured = group_options("sampler")
    if spec == "all":
        return configured
    given = [s.strip() for s in spec.split(",") if s.strip()]
    names = list(dict.fromkeys(given))
    for name in names:
        if given.count(name) > 1:
            raise ValueError(
                f"sampler {name} is named {given.count(name)} times in --sampler {spec}; "
                "name each sampler once"
            )
    registered = set(SAMPLERS.names())
    for name in names:
        if name not in configured or name not in registered:
            raise ValueError(unknown_name("sampler", name, configured, ", or all"))
    return names


def resolve_task(name: str) -> str:
    """Check that a task has both a plugin and a config."""
    if name not in TASKS.names() or name not in group_options("task"):
        raise ValueError(unknown_name("task", name, group_options("task")))
    return name


def comparison_dir(results: str | Path, spec: RunSpec) -> Path:
    """Folder shared by every run of the comparison ``spec`` belongs to."""
    return Path(results) / "runs" / f"{spec.task}-{spec.budget.name}-{spec.comparison_hash}"


def run_folder(results: str | Path, spec: RunSpec) -> Path:
    """The run folder of ``spec`` under ``results``; ValueError naming the value when a name that enters it
    (task, budget, sampler label: ``suite.names.path_name``) could lead elsewhere, or it resolves (links
    followed) outside ``results``."""
    path_name("task.name", spec.task)
    path_name("budget.name", spec.budget.name)
    path_name("sampler label", spec.sampler.label)
    folder = comparison_dir(results, spec) / spec.sampler.label / f"seed{spec.seed}"
    top = Path(results).resolve()
    if not folder.resolve().is_relative_to(top):
        raise ValueError(f"the run folder {folder} resolves to {folder.resolve()}, outside {top}; refusing")
    return folder


def plan_runs(
    task: str,
    samplers: str,
    budget: str = "smoke",
    seeds: int | Sequence[int] = 1,
    results: str | Path = "results",
    overrides: list[str] | None = None,
    first_seed: int = 0,
) -> list[PlannedRun]:
    """Every run of a command line; refuses runs that would break their comparison. ``seeds`` is a count
    (seeds ``first_seed`` … ``first_seed + seeds − 1``) or the seeds themselves (``suite.run.seeds``)."""
    resolve_task(task)
    if isinstance(seeds, int):
        parse_seeds(seeds, "--seeds")  # at least 1, at most MAX_SEEDS
    seed_list = range(first_seed, first_seed + seeds) if isinstance(seeds, int) else list(seeds)
    if not seed_list:
        raise ValueError("--seeds names no seed; give a count N, a range A-B or a comma list")
    runs = []
    for sweep in expand_sweeps(list(overrides or [])):
        for sampler in resolve_samplers(samplers):
            for cfg in compose_seeds(task, sampler, budget, sweep, list(seed_list)):
                check(f"while planning {task}")  # a stop request ends a long planning too
                cfg.results = str(results)  # a path, not an override: any character may be in it
                spec = read_spec(cfg)[0]
                runs.append(PlannedRun(cfg, run_folder(results, spec)))
    check_comparisons(runs)
    return runs


def check_comparisons(runs: list[PlannedRun]) -> None:
    """Every run in a comparison folder must share its comparison config, and no two runs one folder."""
    seen: dict[Path, str] = {}
    for run in runs:
        digest = config_hash(run.cfg)
        if seen.setdefault(run.run_dir, digest) != digest:
            raise ValueError(f"two planned runs with different configs map to {run.run_dir}")
        folder = run.run_dir.parent.parent
        marker = folder / "comparison.json"
        expected = comparison_config(run.cfg)
        if marker.is_file() and read_json(marker) != expected:
            raise ValueError(
                f"{folder} holds a comparison whose fixed settings differ from this run's; refusing to mix "
                "them (only the sampler may differ). Use another --results folder."
            )
        existing = RunDirectory(run.run_dir).info()
        if existing.get("config_hash") not in (None, digest):
            raise ValueError(
                f"{run.run_dir} holds a run of another config ({existing['config_hash']}); refusing"
            )


def run_problems(cfg: DictConfig, networks: set[str] | None = None) -> list[str]:
    """Every invalid value of one run's config: the spec's checks, then the parts built as training builds
    them (``suite.run.assembly``), the network on the meta device and once per task config and preset in
    ``networks``; no data are read."""
    spec, problems = read_spec(cfg)
    try:
        check_watchers(spec.watch)
    except ValueError as err:
        problems.append(str(err))
    try:
        build_noise_sampler(spec, build_loss_weight(spec))
    except (ValueError, TypeError, KeyError) as err:
        problems.append(f"sampler {spec.sampler.name}: {err}")
    key = json.dumps([to_dict(spec.task_cfg), spec.budget.size], sort_keys=True, default=str)
    if networks is None or key not in networks:
        try:
            task = build_task(spec)
            unguided = guidance_problem(spec.budget.eval.guidance, 1.0, bool(task.conditional))
            if unguided and unguided not in problems:  # a range problem read_spec found already
                problems.append(f"budget.eval.{unguided}")
            build_model(spec, task, "meta")
        except Exception as err:  # a task or network constructor's own check, whatever it raises
            problems.append(
                f"task {spec.task} (network preset {spec.budget.size!r}): {type(err).__name__}: {err}"
            )
        if networks is not None:
            networks.add(key)
    return problems


def check_runs(runs: list[PlannedRun]) -> None:
    """Raise one ValueError naming every invalid value of the planned runs (and which runs have it)."""
    found: dict[str, list[str]] = {}
    networks: set[str] = set()
    for run in runs:
        check(f"while checking {run.label}")
        for problem in run_problems(run.cfg, networks):
            found.setdefault(problem, []).append(run.label)
    if found:
        lines = [
            f"  {problem}  [{', '.join(labels) if len(labels) <= 3 else f'{len(labels)} runs'}]"
            for problem, labels in found.items()
        ]
        raise ValueError(
            f"{len(found)} invalid value(s) in the planned runs; nothing was run:\n" + "\n".join(lines)
        )


def describe(runs: list[PlannedRun]) -> str:
    """Human-readable plan: one line per run with its status and directory."""
    lines = [f"{len(runs)} run(s):"]
    for run in runs:
        lines.append(f"  [{run.status:>11}] {run.label:<40} {run.run_dir}")
    return "\n".join(lines)


def _flat(cfg: DictConfig) -> dict[str, Any]:
    """``cfg`` as dotted keys → values (lists kept whole)."""
    flat: dict[str, Any] = {}

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, dict) and node:
            for key, value in node.items():
                walk(value, f"{prefix}{key}.")
        else:
            flat[prefix[:-1]] = node

    walk(OmegaConf.to_container(cfg, resolve=True), "")
    return flat


def describe_configs(runs: list[PlannedRun]) -> str:
    """The first run's resolved config in full, then per other run only the keys whose values differ from
    it (``sampler.p_mean=0.0``; a group whose config is another one by its name, ``sampler=edm (its
    config)``), so that a sweep of nine samplers prints one config, not nine."""
    first = _flat(runs[0].cfg)
    lines = [f"# config of {runs[0].label}  ->  {runs[0].run_dir}", OmegaConf.to_yaml(runs[0].cfg).rstrip()]
    if len(runs) > 1:
        lines.append("# the other runs differ from it in:")
    for run in runs[1:]:
        mine = _flat(run.cfg)
        changed = [k for k in sorted(first.keys() | mine.keys()) if first.get(k) != mine.get(k)]
        renamed = {k.rsplit(".", 1)[0] for k in changed if k.endswith(".name")}  # another config of a group
        shown = [f"{g}={mine[g + '.name']} (its config)" for g in sorted(renamed)] + [
            f"{k}={mine.get(k, '(absent)')}"
            for k in changed
            if not any(k.startswith(f"{g}.") for g in renamed)
        ]
        lines.append(f"#   {run.label}: {' '.join(shown) or 'nothing'}")
    return "\n".join(lines)


def launch_run(cfg_dict: dict[str, Any], run_dir: str) -> tuple[str, str]:
    """Execute one run from a plain config dict; returns its outcome (``done``, ``done already``, ``busy``
    or ``lease lost``) and, for the last two, the line that says why. Failures raise."""
    cfg = OmegaConf.create(cfg_dict)
    folder = Path(run_dir)
    marker = folder.parent.parent / "comparison.json"
    if not marker.is_file():
        write_json(marker, comparison_config(cfg))
    if RunDirectory(folder).status() == "done":
        return "done already", ""
    try:
        train(cfg, folder)
    except RunBusy as busy:
        print(f"skipping: {busy}", flush=True)
        return "busy", f"trained by {busy.who}"
    except LeaseLost as lost:
        print(f"stopping: {lost}", flush=True)
        return "lease lost", lost.now
    return "done", ""


def run_one(cfg_dict: dict[str, Any], run_dir: str) -> dict[str, Any]:
    """Execute one run from a plain config dict (the entry point of SLURM execution); returns its
    run.json."""
    launch_run(cfg_dict, run_dir)
    return RunDirectory(run_dir).info()


def attempt(cfg_dict: dict[str, Any], run_dir: str) -> tuple[str, str]:
    """Launch one run in this process: its outcome and why (``interrupted`` when SIGTERM/SIGUSR2 stopped
    it, ``failed`` with the error's first line, printed as one line; train() records it in run.json, and
    the traceback of an error in training in the run's log.txt; ``--debug`` (``SUITE_DEBUG=1``) prints the
    traceback)."""
    try:
        return launch_run(cfg_dict, run_dir)
    except Interrupted as stop:
        print(stop, flush=True)
        return "interrupted", str(stop)
    except Exception as err:  # the launch goes on with the other runs
        why = f"{type(err).__name__}: {(str(err).strip().splitlines() or [''])[0]}"
        if os.environ.get("SUITE_DEBUG") == "1":
            traceback.print_exc()
        else:
            print(f"error: {run_dir}: {why} (--debug prints the traceback)", file=sys.stderr, flush=True)
        return "failed", why


def final_values(run_dir: Path) -> str:
    """A run's values at its last evaluation point on its own grid (``metric value`` each), '' for none."""
    rows = [row for row in RunDirectory(run_dir).rows() if row.get("grid", "karras") == "karras"]
    points = [row["nimg"] for row in rows if isinstance(row.get("nimg"), int)]
    if not points:
        return ""
    last = max(points)
    values = {row["metric"]: row["value"] for row in rows if row.get("nimg") == last}
    return ", ".join(f"{metric} {value:.6g}" for metric, value in values.items()) + f" @ kimg {last / 1000:g}"


def next_step(code: int, results: str) -> str:
    """What to run after a launch that ended with ``code``."""
    return {
        EXIT_DONE: f"next: suite table --results {results}  (figures: suite plot, report: suite report)",
        EXIT_FAILED: "next: fix the error printed above, then re-run the same command: done runs are skipped",
        EXIT_BUSY: f"next: suite status --results {results} names who trains the skipped runs; re-run later",
        EXIT_INTERRUPTED: "next: re-run the same command to resume from the last checkpoints",
    }[code]


def summarize(outcomes: list[tuple[str, PlannedRun, str]]) -> int:
    """Print one line per run (outcome, label, final values or why), the count of each outcome and the next
    command, and return the launch's exit code (module docstring)."""
    counts: dict[str, int] = {}
    for outcome, _, _ in outcomes:
        counts[outcome] = counts.get(outcome, 0) + 1
    print(f"{len(outcomes)} run(s): " + ", ".join(f"{n} {outcome}" for outcome, n in counts.items()))
    for outcome, run, why in outcomes:
        note = why or (final_values(run.run_dir) if outcome in ("done", "done already") else "")
        print(f"  {outcome:<12} {run.label}" + (f"  {note}" if note else ""))
    found = set(counts)
    if found & {"interrupted", "not started"}:  # runs are left unstarted only after a stop request
        code = EXIT_INTERRUPTED
    elif "failed" in found:
        code = EXIT_FAILED
    else:
        code = EXIT_BUSY if found & {"busy", "lease lost"} else EXIT_DONE
    if outcomes:
        print(next_step(code, str(outcomes[0][1].cfg.results)))
    return code


def run_local(runs: list[PlannedRun]) -> int:
    """Run the planned runs one after the other (failures are recorded and the rest still run; an
    interruption stops the launch), print one line per run, and return the exit code (module docstring)."""
    outcomes: list[tuple[str, PlannedRun, str]] = []
    interrupted = False
    for run in runs:
        if interrupted:
            outcomes.append(("not started", run, ""))
            continue
        if run.status == "done":
            print(f"done already: {run.label}")
            outcomes.append(("done already", run, ""))
            continue
        try:
            check(f"before {run.label}")
        except Interrupted as stop:
            print(stop, flush=True)
            interrupted = True
            outcomes.append(("interrupted", run, str(stop)))
            continue
        print(f"== {run.label} -> {run.run_dir}", flush=True)
        cfg_dict = OmegaConf.to_container(run.cfg, resolve=True)
        outcome, why = attempt(cfg_dict, str(run.run_dir))  # type: ignore[arg-type]
        interrupted = outcome == "interrupted"
        outcomes.append((outcome, run, why))
    return summarize(outcomes)


# -- several runs on one device ----------------------------------------------------------------------


def check_pack_size(runs_per_gpu: int) -> None:
    """``--runs-per-gpu`` must be a positive number of runs."""
    if runs_per_gpu < 1:
        raise ValueError(f"--runs-per-gpu must be at least 1 (1: one run at a time), got {runs_per_gpu}")


def usable_cores() -> int:
    """The CPUs this process may run on (its affinity mask, which SLURM and taskset restrict)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@contextmanager
def child_environment(**variables: str) -> Iterator[None]:
    """Set environment variables for the child processes started inside the block (a spawned child
    inherits this process's environment when it starts), and restore them after."""
    before = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _packed_child(cfg_dict: dict[str, Any], run_dir: str, report: Connection) -> None:
    """Entry point of one packed run's process (module docstring): leave the launcher's process group,
    forget the stop signals that reached it before (the launcher forwards those), handle stop requests,
    report ready, import ``$SUITE_PLUGINS``, launch the run as :func:`attempt` does, send its (outcome,
    why) to the launcher and exit with the outcome's status."""
    os.setpgid(0, 0)  # out of the terminal's foreground group: the launcher alone gets its signals
    _die_with_parent()
    for s in STOP_SIGNALS:  # ignoring a blocked, pending signal discards it (POSIX)
        signal.signal(s, signal.SIG_IGN)
    with stop_requests():
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)  # blocked by the launcher at the start
        launcher = multiprocessing.parent_process()
        if launcher is None or os.getppid() != launcher.pid:  # it died before the request was in place
            os.kill(os.getpid(), signal.SIGTERM)
        report.send(READY)
        from suite.registry import import_plugins

        import_plugins()
        outcome = attempt(cfg_dict, run_dir)
    with suppress(BrokenPipeError):  # a launcher killed meanwhile; the outcome is in the run's run.json
        report.send(outcome)
    report.close()
    sys.exit(CHILD_STATUS.get(outcome[0], EXIT_FAILED))


def _die_with_parent() -> None:
    """Ask Linux to send this process SIGTERM when the launcher dies (it checkpoints and stops), since a
    process group of its own keeps it from a terminal's hang-up; a no-op elsewhere."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM))


@dataclass
class _Child:
    """A packed run's process, the end of its report pipe, whether it said ready and what it sent last."""

    process: multiprocessing.process.BaseProcess
    report: Connection
    ready: bool = False
    sent: tuple[str, str] | None = None
    open: bool = True

    def read(self) -> None:
        """Take what the child sent so far (``ready``, then its outcome); stops at the end of the pipe."""
        try:
            while self.open and self.report.poll():
                message = self.report.recv()
                if message == READY:
                    self.ready = True
                else:
                    self.sent = tuple(message)  # type: ignore[assignment]
        except (EOFError, OSError):  # the child is gone: its exit status says the rest
            self.open = False

    def ended(self, run_dir: str, stops: list[int]) -> tuple[str, str]:
        """The (outcome, why) of the finished child: what it sent, else what its exit status says, with the
        run's log for a failure."""
        self.read()
        if self.sent is not None:
            return self.sent
        code = self.process.exitcode
        if code is not None and code < 0 and -code in stops and not self.ready:
            name = signal.Signals(-code).name
            return "interrupted", f"{name} before its training started; re-run to resume"
        how = (
            f"killed by {signal.Signals(-code).name}"
            if code is not None and code < 0
            else f"exited with status {code} without an outcome"
        )
        return "failed", f"its process was {how}; log: {Path(run_dir) / 'log.txt'}"


def run_concurrently(
    launches: list[tuple[dict[str, Any], str]], runs_per_gpu: int, labels: list[str]
) -> list[tuple[str, str]]:
    """Launch each (config dict, run folder) in its own process, ``runs_per_gpu`` at a time (module
    docstring); returns each one's (outcome, why), ``not started`` for those a stop request kept back."""
    check_pack_size(runs_per_gpu)
    spawn = multiprocessing.get_context("spawn")
    threads = str(max(1, usable_cores() // runs_per_gpu))
    results: list[tuple[str, str] | None] = [None] * len(launches)
    running: dict[int, _Child] = {}
    stops: list[int] = [requested()] if requested() is not None else []  # type: ignore[list-item]
    told: set[int] = set()  # the children a stop was forwarded to

    def tell(index: int, child: _Child) -> None:
        """Forward the launch's stop to a ready child once."""
        if stops and child.ready and index not in told and child.process.exitcode is None:
            told.add(index)
            with suppress(ProcessLookupError):
                os.kill(child.process.pid, stops[0])  # type: ignore[arg-type]

    def forward(signum: int, _frame: object) -> None:
        if signum == signal.SIGINT and stops:  # Ctrl-C twice: abort every run and the launcher at once
            os.write(2, b"second stop request (SIGINT): aborting every run now, without a checkpoint\n")
            for child in running.values():
                with suppress(ProcessLookupError):
                    os.kill(child.process.pid, signal.SIGINT if child.ready else signal.SIGKILL)  # type: ignore[arg-type]
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
            return
        if not stops:
            stops.append(signum)
            name = signal.Signals(signum).name
            os.write(2, f"{name}: every run stops at its next safe point; Ctrl-C again aborts\n".encode())
        for index, child in list(running.items()):
            tell(index, child)

    previous = {s: signal.signal(s, forward) for s in STOP_SIGNALS}
    try:
        waiting = list(range(len(launches)))
        while waiting or running:
            while waiting and len(running) < runs_per_gpu and not stops:
                index = waiting.pop(0)
                print(f"== {labels[index]} -> {launches[index][1]}", flush=True)
                reader, writer = spawn.Pipe(duplex=False)
                process = spawn.Process(target=_packed_child, args=(*launches[index], writer))
                signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)  # the child starts with them blocked
                try:
                    with child_environment(OMP_NUM_THREADS=threads):
                        process.start()
                finally:
                    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
                writer.close()
                running[index] = _Child(process, reader)
            if not running:
                break
            listening = [child.report for child in running.values() if child.open and not child.ready]
            wait([child.process.sentinel for child in running.values()] + listening)
            for index, child in list(running.items()):
                child.read()
                tell(index, child)
                if child.process.exitcode is not None:
                    child.process.join()
                    results[index] = child.ended(launches[index][1], stops)
                    child.report.close()
                    del running[index]
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    return [result or ("not started", "") for result in results]


def run_packed(runs: list[PlannedRun], runs_per_gpu: int) -> int:
    """Train the planned runs ``runs_per_gpu`` at a time, each in its own process on the same device
    (module docstring), print one line per run, and return the launch's exit code."""
    check_pack_size(runs_per_gpu)
    todo = []
    for index, run in enumerate(runs):
        if run.status == "done":
            print(f"done already: {run.label}")
        else:
            todo.append(index)
    launches: list[tuple[dict[str, Any], str]] = [
        (OmegaConf.to_container(runs[i].cfg, resolve=True), str(runs[i].run_dir))  # type: ignore[misc]
        for i in todo
    ]
    labels = [runs[i].label for i in todo]
    ended = dict(zip(todo, run_concurrently(launches, runs_per_gpu, labels), strict=True))
    outcomes = []
    for index, run in enumerate(runs):
        outcome, why = ended.get(index, ("done already", ""))
        outcomes.append((outcome, run, why))
    return summarize(outcomes)

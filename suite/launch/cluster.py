"""The SLURM cluster as the suite reads it, without submitting anything: cluster profiles
(``slurm/profiles/<name>.yaml``, resolved as defaults < the task's modality < the task < the command-line
flags; a partition and every ``sbatch`` option checked to be one ``#SBATCH`` directive: no whitespace,
newline or shell character), the cluster's ``MaxArraySize``, the job queue and a job's state, and the
``slurm.json`` that every submitted run keeps (which ``suite status`` reads). ``suite.launch.slurm``
submits and runs the jobs."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from suite.records import read_json

PROFILE_DIR = Path(__file__).resolve().parents[2] / "slurm" / "profiles"


DEFAULT_PROFILE = "local"


DEFAULT_MAX_ARRAY_SIZE = 1001  # Slurm's default MaxArraySize


SUBMISSION_FILE = "slurm.json"


PROFILE_SECTIONS = ("defaults", "modalities", "tasks", "setup", "sbatch")


SLURM_NAME = re.compile(r"[A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*")  # a partition, or a comma list of them
SBATCH_OPTION = re.compile(r"[a-z][a-z0-9_-]*")
SBATCH_VALUE = re.compile(r"[A-Za-z0-9_.,:+=@%/~&|!*()\[\]-]+")  # constraints take & | ! * ( ) [ ]


def slurm_name_problem(what: str, value: Any) -> str | None:
    """Why ``value`` is no partition name sbatch takes (``what`` names where it was given), or None."""
    if value is None or (isinstance(value, str) and SLURM_NAME.fullmatch(value)):
        return None
    return (
        f"{what} {value!r} is not a SLURM partition name: valid are letters, digits, _ . - and commas "
        "between names (no whitespace, newline or shell character, which would end up in the job script)"
    )


def sbatch_option_problem(where: str, key: Any, value: Any) -> str | None:
    """Why the sbatch option ``key: value`` of a profile is not one sbatch takes as one ``#SBATCH``
    directive (a newline would start another directive or a shell line of the job script), or None."""
    if not (isinstance(key, str) and SBATCH_OPTION.fullmatch(key)):
        return f"{where}: sbatch option name {key!r} must be lower-case letters, digits, - and _"
    if isinstance(value, bool) or (isinstance(value, (int, float)) and value == value):
        return None
    if isinstance(value, str) and SBATCH_VALUE.fullmatch(value):
        return None
    return (
        f"{where}: sbatch option {key}={value!r}: valid values are numbers, true/false, or text of letters, "
        "digits and _ . , : + = @ % / ~ - (a constraint also & | ! * ( ) [ ]); no whitespace, newline or "
        "shell character, which would end up in the job script"
    )


@dataclass(frozen=True)
class Resources:
    """What one run asks SLURM for; runs of one task with equal resources share a job array."""

    partition: str | None = None
    gpus_per_run: int = 0
    cpus_per_task: int = 1
    mem_gb: float = 2
    time_min: int = 60
    array_parallelism: int = 256
    slurm_signal_delay_s: int = 90
    max_requeues: int = 10

    def __post_init__(self) -> None:
        if problem := slurm_name_problem("partition", self.partition):
            raise ValueError(problem)
        for name in RESOURCE_KEYS[1:]:
            value = getattr(self, name)
            least = 0 if name == "gpus_per_run" else 1
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < least:
                raise ValueError(f"resource {name} must be a number >= {least}, got {value!r}")

    def describe(self) -> str:
        """Short human-readable summary."""
        where = self.partition or "default partition"
        return (
            f"{where}, {self.gpus_per_run} GPU(s), {self.cpus_per_task} CPU(s)/task, {self.mem_gb:g} GB, "
            f"{self.time_min} min"
        )


RESOURCE_KEYS = tuple(f.name for f in fields(Resources))


@dataclass(frozen=True)
class Profile:
    """A cluster profile: resource defaults per modality and task, setup lines and extra sbatch options."""

    name: str
    defaults: Mapping[str, Any]
    modalities: Mapping[str, Mapping[str, Any]]
    tasks: Mapping[str, Mapping[str, Any]]
    setup: tuple[str, ...] = ()
    sbatch: Mapping[str, Any] = field(default_factory=dict)

    def resources(self, task: str, modality: str, overrides: Mapping[str, Any] | None = None) -> Resources:
        """Resources of a run: defaults < modality < task < ``overrides`` (None values are ignored)."""
        merged: dict[str, Any] = {}
        for layer in (self.defaults, self.modalities.get(modality, {}), self.tasks.get(task, {})):
            merged.update(layer)
        merged.update({k: v for k, v in (overrides or {}).items() if v is not None})
        return Resources(**merged)


def _check_keys(where: str, layer: Any) -> Mapping[str, Any]:
    if not isinstance(layer, Mapping):
        raise ValueError(f"{where} must be a mapping, got {layer!r}")
    unknown = sorted(set(layer) - set(RESOURCE_KEYS))
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {', '.join(unknown)}; valid: {', '.join(RESOURCE_KEYS)}")
    return dict(layer)


def profile_path(name: str) -> Path:
    """The YAML file of a profile: a path to a file, or a name in ``slurm/profiles/``."""
    given = Path(name)
    if given.suffix in (".yaml", ".yml") or given.is_file():
        if not given.is_file():
            raise FileNotFoundError(f"no cluster profile file {given}")
        return given
    path = PROFILE_DIR / f"{name}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in PROFILE_DIR.glob("*.yaml"))) or "none"
        raise ValueError(f"unknown cluster profile {name!r}; profiles in {PROFILE_DIR}: {known}")
    return path


def load_profile(name: str = DEFAULT_PROFILE) -> Profile:
    """Read and check a cluster profile (see ``slurm/profiles/local.yaml`` for the format)."""
    path = profile_path(name)
    raw = yaml.safe_load(path.read_text()) or {}
    if not isinstance(raw, Mapping):
        raise ValueError(f"{path}: a cluster profile is a mapping of {', '.join(PROFILE_SECTIONS)}")
    unknown = sorted(set(raw) - set(PROFILE_SECTIONS))
    if unknown:
        valid = ", ".join(PROFILE_SECTIONS)
        raise ValueError(f"{path}: unknown section(s) {', '.join(unknown)}; valid: {valid}")
    setup = raw.get("setup") or []
    if not isinstance(setup, list) or not all(isinstance(line, str) for line in setup):
        raise ValueError(f"{path}: setup must be a list of shell lines")
    sbatch = raw.get("sbatch") or {}
    if not isinstance(sbatch, Mapping):
        raise ValueError(f"{path}: sbatch must be a mapping of sbatch options")
    for key, value in sbatch.items():
        if problem := sbatch_option_problem(str(path), key, value):
            raise ValueError(problem)
    modalities, tasks = raw.get("modalities") or {}, raw.get("tasks") or {}
    return Profile(
        name=path.stem,
        defaults=_check_keys(f"{path}: defaults", raw.get("defaults") or {}),
        modalities={k: _check_keys(f"{path}: modalities.{k}", v or {}) for k, v in modalities.items()},
        tasks={k: _check_keys(f"{path}: tasks.{k}", v or {}) for k, v in tasks.items()},
        setup=tuple(setup),
        sbatch=dict(sbatch),
    )


def sbatch_problem() -> str | None:
    """Why jobs cannot be submitted from this machine, or None: no ``sbatch`` on its PATH, or no SLURM
    controller answering ``scontrol ping``."""
    fixes = (
        "submit from a SLURM login node, add --dry-run to print the job arrays, or drop --launcher slurm to "
        "train here"
    )
    if not shutil.which("sbatch"):
        return (
            "--launcher slurm: this machine has no sbatch on its PATH (SLURM's commands are not installed or "
            f"not loaded); {fixes}"
        )
    ping = slurm_command("scontrol", "ping", timeout=30)
    if ping is None or ping.returncode != 0:
        lines = (ping.stderr or ping.stdout).strip().splitlines() if ping else ["no answer in 30 s"]
        said = lines[-1] if lines else f"exit status {ping.returncode if ping else '?'}"
        return f"--launcher slurm: no SLURM controller answers `scontrol ping` here ({said}); {fixes}"
    return None


def slurm_command(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str] | None:
    """Run a SLURM client command; None when it cannot be started or times out."""
    try:
        return subprocess.run(list(args), capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None


def max_array_size() -> int:
    """The cluster's MaxArraySize (largest array index + 1) from ``scontrol show config``; else 1001."""
    out = slurm_command("scontrol", "show", "config", timeout=30)
    return parse_max_array_size(out.stdout if out and out.returncode == 0 else "")


def parse_max_array_size(text: str) -> int:
    """MaxArraySize from the text of ``scontrol show config``; 1001 when it is absent or 0."""
    match = re.search(r"^MaxArraySize\s*=\s*(\d+)", text, re.MULTILINE)
    return int(match.group(1)) if match and int(match.group(1)) > 0 else DEFAULT_MAX_ARRAY_SIZE


def read_submission(run_dir: str | Path) -> dict[str, Any]:
    """The run's ``slurm.json`` ({} if it was never submitted to SLURM)."""
    path = Path(run_dir) / SUBMISSION_FILE
    return read_json(path) if path.is_file() else {}


def active_jobs() -> set[str] | None:
    """Ids (``123`` or ``123_4``) of this user's queued and running jobs; None when squeue fails."""
    out = slurm_command("squeue", "--me", "-h", "-r", "-o", "%i")
    return set(out.stdout.split()) if out and out.returncode == 0 else None


def _job_state(job_id: str) -> str | None:
    """SLURM's JobState of ``job_id`` (e.g. RUNNING, COMPLETING), None when scontrol fails."""
    out = slurm_command("scontrol", "show", "job", "-o", job_id)
    return parse_job_state(out.stdout) if out and out.returncode == 0 else None


def parse_job_state(text: str) -> str | None:
    """The JobState field of ``scontrol show job -o`` (one line per job), None when there is none."""
    match = re.search(r"\bJobState=(\S+)", text)
    return match.group(1) if match else None

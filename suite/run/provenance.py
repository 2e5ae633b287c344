"""What a run records about itself: ``run.json`` provenance and the sampler's density log.

``run.json`` says what ran (task, sampler and its hyper-parameters, budget, seed, both config hashes),
on what data (the variant, whether it is a stand-in, the content fingerprint the comparison depends on,
the path it was read from, and the task's recorded facts such as σ_data and the encoding), with what
(network capabilities used, world size, device, package versions, git SHA, host and SLURM identifiers,
whether ``$SUITE_TRUST_PICKLE`` let pickled checkpoints be read: ``trust_pickle``),
and how it went (status, kimg, wall time, error). ``sampler.jsonl`` holds the density π(u) on a 129-point
grid of u = ln σ at the start and after every rebuild of an adaptive sampler, with its learned profile.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from omegaconf import OmegaConf

from suite.metrics import pickle_trusted
from suite.noise.sampler import NoiseSampler
from suite.records import (
    RunDirectory,
    code_version,
    host_info,
    now,
    package_versions,
    read_json,
    write_atomic,
    write_json,
)
from suite.run.distributed import DistContext
from suite.run.spec import RunSpec
from suite.run.state import TrainingState
from suite.task import TaskData

DENSITY_POINTS = 129


def density_row(sampler: NoiseSampler, nimg: int, rebuild: Mapping[str, Any]) -> dict[str, Any]:
    """The sampler's density on the u grid at ``nimg``, with the rebuild's statistics and learned profile."""
    u = torch.linspace(
        math.log(sampler.sigma_min), math.log(sampler.sigma_max), DENSITY_POINTS, dtype=torch.float64
    )
    row = {
        "nimg": nimg,
        "kimg": nimg / 1000,
        "u": u.tolist(),
        "density": sampler.density_on(u).cpu().tolist(),
        **dict(rebuild),
    }
    if (p := sampler.profile()) is not None:
        row["profile"] = {k: v.cpu().tolist() for k, v in p.items()}
    return row


def run_started(
    folder: RunDirectory,
    spec: RunSpec,
    state: TrainingState,
    data: TaskData,
    ctx: DistContext,
    resumed: bool,
) -> None:
    """Write the resolved config and the run's provenance (status ``running``)."""
    write_atomic(folder.path / "config.yaml", OmegaConf.to_yaml(spec.config).encode())
    folder.update(
        status="running",
        task=spec.task,
        sampler=spec.sampler.label,
        sampler_name=spec.sampler.name,
        sampler_adaptive=type(state.sampler).adaptive,
        seed=spec.seed,
        budget=spec.budget.name,
        config_hash=spec.config_hash,
        comparison_hash=spec.comparison_hash,
        sampler_hyperparameters=state.sampler.hyperparameters(),
        data=data.variant,
        stand_in_data=data.stand_in,
        data_fingerprint=data.fingerprint,
        data_source=data.source,
        data_info=data.info,
        channels_last=state.channels_last,
        world_size=ctx.world_size,
        device=torch.cuda.get_device_name(ctx.device) if ctx.device.type == "cuda" else "cpu",
        packages=package_versions(),
        trust_pickle=pickle_trusted(),  # $SUITE_TRUST_PICKLE: whether pickled checkpoints could be read
        **code_version(),
        **host_info(),
        started=folder.info().get("started", now()),
        resumed_from_kimg=state.nimg / 1000 if resumed else None,
        total_kimg=spec.budget.total_nimg / 1000,
        epochs=spec.budget.epochs,  # when set: total_kimg = epochs × train_examples / 1000
        train_examples=len(data.train),
        error=None,
    )


def claim_data_identity(comparison_folder: Path, data: TaskData) -> None:
    """Record the data of a comparison (``data.json``: fingerprint, variant, source) on its first run, and
    refuse a run whose data differ: the same data under another path compares, other data never does."""
    if not (comparison_folder / "comparison.json").is_file():
        return
    marker = comparison_folder / "data.json"
    if marker.is_file():
        known = read_json(marker)
        if known["fingerprint"] != data.fingerprint:
            raise ValueError(
                f"the data loaded from {data.source} (fingerprint {data.fingerprint}, {data.variant}) differ "
                f"from the data of the comparison in {comparison_folder} (fingerprint "
                f"{known['fingerprint']}, {known['variant']}, first read from {known['source']}); use "
                "another --results folder"
            )
        return
    write_json(marker, {"fingerprint": data.fingerprint, "variant": data.variant, "source": data.source})

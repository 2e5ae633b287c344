"""Best-validation checkpoint selection: the raw weights scored on the task's validation split on a schedule
in epochs, the best kept, and the run's final values computed from them.

The reference. DDSM's promoter training (jzhoulab/ddsm at 5148f9f, promoter_design/train_promoter_designer.py)
builds the validation windows with ``TSSDatasetS(split='valid', n_tsses=40000, rand_offset=0)`` (line 351:
chr10, never shifted), and after the training of each epoch whose 0-based index is a multiple of 5
(``if epoch % 5 == 0:``, line 458: after 1, 6, 11, …, 196 epochs) puts the raw network in eval mode
(``score_model.eval()``, line 459), generates one sample per validation window conditioned on its own CAGE
signal, and computes the validation SP-MSE (line 492); a value below the best so far (strictly, line 495)
becomes the best and the raw weights are saved (``torch.save(score_model.state_dict(), ...)``, line 498). No
EMA is kept. Its mean runs over a fixed array of 2,915 rows (lines 363 and 480-487: the full batches of 128
validation windows, zero rows, and the last 128 windows again at the end), a weighting of the same squared
differences where chr10 holds fewer windows; the suite's mean takes each validation window once.

Here ``budget.selection`` (``suite.run.spec.SelectionSpec``: metric, ``every_epochs``, ``first_epoch``)
states the schedule; the points are processed-example counts derived from the training examples the run
loaded (``suite.run.schedule.selection_points``: the step that completes each such pass). At each point the
loop checkpoints, then the main rank scores the raw network (``TrainingState.model``, in eval mode, without
gradients) with the task's evaluation protocol for one sample per validation window
(``suite.run.evaluation.Evaluator`` with ``final_eval: per_reference`` and one set, the validation split as
its reference, the budget's latent seed at every check), on the selection metric only; a value better than
the best so far by the metric's direction (ties keep the earlier) becomes the best.

Records. The selection state — every check's (nimg, value) and the best's nimg, value and weights — travels in
the training checkpoint (``TrainingState.selection``; the checkpoint at the point is written again after the
check), so a resumed run keeps the best so far as it was at the checkpoint it restored, and a check that a
kill or a stop cut short is done again on resume. The best raw weights are also written as
``checkpoints/best-validation.pt`` (:data:`BEST_FILE`: ``model``, ``nimg``, ``value``, ``metric``, ``checks``,
``config_hash``; tensors and plain values, read with ``weights_only``), atomically (``suite.records.
write_atomic``: a kill leaves the previous file or the new one), and rewritten from the restored state when a
run resumes (removed when it starts over); run.json's ``selection`` holds the checks and the best.

Final values. At the final evaluation point the run scores the best raw weights and its final EMA weights
with the final protocol: the selected rows are the run's own (``extra.weights`` :data:`SELECTED_WEIGHTS`,
with ``selected_kimg``, ``validation_metric`` and ``validation_value``); the EMA's rows are kept beside them
with ``extra.weights`` :data:`EMA_WEIGHTS`, a protocol of their own in the tables
(``suite.report.results``), so that neither is averaged with the other. The curve points before the end are
the EMA's, as in every other run.
"""

from __future__ import annotations

import copy
import dataclasses
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from suite.records import EMA_WEIGHTS, SELECTED_WEIGHTS, RunDirectory, write_atomic
from suite.run.checkpoint import check_plain
from suite.run.evaluation import Evaluator
from suite.run.schedule import selection_points
from suite.run.spec import RunSpec
from suite.run.state import TrainingState
from suite.task import Task, TaskData

BEST_FILE = "best-validation.pt"

Rows = list[dict[str, Any]]


def best_path(folder: RunDirectory) -> Path:
    """Where a run keeps its best raw weights."""
    return folder.checkpoints / BEST_FILE


class Selection:
    """The checks of one run: its points (every rank), and on the main rank the validation evaluator."""

    def __init__(
        self,
        spec: RunSpec,
        task: Task,
        data: TaskData,
        state: TrainingState,
        folder: RunDirectory,
        evaluator: Evaluator | None,
    ) -> None:
        selection = spec.budget.selection
        if selection is None:
            raise ValueError("Selection needs budget.selection")
        self.spec, self.select, self.state, self.dir = spec, selection, state, folder
        budget = spec.budget
        self.points = selection_points(
            budget.total_nimg, budget.batch, len(data.train), selection.every_epochs, selection.first_epoch
        )
        self.validator: Evaluator | None = None
        if evaluator is not None:
            names = [metric.spec.name for metric in evaluator.metrics]
            if selection.metric not in names:
                raise ValueError(
                    f"budget.selection.metric={selection.metric!r} is not a metric of task {spec.task}; "
                    f"valid: {', '.join(names)}"
                )
            if data.validation is None or len(data.validation) == 0:
                raise ValueError(
                    f"budget.selection scores the task's validation split; task {spec.task} loaded none "
                    f"({data.variant}); give it data with one or set budget.selection.metric=null"
                )
            ev = dataclasses.replace(budget.eval, per_reference_final=True, final_sets=1)
            scored = dataclasses.replace(spec, budget=dataclasses.replace(budget, eval=ev))
            self.validator = Evaluator(
                scored, task, dataclasses.replace(data, reference=data.validation), evaluator.device
            )
            self.validator.metrics = [m for m in evaluator.metrics if m.spec.name == selection.metric]
            self.higher_is_better = self.validator.metrics[0].spec.higher_is_better

    @property
    def record(self) -> dict[str, Any]:
        """The selection state in the training state: {"checks": [[nimg, value], …], "best": None or
        {"nimg", "value", "model"}}."""
        if self.state.selection is None:
            self.state.selection = {"checks": [], "best": None}
        return self.state.selection

    def pending(self) -> bool:
        """Whether ``nimg`` is a selection point without its check (main rank; False elsewhere)."""
        nimg = self.state.nimg
        return (
            self.validator is not None
            and nimg in self.points
            and all(int(done) != nimg for done, _ in self.record["checks"])
        )

    def check(self) -> bool:
        """Score the raw weights at ``nimg`` on the validation split, keep them if they are the best so far,
        and write the best file; returns whether a check was made (False: none due here, or not the main
        rank). A stop request raises ``Interrupted`` before anything is recorded."""
        if not self.pending():
            return False
        state, nimg, record = self.state, self.state.nimg, self.record
        assert self.validator is not None
        model = state.model
        training = model.training
        model.eval()
        try:
            (row,) = self.validator.evaluate(
                model, nimg, state.wall_time, False, only=self.select.metric, final=True
            )
        finally:
            model.train(training)
        value = float(row["value"])
        record["checks"].append([nimg, value])
        best = record["best"]
        if best is None or (value > best["value"] if self.higher_is_better else value < best["value"]):
            weights = {key: tensor.detach().cpu().clone() for key, tensor in model.state_dict().items()}
            record["best"] = {"nimg": nimg, "value": value, "model": weights}
        self.publish()
        best, metric = record["best"], self.select.metric
        print(
            f"validation {metric} at kimg {nimg / 1000:g}: {value:.6g} (best {best['value']:.6g} at kimg "
            f"{best['nimg'] / 1000:g}; {len(record['checks'])} of {len(self.points)} checks)",
            flush=True,
        )
        return True

    def publish(self) -> None:
        """Write the best file and run.json's summary from the selection state (main rank); remove a best
        file of an earlier attempt where the state holds no best."""
        if self.validator is None:
            return
        record, path = self.record, best_path(self.dir)
        best = record["best"]
        if best is None:
            path.unlink(missing_ok=True)
        else:
            content = {
                "model": best["model"],
                "nimg": int(best["nimg"]),
                "value": float(best["value"]),
                "metric": self.select.metric,
                "checks": [[int(n), float(v)] for n, v in record["checks"]],
                "config_hash": self.spec.config_hash,
            }
            check_plain(content)
            buffer = io.BytesIO()
            torch.save(content, buffer)
            write_atomic(path, buffer.getvalue())
        self.dir.update(selection=self.summary())

    def summary(self) -> dict[str, Any]:
        """run.json's ``selection``: the schedule, every check and the best."""
        record, select = self.record, self.select
        best = record["best"]
        return {
            "metric": select.metric,
            "split": "validation",
            "every_epochs": select.every_epochs,
            "first_epoch": select.first_epoch,
            "points_kimg": [point / 1000 for point in self.points],
            "checks": [{"kimg": int(n) / 1000, "value": float(v)} for n, v in record["checks"]],
            "best_kimg": None if best is None else int(best["nimg"]) / 1000,
            "best_value": None if best is None else float(best["value"]),
            "file": str(best_path(self.dir).relative_to(self.dir.path)),
        }

    def final_rows(self, ema_rows: Rows, score: Callable[[nn.Module], Rows]) -> Rows:
        """The final point's rows: ``score`` of the best raw weights (the run's own final values) and the
        final EMA's rows kept beside them, each marked by ``extra.weights``; the EMA's rows alone, marked as
        the own ones, where no check was made before the end."""
        best = self.record["best"]
        if best is None:
            print(
                f"note: no validation check before kimg {self.state.nimg / 1000:g}; final values of the EMA"
            )
            return ema_rows
        model = copy.deepcopy(self.state.model).eval().requires_grad_(False)
        model.load_state_dict(best["model"])
        selected = score(model)
        checks = len(self.record["checks"])
        for row in selected:
            row["extra"] = row["extra"] | {
                "weights": SELECTED_WEIGHTS,
                "selected_kimg": int(best["nimg"]) / 1000,
                "validation_metric": self.select.metric,
                "validation_value": float(best["value"]),
                "validation_checks": checks,
            }
        for row in ema_rows:
            row["extra"] = row["extra"] | {"weights": EMA_WEIGHTS}
        return selected + ema_rows

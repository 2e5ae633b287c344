"""One optimiser step of a run, built from its training state alone (no run folder), and its compile wrapper.

A step at ``nimg`` draws from the step's generator (``suite.stream``: the same draws on every rank and after
every resume) the global batch's data indices, σ ~ π (the run's noise sampler), ε ~ N(0, I) and the condition
dropout, keeps this rank's share, lets the task augment it, and lays x₀ and ε out in the network's declared
``memory_format``. It then evaluates the task's objective (``suite.objectives``) under the budget's precision,
back-propagates the mean over this rank's share of the weighted x₀-space errors, zeroes non-finite gradient
entries (``zero_nonfinite_``), optionally clips the gradient norm, and steps Adam (EDM: β = 0.9, 0.999,
ε = 1e-8) at the warm-up learning rate lr·min(1, nimg / (rampup_kimg·1000)). It hands σ and the observed
errors to the sampler (``observe_draws``: nothing is read back from the device) and updates the EMA,
θ_ema ← β·θ_ema + (1 − β)·θ with β = 0.5^(batch / h) and h = min(halflife_kimg·1000, nimg·rampup_ratio)
(EDM, Karras et al. 2022, App. C.2), as one ``torch._foreach_lerp_``.

A compiled network compiles on its first step (``CompiledStep``): its time is kept apart from the run's wall
time; a compile that fails leaves one warning line and the step is taken again, eager. A compile fails in the
forward or the backward, before the optimiser or the sampler has changed anything, so the retried step is the
step an eager run takes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from suite.objectives import Objective
from suite.run.distributed import DistContext
from suite.run.schedule import ema_beta, learning_rate
from suite.run.spec import RunSpec
from suite.run.state import TrainingState
from suite.stream import batch_indices, step_generator, step_seed
from suite.task import Cond, Split, Task, augment_share


@dataclass
class Draw:
    """This rank's share of one step's random draws: the (augmented) data, its condition, σ and ε."""

    x0: Tensor
    cond: Cond
    sigma: Tensor
    noise: Tensor


class Step:
    """One optimiser step on the global batch starting at ``state.nimg`` (module docstring)."""

    def __init__(
        self,
        spec: RunSpec,
        task: Task,
        train: Split,
        state: TrainingState,
        objective: Objective,
        ctx: DistContext,
    ) -> None:
        if spec.budget.batch % ctx.world_size:
            raise ValueError(
                f"budget.batch={spec.budget.batch} is not divisible by the {ctx.world_size} ranks"
            )
        self.spec, self.budget, self.task, self.train = spec, spec.budget, task, train
        self.state, self.objective, self.ctx = state, objective, ctx
        self.batch = spec.budget.batch
        self.per_rank = self.batch // ctx.world_size
        self.mine = slice(ctx.rank * self.per_rank, (ctx.rank + 1) * self.per_rank)

    def draw(self) -> Draw:
        """The draws of the step at ``state.nimg`` (a function of the seed and ``nimg`` only); also seeds the
        global RNG that the network's dropout masks come from."""
        seed, nimg, device, mine, batch = (
            self.spec.seed,
            self.state.nimg,
            self.ctx.device,
            self.mine,
            self.batch,
        )
        gen = step_generator(seed, nimg, device)
        torch.manual_seed(step_seed(seed, nimg) + self.ctx.rank)  # the network's dropout masks
        index = batch_indices(seed, len(self.train), nimg, batch)[mine]
        data = self.train.training_batch(index, device, gen, mine, batch)
        sigma = self.state.sampler.sample(batch, gen, stratified=self.budget.stratified)
        noise = torch.randn((batch, *self.task.sample_shape), generator=gen, device=device)[mine]
        cond, dropout = data.cond, self.spec.diffusion.cond_dropout
        if cond and dropout > 0:
            keep = torch.rand(batch, generator=gen, device=device)[mine] >= dropout
            cond = self.task.drop_condition(cond, keep)
        x0, cond = augment_share(self.task, data.x0, cond, gen, mine, batch)
        layout = self.state.model.memory_format
        return Draw(
            x0.contiguous(memory_format=layout), cond, sigma[mine], noise.contiguous(memory_format=layout)
        )

    def __call__(self) -> Tensor:
        """Take the step; returns this rank's sum of the weighted losses (on the device)."""
        state, budget, draw = self.state, self.budget, self.draw()
        if state.cuda_graphs:  # the previous step's graph outputs are no longer read
            torch.compiler.cudagraph_mark_step_begin()
        with torch.autocast(self.ctx.device.type, dtype=torch.bfloat16, enabled=budget.precision == "bf16"):
            x0 = self.objective.encode(state.model, draw.x0)
            weighted, observed = self.objective.losses(
                state.forward,
                x0,
                draw.sigma,
                draw.noise,
                draw.cond,
                state.sampler.importance_weight(draw.sigma),
            )
        state.optimizer.zero_grad(set_to_none=True)
        (weighted.sum() / self.per_rank).backward()
        zero_nonfinite_([p.grad for p in state.model.parameters() if p.grad is not None])
        if budget.grad_clip > 0:
            nn.utils.clip_grad_norm_(state.model.parameters(), budget.grad_clip)
        for group in state.optimizer.param_groups:
            group["lr"] = learning_rate(budget.lr, state.nimg, budget.lr_rampup_kimg)
        state.optimizer.step()
        state.sampler.observe_draws(draw.sigma, observed)
        state.nimg += self.batch
        beta = ema_beta(self.batch, state.nimg, budget.ema_halflife_kimg, budget.ema_rampup_ratio)
        with torch.no_grad():
            torch._foreach_lerp_(list(state.ema.parameters()), list(state.model.parameters()), 1 - beta)
        return weighted.detach().sum()

    @torch.no_grad()
    def probe_loss(self) -> float:
        """The mean weighted loss per example of the network as it is now, on the draws of the next step,
        without stepping (eager, this rank alone): whether a run diverged when its evaluation went wrong."""
        state, draw = self.state, self.draw()
        x0 = self.objective.encode(state.model, draw.x0)
        weighted, _ = self.objective.losses(
            state.model, x0, draw.sigma, draw.noise, draw.cond, state.sampler.importance_weight(draw.sigma)
        )
        return weighted.sum().item() / self.per_rank


class CompiledStep:
    """A step whose first call compiles the network when the state asks for it (module docstring)."""

    def __init__(self, step: Step, verbose: bool) -> None:
        self.step, self.state, self.verbose = step, step.state, verbose
        self.seconds: float | None = None  # the first compiled step's time, once taken
        self.warning: str | None = None

    @property
    def compiling(self) -> bool:
        """Whether the next call compiles."""
        return self.state.compiled and self.seconds is None

    def __call__(self) -> Tensor:
        if not self.compiling:
            return self.step()
        start = time.perf_counter()
        try:
            loss = self.step()
        except Exception as err:  # the compiler's failure, of any type; an eager failure re-raises below
            reason = (str(err).strip().splitlines() or [""])[0][:300]
            self.warning = f"torch.compile failed ({type(err).__name__}: {reason}); training eager"
            if self.verbose:
                print(f"warning: {self.warning}", flush=True)
            self.state.fall_back_to_eager()
            self.state.optimizer.zero_grad(set_to_none=True)
            self.seconds = time.perf_counter() - start
            return self.step()
        self.seconds = time.perf_counter() - start
        if self.verbose:
            print(
                f"compiled the training step in {self.seconds:.1f} s "
                f"(inductor cache {self.state.compile_cache})",
                flush=True,
            )
        return loss

    def record(self) -> dict[str, Any]:
        """What run.json keeps about compilation in this launch."""
        state = self.state
        record: dict[str, Any] = {
            "requested": {None: "auto", True: "true", False: "false"}[self.step.budget.compile],
            "compiled": state.compiled,
            "cuda_graphs": state.cuda_graphs,
        }
        if self.seconds is not None:
            record["seconds"] = round(self.seconds, 2)
            record["cache"] = state.compile_cache
        if self.warning is not None:
            record["warning"] = self.warning
        return record


def zero_nonfinite_(grads: list[Tensor]) -> None:
    """Set the NaN and ±inf entries of every tensor of ``grads`` to zero, in place, as three operations
    however many tensors there are (one per tensor launches a kernel each, which costs small networks more
    than the cleaning itself): concatenated into one flat buffer, cleaned there, copied back at once."""
    if not grads:
        return
    # autograd lays each gradient out densely (as its parameter, or contiguous): its numel elements fill one
    # run of its storage from its offset, so a unit-stride view of that run sees them in memory order
    views = [g.as_strided((g.numel(),), (1,)) for g in grads]
    flat = torch.cat(views)
    torch.nan_to_num_(flat, nan=0.0, posinf=0.0, neginf=0.0)
    torch._foreach_copy_(views, list(flat.split([v.numel() for v in views])))

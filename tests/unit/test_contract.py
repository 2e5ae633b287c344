"""The task contract: declared, checked at registration, documented, and honoured by every configured task.

Registration: a class that lacks any member docs/tasks.md says a task declares or implements is refused,
with a message naming the member; the page's member table is parsed, so the page, the base class and the
check cannot drift apart, and the page's config-key table is compared with the keys the core's sources read.

Behaviour, for every configured task (the configs decide the list): under the smoke budget the task writes
small example data in its real on-disk format, the network is built from the task's smoke preset, and one
training step runs on the CPU with the channels-last request on. The declarations are checked against what
the task does: a conditional task's batches carry a condition and an unconditional task's none; a fixed model
space is the data as loaded, a learned one moves with the network's weights; a network that declares
channels-last really holds channels-last weights. Under the smoke budget every metric scores the untrained
model's samples no better than the reference itself, by the direction its spec declares.

The ``short`` and ``paper`` presets (up to EDM's 55.7M-parameter CIFAR-10 network) are built as ``--dry-run``
builds them, on the meta device (shapes without memory, ``suite.run.assembly``): the run's checks find no
problem, one forward and backward pass of the objective on the task's example batch keeps the declared sample
shape and conditioning, the channels-last declaration holds, and the networks whose size the configs and
docs/images.md state have that many parameters.
"""

import dataclasses
import math
import re
from pathlib import Path

import pytest
import torch
from omegaconf import DictConfig

from suite.config import compose_run, group_options
from suite.launch.cost import example_batch
from suite.launch.plan import run_problems
from suite.metrics import EvalInputs
from suite.registry import ContractError
from suite.run.assembly import build_model, build_parts
from suite.run.spec import DiffusionSpec, run_spec
from suite.run.training import Trainer
from suite.task import TASKS, Task, augment_share
from tests.plugins.mog2d import MixtureOfGaussians

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs" / "tasks.md"
LARGER_BUDGETS = ("short", "paper")
# parameters of the presets whose size the configs and docs/images.md state (EDM's CIFAR-10 network: 55.7M)
STATED_PARAMETERS = {
    ("cifar10", "paper"): 55.73e6,
    ("cifar10_cond", "paper"): 55.73e6,
    ("ffhq64", "paper"): 61.8e6,
}
CONFIGURED = group_options("task")
SMALL = [
    "device=cpu",
    "budget.batch=2",
    "budget.precision=fp32",
    "budget.channels_last=true",
    "budget.eval.samples=2",
    "budget.eval.reference=4",
    "budget.eval.batch_size=2",
    "task.solver_steps=2",
]


def documented_table(heading: str) -> dict[str, str]:
    """First column (the backticked name) → second column of the table under ``heading`` in docs/tasks.md."""
    section = DOCS.read_text().split(f"## {heading}", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([a-z_]+)` \| ([^|]+) \|", section, flags=re.MULTILINE)
    return {name: kind.strip() for name, kind in rows}


MEMBERS = documented_table("The contract")
REQUIRED = sorted(name for name, kind in MEMBERS.items() if kind in ("declare", "implement"))


def without(member: str) -> type:
    """The mixture task's class rebuilt without ``member`` (everything else it defines kept)."""
    body = {k: v for k, v in vars(MixtureOfGaussians).items() if not k.startswith("_") and k != member}
    return type(f"MixtureWithout_{member}", (Task,), body)


@pytest.mark.parametrize("member", REQUIRED)
def test_a_task_missing_a_declared_member_fails_at_registration_naming_it(member):
    with pytest.raises(ContractError, match=rf"MixtureWithout_{member}.*\b{member}\b"):
        TASKS.register(f"broken-{member}")(without(member))
    assert f"broken-{member}" not in TASKS.names()


def test_invalid_declarations_are_refused_with_their_valid_choices():
    body = {k: v for k, v in vars(MixtureOfGaussians).items() if not k.startswith("_")}
    declarations = {"modality": "Point Cloud", "conditional": "yes", "model_space": "x"}
    wrong = type("Wrong", (Task,), body | declarations)
    with pytest.raises(ContractError) as err:
        TASKS.register("wrong")(wrong)
    message = str(err.value)
    assert "modality: invalid value 'Point Cloud'" in message and "lowercase" in message
    assert "conditional: invalid value 'yes'" in message and "True or False" in message
    assert "model_space: invalid value 'x'; valid: fixed, learned" in message

    def augment(self, x0, cond, generator, rows, total):
        return x0, cond

    with pytest.raises(ContractError, match=r"augment\(self, x0, cond, generator, rows, total\): must be"):
        TASKS.register("old-augment")(type("OldAugment", (Task,), body | {"augment": augment}))


def test_the_documented_members_are_the_task_base_class_members():
    base = {name for name in vars(Task) if not name.startswith("_")}
    declared = set(Task.__annotations__)
    instance = set(vars(MixtureOfGaussians({})))
    assert set(MEMBERS) == base | declared | instance
    assert {n for n, kind in MEMBERS.items() if kind == "implement"} == set(Task.__abstractmethods__)
    assert {n for n, kind in MEMBERS.items() if kind == "declare"} == declared - {"name"}


CORE_READS = (  # how the core reads a task config key: suite/*.py and the non-task config groups
    r"cfg\.task\.([a-z_]+)\b(?!\()",
    r"cfg\.task\.get\(\s*[\"']([a-z_]+)",
    r"\btask(?:_cfg)?(?:\.get\(|\[)\s*[\"']([a-z_]+)",
    r"\btask\.(sigma_min|sigma_max|sigma_data|solver|solver_steps|loss_weight|cond_dropout)\b",
    r"[\"']task\.([a-z_]+)[\"']",
    r"\$\{(?:oc\.select:)?task\.([a-z_]+)",
    r"_metric_set\(\s*[\"']([a-z_]+)",
)
TASK_FAMILIES = ("image_task.py", "dna.py", "text.py")  # a family of tasks reads its own keys


def test_the_documented_config_keys_are_the_ones_the_core_reads():
    sources = [p for p in (REPO / "suite").rglob("*.py") if p.name not in TASK_FAMILIES]
    sources += [p for p in (REPO / "suite" / "conf").rglob("*.yaml") if p.parent.name != "task"]
    texts = [path.read_text() for path in sources]
    read = {key for text in texts for pattern in CORE_READS for key in re.findall(pattern, text)}
    base = (REPO / "suite" / "task.py").read_text()
    read |= set(re.findall(r"self\.cfg(?:\.get\(|\[)\s*[\"']([a-z_]+)", base))
    read |= {field.name for field in dataclasses.fields(DiffusionSpec)}  # the spec reads these from task.*
    assert read == set(documented_table("Config"))


def config(task: str, budget: str, tmp_path) -> DictConfig:
    """The run's config on the task's example data (written in its real on-disk format)."""
    overrides = TASKS.get(task).example_data(tmp_path / "data", 8)
    task_overrides = [f"task.{key}={value}" for key, value in overrides.items()]
    return compose_run(task, "edm", budget, [*task_overrides, *SMALL])


def build(task: str, budget: str, tmp_path) -> Trainer:
    return Trainer(run_spec(config(task, budget, tmp_path)), tmp_path / "run")


def assert_layout_as_declared(model: torch.nn.Module) -> None:
    """A network that declares channels-last holds its 4-d kernels channels-last (and not contiguous as
    well), any other network holds contiguous weights."""
    kernels = [p for p in model.parameters() if p.ndim == 4]
    if getattr(model.net, "channels_last", False):
        assert kernels and all(p.is_contiguous(memory_format=torch.channels_last) for p in kernels)
        assert not all(p.is_contiguous() for p in kernels)  # the layout really moved
    else:
        assert all(p.is_contiguous() for p in model.parameters())


def parameter_count(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("task", CONFIGURED)
def test_every_task_trains_one_step_under_the_smoke_budget_as_it_declares(task, tmp_path):
    trainer = build(task, "smoke", tmp_path)
    model, declared = trainer.state.model, trainer.task
    batch = trainer.data.train.batch(torch.arange(2), torch.device("cpu"))
    assert bool(batch.cond) == declared.conditional
    before = trainer.objective.encode(model, batch.x0).detach().clone()
    assert tuple(before.shape[1:]) == declared.sample_shape
    assert math.isfinite(trainer.train_step().item())
    with torch.no_grad():  # move every weight: a learned model space moves with them, a fixed one does not
        for weight in model.parameters():
            weight.add_(0.01 * torch.randn_like(weight))
    after = trainer.objective.encode(model, batch.x0)
    if declared.model_space == "fixed":
        assert torch.equal(before, batch.x0) and torch.equal(after, batch.x0)
    else:
        assert not torch.equal(before, after)
    assert_layout_as_declared(model)
    # the meta device shapes the same network the CPU allocates: what the larger budgets are checked on
    meta = build_model(trainer.spec, declared, "meta")  # the task as loaded: its data may size the network
    assert [p.shape for p in meta.parameters()] == [p.shape for p in model.parameters()]


@pytest.mark.parametrize("budget", LARGER_BUDGETS)
@pytest.mark.parametrize("task", CONFIGURED)
def test_every_task_builds_its_larger_presets_on_the_meta_device_as_it_declares(task, budget, tmp_path):
    cfg = config(task, budget, tmp_path)
    assert run_problems(cfg) == []  # what --dry-run checks, the network built on the meta device
    spec = run_spec(cfg)
    parts, meta = build_parts(spec, meta=True), torch.device("meta")
    declared, model = parts.task, parts.model
    assert all(p.is_meta for p in model.parameters())
    batch = example_batch(spec)  # the task's own example data, one example
    assert bool(batch.cond) == declared.conditional
    objective = declared.objective(parts.weight)
    x0 = objective.encode(model, batch.x0.to(meta))
    assert tuple(x0.shape[1:]) == declared.sample_shape
    cond = {key: value.to(meta) for key, value in batch.cond.items()}
    noise = torch.empty((1, *declared.sample_shape), device=meta)
    weighted, _ = objective.losses(model, x0, torch.ones(1, device=meta), noise, cond)
    assert weighted.shape == (1,)
    weighted.sum().backward()
    assert any(p.grad is not None and p.grad.shape == p.shape for p in model.parameters())
    assert_layout_as_declared(model)
    stated = STATED_PARAMETERS.get((task, budget))
    if stated:
        assert parameter_count(model) == pytest.approx(stated, rel=1e-3)


@pytest.mark.parametrize("task", CONFIGURED)
def test_every_metric_ranks_the_reference_at_least_as_good_as_an_untrained_model(task, tmp_path):
    trainer = build(task, "smoke", tmp_path)
    trainer.train_step()
    evaluator = trainer.evaluator
    ema, sampler = trainer.state.ema, trainer.state.sampler
    rows = {row["metric"]: row for row in evaluator.evaluate(ema, trainer.nimg, 0.0, False, sampler=sampler)}
    reference = evaluator.reference()
    # the same network and sampler beside the samples: a metric that scores them (the exact KL bound of the
    # ground-truth tasks) gives the reference the sampled value, one that scores samples ranks it better
    matched = reference if trainer.task.conditional else None
    itself = EvalInputs(reference, reference, matched, model=ema, sampler=sampler)
    for metric in evaluator.metrics:
        sampled, best = rows.pop(metric.spec.name)["value"], metric(itself)["value"]
        assert math.isfinite(sampled) and math.isfinite(best)
        assert (sampled <= best + 1e-6) if metric.spec.higher_is_better else (best <= sampled + 1e-6)
    assert not rows, f"rows of no configured metric: {sorted(rows)}"


def test_a_rank_augments_its_rows_exactly_as_one_process_augments_them(tmp_path):
    overrides = TASKS.get("cifar10").example_data(tmp_path / "data", 12)
    cfg = compose_run("cifar10", "edm", "smoke", [f"task.{k}={v}" for k, v in overrides.items()])
    task = TASKS.get("cifar10")({**cfg.task, "augment_p": 0.5})
    batch = task.load().train.batch(torch.arange(12), torch.device("cpu"))
    whole, whole_cond = task.augment(batch.x0, {}, torch.Generator().manual_seed(9))
    assert not torch.equal(whole, batch.x0)
    one, one_cond = augment_share(task, batch.x0, {}, torch.Generator().manual_seed(9), slice(0, 12), 12)
    assert torch.equal(one, whole) and torch.equal(one_cond["augment_labels"], whole_cond["augment_labels"])
    for rank in range(3):
        mine = slice(4 * rank, 4 * rank + 4)
        part, cond = augment_share(task, batch.x0[mine], {}, torch.Generator().manual_seed(9), mine, 12)
        assert torch.equal(part, whole[mine])
        assert torch.equal(cond["augment_labels"], whole_cond["augment_labels"][mine])

"""Hydra config tree, override validation, sweeps and config hashes.

``suite/conf/`` holds the groups ``task``, ``sampler`` and ``budget``; a run's config is composed with
Hydra's compose API from ``task=…``, ``sampler=…``, ``budget=…`` and ``key=value`` overrides. A comma
list (``sampler.p_mean=-1.2,0,1.2``) sweeps a value: each combination is one run. Two hashes identify a
run: ``config_hash`` of the whole resolved config, and ``comparison_hash`` of everything except the
sampler and the seed — the runs of one comparison must share it, which is how the suite guarantees that
samplers are compared with nothing else changed. What a task changes with the budget's size is one mapping
of its config, ``sizes``, resolved at composition (``apply_size``), so both hashes cover only the chosen
size's values. Where files sit (``task.root``, ``task.download``, the results folder), the device, the
live loggers (``watch``) and a budget's ``note`` (what its numbers can show) enter neither hash: the data's
identity is its content fingerprint, which each run records and which must agree across the runs of a
comparison (``suite.launch.plan``).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import importlib.util
import itertools
import json
from collections.abc import Sequence
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from hydra import compose, initialize_config_dir
from hydra.core.config_store import ConfigStore
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf, open_dict

from suite.names import unknown_name

CONF_DIR = Path(__file__).resolve().parent / "conf"
GROUPS = ("task", "sampler", "budget")
LOCATION_KEYS = ("results", "device", "task.root", "task.download")
# live loggers (suite.watch) watch the numbers, and a budget's note describes them: neither changes them
OBSERVER_KEYS = ("watch", "budget.note")
NOT_COMPARED = ("sampler", "seed", *LOCATION_KEYS, *OBSERVER_KEYS)


PLUGIN_CONFIGS = "infonoise_suite.configs"


def package_folder(module: str) -> Path:
    """The folder of the package ``module`` (dotted), found on ``sys.path`` without importing it or its
    parents (a plugin package's ``__init__`` may import torch)."""
    top, *rest = module.split(".")
    spec = importlib.util.find_spec(top)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"no package {top!r} on sys.path (named by {module!r})")
    return Path(spec.submodule_search_locations[0]).joinpath(*rest)


@functools.lru_cache(maxsize=1)
def config_dirs() -> tuple[Path, ...]:
    """``suite/conf`` and the ``conf/`` folders of the packages declared in the entry-point group
    ``infonoise_suite.configs`` (the entry point's value is the package; nothing is imported). Plugin configs
    are handed to Hydra through its ConfigStore, so they compose like the suite's own."""
    found = [CONF_DIR]
    store = ConfigStore.instance()
    for entry in entry_points(group=PLUGIN_CONFIGS):
        folder = package_folder(entry.value) / "conf"
        if not folder.is_dir():
            raise FileNotFoundError(
                f"config entry point {entry.name} = {entry.value} names {folder}, which is not a folder"
            )
        for group in GROUPS:
            for path in sorted((folder / group).glob("*.yaml")):
                store.store(group=group, name=path.stem, node=OmegaConf.load(path))
        found.append(folder)
    return tuple(found)


def config_file(group: str, name: str) -> Path:
    """The YAML file of config ``name`` in ``group`` (the suite's own or a plugin's)."""
    for folder in config_dirs():
        path = folder / group / f"{name}.yaml"
        if path.is_file():
            return path
    raise ValueError(unknown_name(group, name, group_options(group)))


def group_options(group: str) -> list[str]:
    """Config names available in a group (``suite/conf/<group>/*.yaml`` and plugins' configs)."""
    return sorted({p.stem for folder in config_dirs() for p in (folder / group).glob("*.yaml")})


def check_names(task: str | None, samplers: str | None, budget: str | None) -> None:
    """Check the task, the sampler spec (``all`` or a comma list) and the budget a command names (None: not
    given) against the config folders; ValueError with a did-you-mean (``suite.names.unknown_name``). No
    torch is imported, so a misspelt name is answered at once."""
    if task is not None:
        _check_choice("task", task)
    for name in [] if samplers in (None, "all") else samplers.split(","):
        _check_choice("sampler", name.strip(), ", or all")
    if budget is not None:
        _check_choice("budget", budget)


def _check_choice(group: str, name: str, extra: str = "") -> None:
    options = group_options(group)
    if name not in options:
        raise ValueError(unknown_name(group, name, options, extra))


def _compose(overrides: list[str]) -> DictConfig:
    """Hydra's composition of ``overrides``, a fresh copy of the one kept for the same overrides and the
    same config files (their paths, sizes and modification times): planning a study composes each
    sampler's config once per seed list, and a table of a study plans it again."""
    dirs = config_dirs()
    files = tuple(
        (str(path), stat.st_mtime_ns, stat.st_size)
        for folder in dirs
        for path in sorted(folder.rglob("*.yaml"))
        for stat in [path.stat()]
    )
    return copy.deepcopy(_composed(tuple(overrides), files))


@functools.lru_cache(maxsize=256)
def _composed(overrides: tuple[str, ...], files: tuple[tuple[str, int, int], ...]) -> DictConfig:
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        return compose(config_name="config", overrides=list(overrides))


def parse_overrides(overrides: Sequence[str]) -> list[Override]:
    """Hydra's parse of ``key=value`` overrides; ValueError naming the first that is not one, in words
    (Hydra's own message is an OverrideParseException and a grammar error)."""
    parser, parsed = OverridesParser.create(), []
    for item in overrides:
        try:
            parsed += parser.parse_overrides([item])
        except HydraException as err:
            lines = [line for line in str(err).strip().splitlines()[1:] if not line.startswith("See ")]
            why = f" (Hydra: {'; '.join(lines)})" if lines else ""
            raise ValueError(
                f"the override {item!r} is not key=value{why}; write KEY=VALUE (e.g. budget.kimg=12.8), "
                "+KEY=VALUE to add a key, ~KEY to remove one, or quote a value holding spaces"
            ) from None
    return parsed


def _check_keys(base: DictConfig, overrides: list[str]) -> None:
    """Refuse overrides of keys that do not exist, naming the valid keys at that level."""
    for item in parse_overrides(overrides):
        if item.is_add() or item.key_or_group in GROUPS:
            continue
        parts = item.key_or_group.split(".")
        node: Any = base
        for depth, part in enumerate(parts):
            if not isinstance(node, DictConfig) or part not in node:
                where = ".".join(parts[:depth]) or "the top level"
                valid = ", ".join(sorted(node.keys())) if isinstance(node, DictConfig) else "(none: a leaf)"
                raise ValueError(
                    f"unknown config key {item.key_or_group!r}; valid keys under {where}: {valid}"
                )
            node = node[part]


def _network_overrides(overrides: list[str], size: str) -> list[str]:
    """``task.network.KEY=V`` overrides the run's preset: it is spelled ``task.sizes.<size>.network.KEY=V``
    in the composed tree, where the preset sits before the size is chosen."""
    out = []
    for text in overrides:
        sign = text[0] if text[:1] in "+~" else ""
        body = text[len(sign) :]
        if body.startswith(("task.network.", "task.network=")):
            body = f"task.sizes.{size}.{body[len('task.') :]}"
        out.append(sign + body)
    return out


def compose_run(task: str, sampler: str, budget: str, overrides: list[str] | None = None) -> DictConfig:
    """The resolved config of one run (``overrides`` must not contain sweeps)."""
    return compose_seeds(task, sampler, budget, overrides)[0]


def compose_seeds(
    task: str, sampler: str, budget: str, overrides: list[str] | None = None, seeds: Sequence[int] = ()
) -> list[DictConfig]:
    """The resolved configs of one run per seed in ``seeds`` (or of the one run ``overrides`` give when
    ``seeds`` is empty), composed once: each is that composition with ``seed`` set, then resolved, as a
    ``seed=N`` override would give it."""
    for group, name in (("task", task), ("sampler", sampler), ("budget", budget)):
        _check_choice(group, name)
    choices = [f"task={task}", f"sampler={sampler}", f"budget={budget}"]
    base = _compose(choices)
    overrides = list(overrides or [])
    given = {item.key_or_group: item for item in parse_overrides(overrides)}
    size = given["budget.size"].value() if "budget.size" in given else base.budget.size
    overrides = _network_overrides(overrides, str(size))
    _check_keys(base, overrides)
    composed = _compose(choices + overrides) if overrides else base
    apply_size(composed, overrides)
    configs = []
    for seed in seeds or [None]:
        cfg = composed if len(seeds) <= 1 else copy.deepcopy(composed)
        if seed is not None:
            cfg.seed = seed
        OmegaConf.resolve(cfg)
        configs.append(cfg)
    return configs


SIZE_PARTS = ("network", "task", "budget")


def apply_size(cfg: DictConfig, overrides: list[str]) -> None:
    """Select the budget size's entry of the task's ``sizes`` mapping, the one place where a task spells
    what differs between budget sizes: ``network`` (the network preset, which becomes ``task.network``),
    ``task`` (task values at this size, e.g. EDM's augmentation probability under ``paper``) and ``budget``
    (budget values this task replaces at this size, e.g. EDM's FFHQ batch and learning rate). Keys given
    on the command line win over the entry. The mapping is then dropped, so the resolved config, the run's
    provenance record and both hashes hold only what this run uses: editing another size's entry leaves
    this run's hashes as they were."""
    name, size = cfg.task.get("name"), cfg.budget.get("size")
    sizes = cfg.task.get("sizes")
    if not sizes or size not in sizes:
        valid = ", ".join(sizes) if sizes else "none (the task config has no `sizes` mapping)"
        raise ValueError(f"task {name}: budget size {size!r} has no entry in task.sizes; valid: {valid}")
    entry = sizes[size]
    unknown = sorted(set(entry) - set(SIZE_PARTS))
    if unknown or "network" not in entry:
        raise ValueError(
            f"task {name}: task.sizes.{size} holds {', '.join(unknown) or 'no network'}; "
            f"an entry holds network (required), task and budget"
        )
    given = {item.key_or_group for item in parse_overrides(overrides)}
    with open_dict(cfg):
        cfg.task.network = entry.network
        for group in ("task", "budget"):
            part = entry.get(group)
            values = flatten(OmegaConf.to_container(part, resolve=True)) if part else {}  # type: ignore[arg-type]
            for key, value in values.items():
                if key.split(".")[0] in ("network", "sizes") or (
                    OmegaConf.select(cfg[group], key, default=_MISSING) is _MISSING
                ):
                    raise ValueError(
                        f"task {name}: task.sizes.{size}.{group}.{key} is not a {group} key; "
                        f"valid: {', '.join(k for k in cfg[group] if k not in ('network', 'sizes'))}"
                    )
                if f"{group}.{key}" not in given:
                    OmegaConf.update(cfg, f"{group}.{key}", value, merge=True)
        del cfg.task["sizes"]


def flatten(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dicts as dotted keys → leaf values (lists kept whole)."""
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            flat |= flatten(value, f"{prefix}{key}.")
        else:
            flat[f"{prefix}{key}"] = value
    return flat


_MISSING = object()


def expand_sweeps(overrides: list[str]) -> list[list[str]]:
    """Every combination of the comma-list overrides, each as a list of plain ``key=value`` strings."""
    parsed = parse_overrides(overrides)
    choices = []
    for item in parsed:
        prefix = "+" if item.is_add() else ""
        key = f"{prefix}{item.key_or_group}"
        if item.is_sweep_override():
            choices.append([f"{key}={value}" for value in item.sweep_string_iterator()])
        else:
            choices.append([f"{key}={item.get_value_element_as_str()}"])
    return [list(combo) for combo in itertools.product(*choices)] if choices else [[]]


def literal(text: str) -> str:
    """``text`` as an OmegaConf string value that is never read as an interpolation: ``${`` escaped, so a
    path such as ``--results /data/${USER}`` stays the characters it is."""
    return text.replace("${", "\\${")


def from_resolved(tree: dict[str, Any]) -> DictConfig:
    """The config of a resolved plain dict (``to_dict``'s, as launches hand runs to their processes): every
    string is taken literally (``literal``), since whatever it held was resolved already."""

    def escape(node: Any) -> Any:
        if isinstance(node, str):
            return literal(node)
        if isinstance(node, dict):
            return {key: escape(value) for key, value in node.items()}
        if isinstance(node, list):
            return [escape(value) for value in node]
        return node

    return OmegaConf.create(escape(tree))


def to_dict(cfg: DictConfig) -> dict[str, Any]:
    """Plain resolved dict of a config."""
    return OmegaConf.to_container(cfg, resolve=True)  # type: ignore[return-value]


def stable_hash(obj: Any, length: int = 10) -> str:
    """Short SHA-256 of the canonical JSON of ``obj``."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:length]


def _without(tree: dict[str, Any], dotted: tuple[str, ...]) -> dict[str, Any]:
    """A copy of ``tree`` without the entries at the dotted paths."""
    out = dict(tree)
    for path in dotted:
        head, _, rest = path.partition(".")
        if rest and isinstance(out.get(head), dict):
            out[head] = _without(out[head], (rest,))
        elif not rest:
            out.pop(head, None)
    return out


def comparison_config(cfg: DictConfig) -> dict[str, Any]:
    """The part of a run's config that every sampler of a comparison must share."""
    return _without(to_dict(cfg), NOT_COMPARED)


def config_hash(cfg: DictConfig) -> str:
    """Hash of everything that determines a run's numbers (locations and the device excluded)."""
    return stable_hash(_without(to_dict(cfg), (*LOCATION_KEYS, *OBSERVER_KEYS)))


def comparison_hash(cfg: DictConfig) -> str:
    """Hash of ``comparison_config``."""
    return stable_hash(comparison_config(cfg))


def sampler_params(cfg: DictConfig) -> dict[str, Any]:
    """The sampler's constructor parameters: its config group minus ``name``."""
    params = to_dict(cfg)["sampler"]
    params.pop("name")
    return params


def sampler_label(cfg: DictConfig) -> str:
    """The sampler's name, with the parameters that differ from its config file's defaults appended
    (``edm[p_mean=0.0]``) so that a sweep over sampler parameters gets distinct labels."""
    name = cfg.sampler.name
    defaults = OmegaConf.to_container(OmegaConf.load(config_file("sampler", name)), resolve=False)
    current = to_dict(cfg)["sampler"]
    changed = [
        f"{k}={v}"
        for k, v in sorted(current.items())
        if k in defaults and not (isinstance(defaults[k], str) and "${" in defaults[k]) and defaults[k] != v
    ]
    return f"{name}[{','.join(changed)}]" if changed else name

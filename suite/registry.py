"""Name → class registries for samplers, tasks, metrics and featurisers, filled lazily from entry points.

A plugin is a class decorated with ``@REGISTRY.register("name")`` in a module that the package providing it
declares under the registry's entry-point group, one entry per name, the entry's value the module (or
``module:Class``)::

    [project.entry-points."infonoise_suite.tasks"]
    mytask = "mypackage.mytask"

This distribution declares its own plugins the same way in ``pyproject.toml`` (groups
``infonoise_suite.tasks``, ``.samplers``, ``.metrics``, ``.featurizers``, ``.commands``; task configs through
``infonoise_suite.configs``), so the core names no plugin module. A lookup imports only the module that
declares the name (after the style of lm-evaluation-harness's lazy registry): ``METRICS.get("sei-fid")``
imports the DNA metrics and no image or text library, and ``names()`` reads the entry points without
importing anything, so a misspelt name is answered before torch is imported. Iterating a registry imports
every declared module (``suite list`` describes each class). A class registered in a module imported some
other way (``$SUITE_PLUGINS``, a test) is found too. A registry may check each class when it is registered
(the task registry checks the task contract): a class that fails is refused with a ``ContractError`` naming
it and each of its problems.

``tasks`` and ``baselines`` are common folder names (and ``baselines`` is OpenAI's package), so a folder of
that name in the working directory or earlier on ``sys.path`` would otherwise be imported in place of this
distribution's and leave the registry silently short. Before one of this distribution's plugin packages is
imported, it must be found beside ``suite`` (the folder that holds this distribution's packages, installed
or checked out); elsewhere, a ``ShadowedPackageError`` names the path found and the one expected.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
from collections.abc import Callable, Iterator
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Generic, TypeVar

T = TypeVar("T")

HOME = Path(__file__).resolve().parent.parent  # the folder holding suite/, tasks/, baselines/ …
NO_DESCRIPTION = "(no description)"


class UnknownNameError(KeyError):
    """Raised for a name that no plugin registered; the message lists the valid names."""

    def __str__(self) -> str:  # KeyError quotes its message; show it plainly
        return str(self.args[0])


class ContractError(ValueError):
    """Raised when a plugin class does not meet its registry's contract; the message names the class and
    each missing or invalid member with its valid choices."""


class ShadowedPackageError(ValueError):
    """Raised when a plugin package would be imported from outside this distribution; the message names
    the path found and the path expected."""


def check_own_package(name: str) -> None:
    """Refuse a plugin package ``name`` (dotted) whose top-level package is found anywhere but beside
    ``suite``, before importing it."""
    top = name.partition(".")[0]
    spec = importlib.util.find_spec(top)
    if spec is None:  # not found at all: importing it says so
        return
    expected = HOME / top
    # the package's own file, links followed (an editable install may link it): a namespace folder has none
    origin = Path(spec.origin).resolve() if spec.origin else None
    if origin != expected / "__init__.py":
        locations = [str(Path(folder).resolve()) for folder in spec.submodule_search_locations or []]
        where = ", ".join(locations) if origin is None or origin.name == "__init__.py" else str(origin)
        raise ShadowedPackageError(
            f"the plugin package {top!r} is found at {where}, not at {expected} beside suite: "
            f"a folder or module named {top} in the working directory or earlier on sys.path shadows this "
            "suite's; rename it or run from another directory"
        )


def description(cls: type) -> str:
    """The first line of a plugin class's docstring, or ``NO_DESCRIPTION``."""
    lines = (cls.__doc__ or "").strip().splitlines()
    return lines[0] if lines else NO_DESCRIPTION


class Registry(Generic[T]):
    """A registry of named plugin classes of one kind, filled lazily from the entry points of ``group``;
    ``check`` (if given) returns the problems of a class, and a class with any is refused at registration."""

    def __init__(self, kind: str, group: str, check: Callable[[type], list[str]] | None = None) -> None:
        self.kind = kind
        self.group = group
        self._check = check
        self._entries: dict[str, type[T]] = {}

    def register(self, name: str) -> Callable[[type[T]], type[T]]:
        """Class decorator that registers ``cls`` under ``name`` (names are unique) once it passes the
        registry's check."""

        def decorate(cls: type[T]) -> type[T]:
            problems = self._check(cls) if self._check is not None else []
            if problems:
                where = f"{getattr(cls, '__module__', '?')}.{getattr(cls, '__qualname__', cls)!s}"
                raise ContractError(
                    f"{self.kind} class {where} (registered as {name!r}) is refused: " + "; ".join(problems)
                )
            existing = self._entries.get(name)
            if existing is not None and existing.__qualname__ != cls.__qualname__:
                raise ValueError(f"{self.kind} name {name!r} is already taken by {existing.__module__}")
            self._entries[name] = cls
            cls.name = name  # type: ignore[attr-defined]
            return cls

        return decorate

    def _load(self, name: str) -> None:
        """Import the module that the entry point ``name`` declares; it must register ``name`` (or be, as
        ``module:Class``, the class to register under it)."""
        entry = declared(self.group)[name]
        if entry.dist is not None and entry.dist.name == DISTRIBUTION:
            check_own_package(entry.module)
        loaded = entry.load()
        if name in self._entries:
            return
        if isinstance(loaded, type):
            self.register(name)(loaded)
            return
        others = sorted(n for n, cls in self._entries.items() if cls.__module__ == entry.module)
        raise ContractError(
            f"entry point {name} = {entry.value} of group {self.group} registers no {self.kind} named "
            f"{name!r} (it registers: {', '.join(others) or 'none'}); an entry point's name is the name its "
            "module registers"
        )

    def names(self) -> list[str]:
        """All declared and registered names, sorted; imports nothing."""
        return sorted({*declared(self.group), *self._entries})

    def get(self, name: str) -> type[T]:
        """The class registered as ``name``, importing only the module that declares it; an unknown name
        raises with the list of valid names."""
        if name not in self._entries and name in declared(self.group):
            self._load(name)
        try:
            return self._entries[name]
        except KeyError:
            valid = ", ".join(self.names())
            raise UnknownNameError(f"unknown {self.kind} {name!r}; valid {self.kind}s: {valid}") from None

    def __iter__(self) -> Iterator[tuple[str, type[T]]]:
        """Every (name, class), each declared module imported."""
        return iter((name, self.get(name)) for name in self.names())


DISTRIBUTION = "infonoise-suite"
PLUGINS_ENV = "SUITE_PLUGINS"


@functools.cache
def declared(group: str) -> dict[str, EntryPoint]:
    """The entry points of ``group`` by name, from every installed distribution; a name that two
    distributions declare is refused, naming both."""
    found: dict[str, EntryPoint] = {}
    for entry in entry_points(group=group):
        other = found.get(entry.name)
        if other is not None and other.value != entry.value:
            raise ValueError(
                f"{group}: {entry.name!r} is declared twice, as {other.value} and as {entry.value}; "
                "uninstall one of the packages that declare it"
            )
        found[entry.name] = entry
    return found


def own_packages() -> list[str]:
    """The top-level plugin packages of this distribution: those its entry points name, less ``suite``."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        entries = distribution(DISTRIBUTION).entry_points
    except PackageNotFoundError:
        return []
    return sorted(
        {entry.module.partition(".")[0] for entry in entries if entry.group.startswith("infonoise_suite.")}
        - {"suite"}
    )


def import_plugins() -> None:
    """Check that this distribution's plugin packages are its own (``check_own_package``: a shadowing folder
    is refused before anything heavy is imported), then import the modules named in ``$SUITE_PLUGINS``
    (comma list), e.g. extra feature extractors."""
    for name in own_packages():
        check_own_package(name)
    for name in os.environ.get(PLUGINS_ENV, "").split(","):
        if name.strip():
            importlib.import_module(name.strip())

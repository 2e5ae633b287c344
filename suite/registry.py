"""Name → class registries for samplers, tasks and metrics.

A plugin is one module that decorates its class with ``@REGISTRY.register("name")``. The plugin modules
(every module of ``baselines/`` plus ``suite.noise.infonoise`` for samplers, every module of ``tasks/`` for
tasks, every module of ``suite/metrics/`` plus the modalities' metric modules (image FID, DNA Sei, text MAUVE,
points) for metrics and featurisers) are imported on the first lookup,
so every name is found in a fresh interpreter whatever was imported before, and third-party packages can add
modules through the entry-point groups ``infonoise_suite.samplers`` / ``.tasks`` / ``.metrics`` /
``.featurizers``. Adding a plugin therefore needs no edit to any existing file. A registry may check each
class when it is registered (the task registry checks the task contract): a class that fails is refused with
a ``ContractError`` naming it and each of its problems.

The plugin packages are this distribution's own: ``tasks`` and ``baselines`` are common folder names (and
``baselines`` is OpenAI's package), so a folder of that name in the working directory or earlier on
``sys.path`` would otherwise be imported in their place and leave the registry silently short. Before it
is imported, each plugin package must be found beside ``suite`` (the folder that holds this distribution's
packages, installed or checked out); elsewhere, a ``ShadowedPackageError`` names the path found and the one
expected.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import pkgutil
from collections.abc import Callable, Iterator
from importlib.metadata import entry_points
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
    """A registry of named plugin classes of one kind, filled lazily from plugin packages; ``check`` (if
    given) returns the problems of a class, and a class with any is refused at registration."""

    def __init__(
        self,
        kind: str,
        packages: tuple[str, ...],
        entry_point_group: str,
        check: Callable[[type], list[str]] | None = None,
    ) -> None:
        self.kind = kind
        self._packages = packages
        self._group = entry_point_group
        self._check = check
        self._entries: dict[str, type[T]] = {}
        self._discovered = False

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

    def _discover(self) -> None:
        if self._discovered:
            return
        self._discovered = True
        for package_name in self._packages:
            check_own_package(package_name)
            package = importlib.import_module(package_name)
            for module in pkgutil.iter_modules(getattr(package, "__path__", [])):
                if not module.name.startswith("_"):
                    importlib.import_module(f"{package_name}.{module.name}")
        for entry in entry_points(group=self._group):
            entry.load()

    def names(self) -> list[str]:
        """All registered names, sorted."""
        self._discover()
        return sorted(self._entries)

    def get(self, name: str) -> type[T]:
        """The class registered as ``name``; an unknown name raises with the list of valid names."""
        self._discover()
        try:
            return self._entries[name]
        except KeyError:
            valid = ", ".join(self.names())
            raise UnknownNameError(f"unknown {self.kind} {name!r}; valid {self.kind}s: {valid}") from None

    def __iter__(self) -> Iterator[tuple[str, type[T]]]:
        self._discover()
        return iter(sorted(self._entries.items()))


PLUGINS_ENV = "SUITE_PLUGINS"
OWN_PACKAGES = ("tasks", "baselines", "infonoise_modalities")  # this distribution's plugin packages


def import_plugins() -> None:
    """Check that this distribution's plugin packages are its own (``check_own_package``: a shadowing folder
    is refused before anything heavy is imported), then import the modules named in ``$SUITE_PLUGINS``
    (comma list), e.g. extra feature extractors."""
    for name in OWN_PACKAGES:
        check_own_package(name)
    for name in os.environ.get(PLUGINS_ENV, "").split(","):
        if name.strip():
            importlib.import_module(name.strip())

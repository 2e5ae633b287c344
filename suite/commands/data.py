"""``suite data TASK [SRC] DEST``: download or convert a task's real data set (``Task.prepare``)."""

from __future__ import annotations

import argparse

HELP = "download or convert a task's real data set: suite data TASK [SRC] DEST"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("task")
    parser.add_argument("paths", nargs="+", metavar="[SRC] DEST")
    parser.add_argument(
        "--unpinned-archive",
        action="store_true",
        help="dna only: a re-released DDSM archive; check it against the Zenodo record (when reachable) "
        "instead of the pinned md5 and size",
    )


def run(args: argparse.Namespace) -> int:
    import shutil
    from pathlib import Path

    from suite.config import check_names

    check_names(args.task, None, None)
    from suite.launch.plan import resolve_task
    from suite.task import TASKS

    if len(args.paths) > 2:
        raise ValueError(f"suite data takes [SRC] DEST, got {len(args.paths)} paths: {' '.join(args.paths)}")
    source, dest = (None, args.paths[0]) if len(args.paths) == 1 else args.paths
    task = resolve_task(args.task)
    if args.unpinned_archive and task != "dna":
        raise ValueError(f"--unpinned-archive applies to `suite data dna` only, not to {task!r}")
    options = {"unpinned_archive": True} if args.unpinned_archive else {}
    folder = Path(dest).expanduser()
    created = not folder.exists()
    try:
        TASKS.get(task).prepare(source, dest, **options)
    except OSError as err:  # no network (URLError), a refused connection, a full disk
        if created and folder.is_dir() and not any(p.is_file() for p in folder.rglob("*")):
            shutil.rmtree(folder)  # only the empty folders this command made
        why = getattr(err, "reason", None) or err.strerror or err
        raise ValueError(
            f"suite data {task}: {why}; nothing kept in {dest}. Without internet here, download the data "
            f"elsewhere (README, Data) and run `suite data {task} SRC DEST` with the downloaded file"
        ) from err
    return 0

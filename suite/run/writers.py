"""The records a training loop's events (``suite.run.events``) leave, one writer per record.

* ``stats.jsonl``: one row per tick, ``{nimg, kimg, loss, sec_per_kimg, wall_time, lr}`` with ``compile_s``
  in the tick that compiled (``StatsWriter``);
* the console (and so ``log.txt``): a line per tick with the pace and the ETA, and per evaluation a line as
  it starts and one per metric as it ends (``ConsoleWriter``);
* ``run.json``: status "running" with the point and wall time at each checkpoint, and the compilation's
  account (``RunJsonWriter``);
* ``sampler.jsonl``: the sampler's density at the start of a run and after each rebuild (``SamplerLog``);
* the live loggers of ``suite.watch`` (TensorBoard, W&B): each tick's loss and pace and each evaluation's
  values at step = processed examples (``subscribe_watchers``).

Every write asks the run folder's lease first (``suite.records``); ``subscribe_writers`` subscribes them all
for the main rank.
"""

from __future__ import annotations

from suite.noise.sampler import NoiseSampler
from suite.records import RunDirectory, append_jsonl
from suite.run.events import Checkpointed, Compiled, Evaluated, Evaluating, Events, Stepped, Ticked
from suite.run.provenance import density_row
from suite.watch import Watchers, evaluation_line, format_eta


def stats_row(tick: Ticked) -> dict[str, float]:
    """The ``stats.jsonl`` row of a tick."""
    row = {
        "nimg": tick.nimg,
        "kimg": tick.nimg / 1000,
        "loss": tick.loss,
        "sec_per_kimg": round(tick.sec_per_kimg, 3),
        "wall_time": round(tick.wall_time, 2),
        "lr": tick.lr,
    }
    if tick.compile_seconds:
        row["compile_s"] = round(tick.compile_seconds, 2)
    return row


class ConsoleWriter:
    """The console lines of a run, each opened by ``[task/sampler/seedN]``."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def tick(self, tick: Ticked) -> None:
        counted = "" if not tick.evaluations_left else f" incl. {tick.evaluations_left} evaluation(s)"
        if tick.evaluations_left and not tick.evaluations_timed:
            counted = f" + {tick.evaluations_left} evaluation(s), timed at the first"
        compiled = f"  (compile {tick.compile_seconds:.1f} s apart)" if tick.compile_seconds else ""
        print(
            f"{self.prefix} kimg {tick.nimg / 1000:.1f}/{tick.total_nimg / 1000:.1f}  loss {tick.loss:.4f}  "
            f"sec/kimg {tick.sec_per_kimg:.2f}  ETA {format_eta(tick.eta_seconds)}{counted}{compiled}",
            flush=True,
        )

    def evaluating(self, event: Evaluating) -> None:
        print(f"{self.prefix} evaluating at kimg {event.nimg / 1000:g}", flush=True)

    def evaluated(self, event: Evaluated) -> None:
        for row in event.rows:
            print(f"{self.prefix} {evaluation_line(row)}", flush=True)


class RunJsonWriter:
    """``run.json``'s progress fields."""

    def __init__(self, folder: RunDirectory) -> None:
        self.dir = folder

    def checkpointed(self, event: Checkpointed) -> None:
        self.dir.update(status="running", kimg=event.nimg / 1000, wall_time=event.wall_time)

    def compiled(self, event: Compiled) -> None:
        self.dir.update(compile=event.record)


class SamplerLog:
    """``sampler.jsonl``: the density at ``nimg`` after each rebuild not yet written."""

    def __init__(self, folder: RunDirectory, sampler: NoiseSampler) -> None:
        self.dir, self.sampler = folder, sampler
        self.logged = len(sampler.history)  # the rebuilds restored with the sampler were written before

    def initial(self, nimg: int) -> None:
        """The density the run starts from."""
        append_jsonl(self.dir.sampler_log, [density_row(self.sampler, nimg, {})])

    def stepped(self, event: Stepped) -> None:
        if len(self.sampler.history) > self.logged:
            append_jsonl(
                self.dir.sampler_log, [density_row(self.sampler, event.nimg, self.sampler.history[-1])]
            )
            self.logged = len(self.sampler.history)


def subscribe_watchers(events: Events, watchers: Watchers) -> None:
    """Each tick's loss and pace and each evaluation's values to the live loggers."""
    events.subscribe(
        Ticked, lambda t: watchers.log(t.nimg, {"train/loss": t.loss, "train/sec_per_kimg": t.sec_per_kimg})
    )
    events.subscribe(
        Evaluated, lambda e: watchers.log(e.nimg, {f"eval/{row['metric']}": row["value"] for row in e.rows})
    )


def subscribe_writers(events: Events, folder: RunDirectory, sampler: NoiseSampler, prefix: str) -> SamplerLog:
    """The main rank's record writers (the live loggers aside: ``subscribe_watchers``); returns the sampler
    log, whose initial row the run writes when it starts over."""
    console, run_json, sampler_log = ConsoleWriter(prefix), RunJsonWriter(folder), SamplerLog(folder, sampler)
    events.subscribe(Ticked, lambda tick: append_jsonl(folder.stats, [stats_row(tick)]))
    events.subscribe(Ticked, console.tick)
    events.subscribe(Evaluating, console.evaluating)
    events.subscribe(Evaluated, console.evaluated)
    events.subscribe(Checkpointed, run_json.checkpointed)
    events.subscribe(Compiled, run_json.compiled)
    events.subscribe(Stepped, sampler_log.stepped)
    return sampler_log

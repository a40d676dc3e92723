#!/usr/bin/env bash
# Builds the cached CPU-only SGLang test venvs the resolver tests run SGLang's own argument
# resolution in (recipe: ../shared/reference/resolver-notes.md §1):
#
#   ${MAMBACONSOLE_TEST_CACHE:-~/.cache/mambaconsole-test}/venvs/sglang-<version>/
#
#   python3.11 -m venv V
#   V/bin/pip install --no-deps sglang==<version>
#   V/bin/pip install torch==2.13.0                        # the CPU build; never CUDA torch
#   V/bin/pip install -c <pins from sglang's METADATA + installed torch> -r tests/sglang-venvs/requirements-<version>.txt
#
# torchvision is NOT installed: the tests put tests/sglang-venvs/stub on PYTHONPATH (test-only
# import stub). Idempotent: a venv whose stamp (hash of this recipe) matches is left alone, so a
# rerun takes well under a second. A lock serialises concurrent runs (several worktrees share
# the cache). Usage: bash tests/sglang_venvs.sh [VERSION...]   (default: 0.5.11 0.5.23)
set -euo pipefail
cd "$(dirname "$0")/.."

versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(0.5.11 0.5.23)
cache=${MAMBACONSOLE_TEST_CACHE:-$HOME/.cache/mambaconsole-test}
spec=tests/sglang-venvs
py=${SGLANG_VENV_PYTHON:-python3.11}
mkdir -p "$cache/venvs"

# torch, triton and friends are big: keep pip quiet but not silent, and never byte-compile twice
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1

quiet_pip() {  # pip, minus its noise about the packages we deliberately leave out (--no-deps)
  "$@" 2> >(grep -vE "^WARNING: Location|^ERROR: pip's dependency resolver|^sglang [0-9.]+ requires " >&2)
}

recipe_hash() {  # the stamp: what would make a rebuild necessary
  local v=$1
  { echo "$v"; "$py" --version 2>&1; cat "$0" "$spec/common.txt" "$spec/requirements-$v.txt"; } | sha256sum | cut -d' ' -f1
}

build() {
  local v=$1 venv=$cache/venvs/sglang-$1 t0=$SECONDS
  local want stamp=$cache/venvs/sglang-$1/.mambaconsole-stamp
  want=$(recipe_hash "$v")
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$venv/bin/python" ]; then
    echo "sglang_venvs: sglang-$v ready ($venv)"
    return 0
  fi
  echo "sglang_venvs: building sglang-$v in $venv (about 1-2 minutes)"
  rm -rf "$venv"
  "$py" -m venv "$venv"
  local pip=(quiet_pip "$venv/bin/python" -m pip install -q)
  echo "sglang_venvs: [$v] sglang==$v (--no-deps)"
  "${pip[@]}" --no-deps "sglang==$v"
  echo "sglang_venvs: [$v] torch==2.13.0 (CPU build)"
  "${pip[@]}" "torch==2.13.0"
  local cons=$venv/.mambaconsole-constraints.txt
  # pins (==, <, >) from the wheel's own Requires-Dist, without torch*, extras and
  # aarch64-only markers; plus the torch just installed, so nothing can swap it for CUDA torch
  "$venv/bin/python" - "$v" >"$cons" <<'PY'
import importlib.metadata as md, re, sys
for req in md.requires("sglang") or []:
    name_part, _, marker = req.partition(";")
    name = re.match(r"[A-Za-z0-9_.-]+", name_part).group(0)
    if name.lower().startswith("torch") or "[" in name_part or "extra ==" in marker:
        continue
    if "aarch64" in marker and "x86_64" not in marker:
        continue
    if not re.search(r"[=<>]", name_part):
        continue
    print(req.strip())
print("torch==" + md.version("torch"))
PY
  echo "sglang_venvs: [$v] $(grep -vc '^#' "$spec/requirements-$v.txt") listed packages + common.txt"
  (cd "$spec" && "${pip[@]}" -c "$cons" -r "requirements-$v.txt")
  # the venv must stay CPU-only
  if "$venv/bin/python" -m pip list 2>/dev/null | grep -iE '^(nvidia-|torchvision )'; then
    echo "sglang_venvs: [$v] CUDA packages or torchvision got installed; refusing this venv" >&2
    rm -rf "$venv"
    return 1
  fi
  echo "$want" >"$stamp"
  echo "sglang_venvs: sglang-$v built in $((SECONDS - t0)) s ($(du -sh "$venv" | cut -f1))"
}

exec 9>"$cache/venvs/.lock"
flock 9
t0=$SECONDS
for v in "${versions[@]}"; do
  build "$v"
done
echo "sglang_venvs: done in $((SECONDS - t0)) s"

#!/usr/bin/env bash
# Runs mambaconsole's whole test suite. Installs what the tests need when it is missing:
#   - Debian packages openssh-server (a real sshd on 127.0.0.1), tmux, librsvg2-bin
#     (as root, or through sudo);
#   - the project venv .venv with the project and its `test` extra;
#   - the SGLang test venvs (tests/sglang_venvs.sh, cached by version under
#     ${MAMBACONSOLE_TEST_CACHE:-~/.cache/mambaconsole-test}) and the SGLang server venv the
#     real-server tests launch (tests/sglang_server_venv.sh, same cache).
# Quick when all of it is already there. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
[ -x /usr/sbin/sshd ] || missing+=(openssh-server)
command -v tmux >/dev/null || missing+=(tmux)
command -v rsvg-convert >/dev/null || missing+=(librsvg2-bin)
if [ ${#missing[@]} -gt 0 ]; then
  echo "tests/run.sh: installing ${missing[*]}"
  if [ "$(id -u)" = 0 ]; then sudo=""; elif command -v sudo >/dev/null; then sudo="sudo"; else
    echo "tests/run.sh: need root or sudo to install: ${missing[*]}" >&2; exit 1; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
stamp=.venv/.mambaconsole-installed
want=$(cat pyproject.toml | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "tests/run.sh: installing the project and its test extra into .venv (pip, a few minutes the first time; log: .venv/pip.log)"
  if ! { .venv/bin/python -m pip install -q --upgrade pip && .venv/bin/python -m pip install -q -e '.[test]'; } >.venv/pip.log 2>&1; then
    cat .venv/pip.log >&2; echo "tests/run.sh: pip install failed (log above)" >&2; exit 1
  fi
  echo "$want" > "$stamp"
fi

if [ -f tests/sglang_venvs.sh ]; then
  bash tests/sglang_venvs.sh
fi
if [ -f tests/sglang_server_venv.sh ]; then
  bash tests/sglang_server_venv.sh
fi

exec .venv/bin/python -m pytest "$@"

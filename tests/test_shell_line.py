"""shell_line: an argv as one line of bash. The check is bash itself: the line is run by a real
``bash -c`` that prints its arguments NUL-separated, which must give back the argv."""

from __future__ import annotations

import os
import subprocess

from hypothesis import given, settings, strategies as st

from mambaconsole.sglang.text import shell_line

HOSTILE = [
    "python3", "-m", "sglang.launch_server", "--model-path", "a b", "it's", "$(touch /tmp/x)", "`id`",
    "line1\nline2", "\x1b[31mred\x1b[0m", "tab\there", "cr\rx", "\x85c1", "nul-free ✓ 模型", "", "\\", "'\\'",
    "\x7f", "\u2028sep", "\U0001f600",
]


def bash_argv(line: str) -> list[str]:
    env = dict(os.environ, LC_ALL="C.UTF-8")
    out = subprocess.run(["bash", "-c", "printf '%s\\0' " + line], capture_output=True, env=env, check=True).stdout
    return [a.decode("utf-8", "surrogateescape") for a in out.split(b"\0")[:-1]]


def test_hostile_argv_is_one_line_and_round_trips_through_bash():
    line = shell_line(HOSTILE)
    assert "\n" not in line and "\r" not in line and "\x1b" not in line
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in line)
    assert bash_argv(line) == HOSTILE


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                        max_size=12), min_size=1, max_size=4))
def test_any_argv_round_trips_through_bash(argv):
    line = shell_line(argv)
    assert "\n" not in line
    assert bash_argv(line) == argv

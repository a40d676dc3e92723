"""Console settings (TOML per host, flags win) and the shipped themes."""

from __future__ import annotations

import pytest

from mambaconsole.errors import ConsoleError
from mambaconsole.session import settings as cfg
from mambaconsole.ui.themes import load_themes

TOML = """
[hosts."*"]
session = "shared"
poll_s = 5

[hosts.gpu-node]
python = "/opt/sglang/.venv/bin/python"
port = 31000
env = { HF_HOME = "/data/hf" }
launch = "--model-path Qwen/Qwen3.6-27B --tp-size 1"
"""


def test_host_section_then_star_then_defaults_and_flags_win(tmp_path):
    p = tmp_path / "config.toml"
    p.write_text(TOML)
    s = cfg.load("gpu-node", path=p)
    assert (s.python, s.port, s.session, s.poll_s) == ("/opt/sglang/.venv/bin/python", 31000, "shared", 5.0)
    assert s.env == {"HF_HOME": "/data/hf"}
    assert s.launch == ("--model-path", "Qwen/Qwen3.6-27B", "--tp-size", "1")
    other = cfg.load("other", path=p)
    assert (other.python, other.port, other.session) == ("python3", 30000, "shared")
    flagged = cfg.load("gpu-node", {"port": 32000, "python": None}, path=p)
    assert (flagged.port, flagged.python) == (32000, "/opt/sglang/.venv/bin/python")


@pytest.mark.parametrize("text, word", [
    ('[hosts.h]\nport = "x"\n', "port"),
    ('[hosts.h]\ncolour = "red"\n', "unknown setting"),
    ('[hosts.h\n', "config.toml"),
    ('[hosts.h]\nenv = { "BAD NAME" = "1" }\n', "env"),
])
def test_bad_settings_are_one_line_errors(tmp_path, text, word):
    p = tmp_path / "config.toml"
    p.write_text(text)
    with pytest.raises(ConsoleError) as e:
        cfg.load("h", path=p)
    assert word in str(e.value) and "\n" not in str(e.value)


def test_themes_dark_light_high_contrast_ship():
    themes = {t.name: t for t in load_themes()}
    assert {"mamba-dark", "mamba-light", "mamba-contrast"} <= set(themes)
    assert themes["mamba-dark"].dark and not themes["mamba-light"].dark
    assert themes["mamba-contrast"].background.upper() in ("#000000",)

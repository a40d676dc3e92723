"""``mambaconsole report`` leaks no secret and no terminal escape (issue 13 items 5 and 6): nine
kinds of secret planted in a run's argv and log, each value a fresh random string, none of
which may appear in the report; an argv element and a log line carrying escape sequences."""

from __future__ import annotations

import asyncio
import secrets
import subprocess
import sys
import textwrap

import pytest

from mambaconsole.node.local import LocalNode
from mambaconsole.node.runs import RunStore
from mambaconsole.redact import redact_secrets

pytestmark = pytest.mark.timeout(120)


def _r(prefix: str = "", n: int = 24) -> str:
    return prefix + secrets.token_hex(n)[:n]


def planted() -> dict[str, str]:
    """kind -> secret value (random each run, so no expectation is copied from the code)."""
    return {
        "api_key_flag": _r("k"), "admin_api_key_flag": _r("a"), "hf_token_flag": _r("hf_", 34),
        "dump_api_key": _r("d"), "url_password": _r("p"), "query_token": _r("q"),
        "bearer": _r("b", 40), "openai_env": _r("sk-", 40), "aws_secret": _r("w", 40),
    }


def log_text(s: dict[str, str]) -> str:
    return textwrap.dedent(f"""\
        [2026-10-01 12:00:00] server_args=ServerArgs(model_path='/m', api_key='{s["dump_api_key"]}', admin_api_key=None, max_total_tokens=4096, tokenizer_path='/m')
        [2026-10-01 12:00:01] Downloading from https://bob:{s["url_password"]}@mirror.example.com/models/x.safetensors
        [2026-10-01 12:00:02] GET https://hub.example.com/api/resolve?rev=main&token={s["query_token"]} 200
        [2026-10-01 12:00:03] request headers: {{'Authorization': 'Bearer {s["bearer"]}'}}
        [2026-10-01 12:00:04] env: OPENAI_API_KEY={s["openai_env"]} AWS_SECRET_ACCESS_KEY={s["aws_secret"]}
        [2026-10-01 12:00:05] \x1b]0;pwned title\x07\x1b[2Jcleared?
        """)


def argv_of(s: dict[str, str], script: str, log: str) -> list[str]:
    return [sys.executable, script, log, "--api-key", s["api_key_flag"], f"--admin-api-key={s['admin_api_key_flag']}",
            "--hf-token", s["hf_token_flag"], "--chat-template", "\x1b]0;title\x07[INST] x [/INST]",
            "--max-total-tokens", "4096"]


def test_redact_secrets_finds_the_nine_kinds_and_keeps_the_rest():
    s = planted()
    text = " ".join(argv_of(s, "x.py", "log")) + "\n" + log_text(s)
    out, n = redact_secrets(text)
    for kind, value in s.items():
        assert value not in out, kind
    assert n == 9
    # what is not a secret stays: a None key, token counts, the tokenizer path, the URL's user and host
    assert "admin_api_key=None" in out and "max_total_tokens=4096" in out and "--max-total-tokens 4096" in out
    assert "tokenizer_path='/m'" in out and "https://bob:<secret>@mirror.example.com" in out
    assert "api_key='<secret>'" in out and "rev=main&token=<secret>" in out


PRINT_AND_FAIL = textwrap.dedent("""
    import sys
    sys.stdout.write(open(sys.argv[1], encoding="utf-8").read())
    sys.stdout.flush()
    sys.exit(1)
""")


def test_report_leaks_no_secret_and_no_escape(node_home, tmp_path):
    s = planted()
    log = tmp_path / "server.log"
    log.write_text(log_text(s))
    script = tmp_path / "print_and_fail.py"
    script.write_text(PRINT_AND_FAIL)

    async def go():
        async with LocalNode() as node:
            store = RunStore(node)
            run = await store.start(argv_of(s, str(script), str(log)))
            for _ in range(400):
                if (await store.get(run.run_id)).state == "exited":
                    return
                await asyncio.sleep(0.05)

    asyncio.run(go())
    p = subprocess.run([sys.executable, "-m", "mambaconsole", "report", "local"], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    report = p.stdout
    for kind, value in s.items():
        assert value not in report, kind
    assert "\x1b" not in report and "\x07" not in report
    assert "--api-key '<secret>'" in report or "--api-key <secret>" in report
    assert "[INST] x [/INST]" in report  # the rest of the argv stays readable
    last = report.strip().splitlines()[-1]
    assert "secrets replaced by <secret>" in last

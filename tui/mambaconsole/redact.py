"""Secrets in text a person is about to paste somewhere (``mambaconsole report``).

:func:`redact_secrets` replaces every secret value it recognises with ``<secret>`` and counts
them. It knows them by where they stand, not by guessing at random-looking words:

- a command-line option or a ``name=value`` / ``name: value`` pair whose name ends in ``key``
  (``--api-key``, ``--admin-api-key``, ``OPENAI_API_KEY``, ``AWS_SECRET_ACCESS_KEY``),
  ``token`` (``--hf-token``, ``HF_TOKEN``), ``secret``, ``password``/``passwd``, or
  ``credentials``; SGLang's ServerArgs dump writes ``api_key='...'`` (``server_args.py``, every
  version) and ``admin_api_key`` (0.5.x);
- the password of a URL (``https://user:PASSWORD@host``);
- a URL query parameter named ``token``, ``access_token``, ``api_key``, ``key``, ``sig``,
  ``signature``, ``password`` or ``secret`` (``?token=...``);
- an ``Authorization: Bearer``/``Basic`` credential, or ``Bearer`` followed by a token;
- tokens whose shape names them wherever they stand: Hugging Face ``hf_...``, OpenAI
  ``sk-...``, GitHub ``ghp_``/``gho_``/``ghs_``/``github_pat_...``, AWS access key ids ``AKIA...``.

Values that say nothing (``None``, ``null``, ``''``, ``False``, ``true``) are kept, so a dump
that shows ``api_key=None`` still tells the reader no key was set.
"""

from __future__ import annotations

import re

__all__ = ["PLACEHOLDER", "argv_secrets", "find_secrets", "redact_secrets"]

PLACEHOLDER = "<secret>"
#: shorter values are not taken for secrets (``--api-key x`` in a test is not worth a gap)
MIN_LEN = 4

# a name that holds a secret: ends in key / token / secret / password / passwd / credentials
# (``--max-total-tokens``, ``tokenizer_path``, ``kv_cache_dtype`` do not)
_NAME = r"[A-Za-z0-9_.-]*(?:key|token|secret|password|passwd|credentials)"
_VALUE = r"""(?:'[^'\n]*'|"[^"\n]*"|[^\s'",;&|)}\]]+)"""
_EMPTY = {"none", "null", "''", '""', "false", "true", "", "<secret>", "'<secret>'", '"<secret>"'}

_RULES: list[tuple[re.Pattern, str]] = [
    # --api-key VALUE, --hf-token=VALUE
    (re.compile(r"(?<![\w-])(--" + _NAME + r")(=|\s+)(" + _VALUE + ")", re.IGNORECASE), "flag"),
    # api_key='...', OPENAI_API_KEY=sk-..., "hf_token": "...", password: x
    (re.compile(r"(?<![\w-])(" + _NAME + r"""["']?)(\s*[=:]\s*)(""" + _VALUE + ")", re.IGNORECASE), "pair"),
    # scheme://user:password@host
    (re.compile(r"([a-z][a-z0-9+.-]*://[^\s/:@]+)(:)([^\s/@]+)(?=@)", re.IGNORECASE), "url"),
    # ?token=... &sig=...
    (re.compile(r"([?&](?:token|access_token|api_key|apikey|key|sig|signature|password|secret))(=)([^&\s'\"#]+)",
                re.IGNORECASE), "query"),
    # Authorization: Bearer x / Basic x, or a bare "Bearer x"
    (re.compile(r"((?:authorization\s*[:=]\s*)?(?:bearer|basic))(\s+)([A-Za-z0-9._~+/=-]{8,})", re.IGNORECASE),
     "bearer"),
]
# tokens whose own shape says what they are
_SHAPES = re.compile(r"(?<![A-Za-z0-9])(?:hf_[A-Za-z0-9]{20,}|sk-[A-Za-z0-9_-]{20,}|gh[opsur]_[A-Za-z0-9]{20,}"
                     r"|github_pat_[A-Za-z0-9_]{20,}|AKIA[0-9A-Z]{16})(?![A-Za-z0-9])")


def _bare(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def find_secrets(text: str) -> set[str]:
    """The secret values in ``text`` (see the module docstring), without their quotes."""
    found: set[str] = set()
    for pattern, _kind in _RULES:
        for m in pattern.finditer(text):
            value = _bare(m.group(3))
            if value.lower() not in _EMPTY and not value.startswith("<") and len(value) >= MIN_LEN:
                found.add(value)
    found.update(m.group(0) for m in _SHAPES.finditer(text))
    return found


def argv_secrets(argv: list[str]) -> set[str]:
    """The secret values of an argv: the word after an option whose name holds a secret
    (``--api-key VALUE``), or after its ``=`` (``--hf-token=VALUE``), and what
    :func:`find_secrets` finds in each element."""
    found: set[str] = set()
    flag = re.compile("--" + _NAME, re.IGNORECASE)
    for i, a in enumerate(argv):
        name, eq, value = a.partition("=")
        if flag.fullmatch(name):
            v = value if eq else (argv[i + 1] if i + 1 < len(argv) else "")
            if v and v.lower() not in _EMPTY and len(v) >= MIN_LEN:
                found.add(v)
        found |= find_secrets(a)
    return found


def redact_secrets(text: str, known: set[str] | frozenset[str] = frozenset()) -> tuple[str, int]:
    """(``text`` with every occurrence of each secret value replaced by ``<secret>``, how many
    distinct secret values were in it). The values are those :func:`find_secrets` finds in
    ``text`` plus ``known`` (e.g. :func:`argv_secrets` of the run's argv): once known, a value
    is replaced wherever it stands (a table cell, a dump, a URL). Never raises."""
    values = {v for v in find_secrets(text) | set(known) if len(v) >= MIN_LEN}
    n = 0
    for v in sorted(values, key=len, reverse=True):
        if v in text:
            n += 1
            text = text.replace(v, PLACEHOLDER)
    return text, n

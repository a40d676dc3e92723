"""Headless sessions: what the console does with a server apart from drawing it, without
Textual (no ``ui/`` import; tests/test_import_hygiene.py checks it).

- :mod:`mambaconsole.session.settings`: per-host settings (config.toml + flags).
- :mod:`mambaconsole.session.relaunch`: the relaunch loop (lock, stop, GPU free, start, follow).
- :mod:`mambaconsole.session.fleet`: the fleet view's data (a router's workers and each
  engine's own answers), used by ``mambaconsole fleet`` and its screen.
"""

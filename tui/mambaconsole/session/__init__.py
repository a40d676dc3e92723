"""Headless sessions: what the console does with a server apart from drawing it, without
Textual (no ``ui/`` import; tests/test_import_hygiene.py checks it).

- :mod:`mambaconsole.session.session`: :class:`~mambaconsole.session.session.Session`, one per
  server: its node, run, feeds, polls, backoff and state; a UI subscribes and draws.
- :mod:`mambaconsole.session.feed`: the session's one seam to the node (commands, streams, HTTP).
- :mod:`mambaconsole.session.intake`: log lines received and not folded in yet.
- :mod:`mambaconsole.session.demo`: the demo's simulated node.
- :mod:`mambaconsole.session.settings`: per-host settings (config.toml + flags).
- :mod:`mambaconsole.session.relaunch`: the relaunch loop (lock, stop, GPU free, start, follow).
- :mod:`mambaconsole.session.fleet`: the fleet view's data (a router's workers and each
  engine's own answers), used by ``mambaconsole fleet`` and its screen.
"""

"""Headless sessions: polling servers and routers without Textual (no ``ui/`` import).

:mod:`mambaconsole.session.fleet`: the fleet view's data (a router's workers and each engine's
own answers), used by ``mambaconsole fleet`` and its screen.
"""

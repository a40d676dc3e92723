"""``python -m mambaconsole.sim [--sim-*] SGLANG_ARGS...``: see :mod:`mambaconsole.sim.server`."""

from mambaconsole.sim.server import main

raise SystemExit(main())

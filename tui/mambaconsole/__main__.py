from mambaconsole.cli import main

raise SystemExit(main())

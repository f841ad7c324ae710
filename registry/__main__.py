from registry.cli import main

raise SystemExit(main())

from memplan.cli import main

raise SystemExit(main())

import sys

from profiling.cli import main

sys.exit(main())

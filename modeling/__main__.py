import sys

from modeling.cli import main

sys.exit(main())

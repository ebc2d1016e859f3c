"""``python -m modeling``: an alias of ``memplan`` for one release.

It runs ``python -m memplan`` in its place: modeling never imports the layer above it.
"""

import os
import sys

print("python -m modeling is now 'memplan'; this alias goes in the next release", file=sys.stderr)
os.execv(sys.executable, [sys.executable, "-m", "memplan", *sys.argv[1:]])

"""``python -m viewer.core.inspect --scan PATH LAYER MAG BATCH_SECONDS BATCH_ROWS VOLUME_PATH
CHUNK_SHAPE UNIT_SHAPE``: the child process of ``UnitScan`` (see ``viewer.core.inspect.scan``)."""

import sys

from viewer.core.inspect.scan import _scan_main

if len(sys.argv) == 10 and sys.argv[1] == "--scan":
    sys.exit(_scan_main(sys.argv[2:]))
print("usage: python -m viewer.core.inspect --scan PATH LAYER MAG BATCH_SECONDS BATCH_ROWS "
      "VOLUME_PATH CHUNK_SHAPE UNIT_SHAPE", file=sys.stderr)
sys.exit(2)

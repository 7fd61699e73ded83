"""``python -m viewer.core.inspect --scan PATH LAYER MAG BATCH_SECONDS BATCH_ROWS VOLUME_PATH
CHUNK_SHAPE UNIT_SHAPE``: the child process of ``UnitScan`` (see ``viewer.core.inspect.scan``)."""

import sys

from viewer.core.inspect.scan import _scan_main


def main(argv: list[str]) -> int:
    if len(argv) == 9 and argv[0] == "--scan":
        return _scan_main(argv[1:])
    print("usage: python -m viewer.core.inspect --scan PATH LAYER MAG BATCH_SECONDS BATCH_ROWS "
          "VOLUME_PATH CHUNK_SHAPE UNIT_SHAPE", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

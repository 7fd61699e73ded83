"""Without the ``precomputed`` extra's packages (Pillow, mmh3, compressed-segmentation,
compresso) the program still opens raw, gzip and compressed_segmentation volumes (the last
decoded in numpy), and a jpeg chunk or a murmurhash3-sharded scale is an error naming the
package and the extra."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

SCRIPT = r"""
import sys, json
for name in ("PIL", "mmh3", "compressed_segmentation", "compresso"):
    sys.modules[name] = None  # an import of it fails, as when it is not installed
import numpy as np
from viewer.format import FormatError, open_volume
out = {}
for name, path in json.loads(sys.argv[1]).items():
    try:
        v = open_volume(path)
        a = v.read(v.origin, v.shape)
        np.save(sys.argv[2] + "/" + name + ".npy", a)
        out[name] = "ok"
    except FormatError as exc:
        out[name] = str(exc)
print(json.dumps(out))
"""


def test_without_the_extra(pc: dict[str, Any], tmp_path: Any) -> None:
    import numpy as np

    names = ["raw", "gzip", "sharded_identity", "cseg32", "jpeg", "sharded_murmur"]
    paths = {n: str(pc[n][0]) for n in names}
    r = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(paths), str(tmp_path)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    for n in ("raw", "gzip", "sharded_identity", "cseg32"):
        assert got[n] == "ok", got[n]
        np.testing.assert_array_equal(np.load(tmp_path / f"{n}.npy"), pc[n][1][0])
    assert "pillow" in got["jpeg"] and "wkw-viewer[precomputed]" in got["jpeg"]
    assert "mmh3" in got["sharded_murmur"] and "wkw-viewer[precomputed]" in got["sharded_murmur"]

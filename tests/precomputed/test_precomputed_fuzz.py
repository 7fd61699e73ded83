"""Mutated compressed_segmentation chunks and shard files (bytes flipped, streams cut short)
read in a child process: every read gives voxels or a ``FormatError``, and the process never
crashes (the compressed-segmentation package, given an unchecked stream, can)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

SCRIPT = r"""
import json, sys, zlib
import numpy as np
from viewer.format import FormatError
from viewer.format.precomputed.codecs import ChunkCodec, CodecFailure
args = json.loads(sys.argv[1])
rng = np.random.default_rng(args["seed"])
codec = ChunkCodec("compressed_segmentation", np.dtype("<u4"), 1, (16, 16, 8), (8, 8, 4))
counts = {"ok": 0, "error": 0}
for path in args["chunks"]:
    data = open(path, "rb").read()
    name = path.rsplit("/", 1)[1]
    box = tuple(b - a for a, b in (map(int, p.split("-")) for p in name.split("_")))
    for _ in range(args["rounds"]):
        raw = bytearray(data)
        if rng.random() < 0.3:
            raw = raw[:int(rng.integers(0, len(raw)))]
        for _ in range(int(rng.integers(1, 6))):
            if raw:
                raw[int(rng.integers(0, len(raw)))] = int(rng.integers(0, 256))
        try:
            out = codec.decode(bytes(raw), box)
            assert out.shape == (1, 16, 16, 8)
            part = codec.decode_part(bytes(raw), box, (0, 0, 1), (box[0], box[1], 2))
            assert part.shape == (1, box[0], box[1], 1)
            counts["ok"] += 1
        except CodecFailure:
            counts["error"] += 1
print(json.dumps(counts))
"""


def test_mutated_compressed_segmentation_never_crashes(pc: dict[str, Any]) -> None:
    folder = pc["cseg32"][0] / "4_4_40"
    chunks = [str(p) for p in sorted(folder.iterdir())[:6]]
    r = subprocess.run([sys.executable, "-c", SCRIPT,
                        json.dumps({"seed": 29, "rounds": 60, "chunks": chunks})],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    counts = json.loads(r.stdout)
    assert counts["error"] > 0 and counts["ok"] + counts["error"] == 360

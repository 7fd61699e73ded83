"""Regressions: inputs that raised untyped errors or took unbounded
memory.  Each must be a ``FormatError`` (or a problem reported as one), bounded."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from viewer.format import FormatError, wkw
from viewer.format.webknossos import open_dataset
from viewer.format.webknossos.errors import PropertiesError
from viewer.format.webknossos.properties import MAX_LAYERS, read_properties


def _layer(name: str) -> dict[str, object]:
    return {"name": name, "category": "color", "dataFormat": "wkw",
            "boundingBox": {"topLeft": [0, 0, 0], "width": 8, "height": 8, "depth": 8},
            "elementClass": "uint8", "numChannels": 1,
            "wkwResolutions": [{"resolution": 1, "cubeLength": 8}]}


def test_properties_nested_1000_deep_is_a_format_error(tmp_path: Path) -> None:
    """It raised RecursionError; ``info`` and ``compare`` printed a traceback."""
    path = tmp_path / "datasource-properties.json"
    path.write_text('{"dataLayers": [], "scale": [1, 1, 1], "x": ' + "[" * 1000 + "]" * 1000
                    + "}")
    with pytest.raises(PropertiesError, match="nested 100[0-9] levels"):
        read_properties(path)
    run = subprocess.run([sys.executable, "-m", "viewer", "info", str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert "Traceback" not in run.stderr and run.returncode == 2, run.stderr


def test_brackets_inside_strings_do_not_count_as_nesting(tmp_path: Path) -> None:
    path = tmp_path / "datasource-properties.json"
    path.write_text(json.dumps({"dataLayers": [_layer("a" + "[{" * 500)], "scale": [1, 1, 1],
                                "note": "\\\"[[[" * 200}))
    props, problems = read_properties(path)
    assert [layer.name for layer in props.layers] == ["a" + "[{" * 500] and not problems


def test_raw_data_offset_past_2_63_is_a_header_error(tmp_path: Path) -> None:
    """It raised OverflowError from ``read`` (the batch paths), ``read_blocks`` and
    ``block_ranges``."""
    header = wkw.Header(np.uint8, block_len=8, file_len=4)
    with wkw.Dataset.create(str(tmp_path), header) as ds:
        ds.write((0, 0, 0), np.ones((32, 32, 32), dtype=np.uint8))
    path = tmp_path / "z0" / "y0" / "x0.wkw"
    raw = bytearray(path.read_bytes())
    for offset in (1 << 63, (1 << 64) - 1, 1 << 62):
        raw[8:16] = struct.pack("<Q", offset)
        path.write_bytes(bytes(raw))
        for read in (lambda f: f.read((0, 0, 0), (32, 32, 32)),
                     lambda f: f.read((0, 0, 0), (8, 8, 8)),
                     lambda f: f.read_blocks([0, 1]), lambda f: f.block_ranges()):
            with pytest.raises(FormatError) as info, wkw.File.open(path) as f:
                read(f)
            assert str(path) in str(info.value)
        with pytest.raises(FormatError):
            wkw.Dataset.open(tmp_path).read((0, 0, 0), (32, 32, 32))


def test_2001_layers_open_a_bounded_number(tmp_path: Path) -> None:
    """2,001 layers made the window reserve tens of GB of address space (a loader, with its
    threads, per layer)."""
    h = wkw.Header(np.uint8, block_len=8, file_len=1, block_type=wkw.BLOCK_TYPE_LZ4)
    with wkw.Dataset.create(str(tmp_path / "l0" / "1"), h) as ds:
        ds.write((0, 0, 0), np.ones((8, 8, 8), dtype=np.uint8))
    for i in range(1, 2001):
        os.symlink(tmp_path / "l0", tmp_path / f"l{i}")
    (tmp_path / "datasource-properties.json").write_text(json.dumps(
        {"id": {"name": "x", "team": ""}, "scale": [1, 1, 1],
         "dataLayers": [_layer(f"l{i}") for i in range(2001)]}))
    ds = open_dataset(tmp_path)
    try:
        assert len(ds.layers) == MAX_LAYERS
        assert any("2001" in str(p) or f"{2001 - MAX_LAYERS} more" in str(p)
                   for p in ds.problems)
    finally:
        ds.close()

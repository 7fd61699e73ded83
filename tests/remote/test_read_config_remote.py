"""A ``ReadConfig`` given to ``open_dataset`` reaches the stores it opens: at once, and for a
mag first used after the call returned (a webKnossos dataset at a URL opens its mags lazily)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from range_server import RangeServer

from viewer.format import ReadConfig, open_dataset
from viewer.format import config as read_config


def test_a_config_given_to_open_dataset_reaches_the_stores_of_its_mags(
        http: RangeServer, tmp_path: Path, truth: np.ndarray) -> None:
    mine = ReadConfig(cache_dir=str(tmp_path / "mine"), timeout_s=4.0)
    before = read_config.default()
    assert before != mine
    dataset = open_dataset(f"{http.url}/ds", config=mine)
    try:
        assert dataset.format == "webknossos" and dataset.read_config == mine
        mag = dataset.layers[0].mags[0]
        assert mag.read_config == mine and not mag.is_open
        volume = mag.volume  # opened now, outside the call
        assert volume.store.config == mine  # type: ignore[attr-defined]
        got = volume.read((3, 2, 1), (20, 20, 20))
        np.testing.assert_array_equal(got[0], truth[3:23, 2:22, 1:21])
        assert (tmp_path / "mine").is_dir()  # the range cache is the config's
    finally:
        dataset.close()
    assert read_config.default() == before  # the process default is untouched

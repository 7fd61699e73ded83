"""``ReadConfig``: the settings of reading, built from the environment at the program's edge
only, and written back for a child process (``tests/remote/test_read_config_remote.py``: given
to ``open_dataset``)."""

from __future__ import annotations

from viewer.environment import CACHE_DIR_ENV, CACHE_MB_ENV, TIMEOUT_ENV, read_config, variables
from viewer.format import ReadConfig


def test_from_the_environment_and_back() -> None:
    env = {TIMEOUT_ENV: "2.5", CACHE_MB_ENV: "12", CACHE_DIR_ENV: "/somewhere",
           "WKW_VIEWER_ANON": "yes", "WKW_VIEWER_REMOTE_MERGE_GAP": "4096",
           "AWS_PROFILE": "other", "HOME": "/not/kept"}
    cfg = read_config(env)
    assert (cfg.timeout_s, cfg.cache_bytes, cfg.cache_dir, cfg.anon, cfg.merge_gap) == \
        (2.5, 12 << 20, "/somewhere", True, 4096)
    assert cfg.cache_size_given and cfg.aws_env == (("AWS_PROFILE", "other"),)
    assert read_config(variables(cfg)) == cfg
    assert read_config({}) == ReadConfig()
    assert read_config({TIMEOUT_ENV: "soon"}).timeout_s == ReadConfig().timeout_s

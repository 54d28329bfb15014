"""functx.experimental.compilation_cache.compilation_cache: set_cache_dir moves functx's compile
cache, with the cache's trust checks."""

from __future__ import annotations

import os

import numpy as np
import pytest

import functx
from functx.experimental.compilation_cache import compilation_cache as cc


def test_set_cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("FUNCTX_CACHE_DIR", os.environ.get("FUNCTX_CACHE_DIR", str(tmp_path)))
    target = tmp_path / "programs"
    cc.set_cache_dir(target)
    assert os.environ["FUNCTX_CACHE_DIR"] == str(target) and target.is_dir()
    assert (target.stat().st_mode & 0o777) == 0o700
    out = functx.jit(lambda v: v * 3.0 + 0.25)(np.float32([1.0, 2.0]))
    np.testing.assert_allclose(np.asarray(out), [3.25, 6.25])
    assert any(p.suffix == ".so" for p in target.iterdir())  # (compiled into the new directory)
    cc.reset_cache()
    assert os.environ["FUNCTX_CACHE_DIR"] == str(target)


def test_set_cache_dir_untrusted_warns(tmp_path, monkeypatch):
    monkeypatch.setenv("FUNCTX_CACHE_DIR", str(tmp_path))
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    os.chmod(shared, 0o777)
    with pytest.warns(functx.CacheWarning, match="writable by group or others"):
        cc.set_cache_dir(shared)

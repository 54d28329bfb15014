"""Shared setup of the jit backend tests: a fresh compilation cache for the test session.

The C++ backend caches shared objects on disk (``FUNCTX_CACHE_DIR``); pointing it at a new
temporary directory before anything compiles keeps these tests independent of the user's cache
(and of what earlier runs left there). Tests that need their own cache directory (the cache and
reliability tests) set the variable again with ``monkeypatch``.
"""

import os
import shutil
import tempfile

import pytest

SESSION_CACHE = tempfile.mkdtemp(prefix="functx-test-cache-")
os.environ["FUNCTX_CACHE_DIR"] = SESSION_CACHE


@pytest.fixture(scope="session", autouse=True)
def _session_cache_dir():
    yield SESSION_CACHE
    shutil.rmtree(SESSION_CACHE, ignore_errors=True)

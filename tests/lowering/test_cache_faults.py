"""Faults of the compile cache are detected and repaired, or fall back with a warning, and jit keeps
computing the right values (``functx/lowering/cache.py``, ``program_cache.py``; issue 16, "Hangs
and cache faults" and the program index's validation).

* a program-index entry that disagrees with the Jaxpr (outputs, inputs, constants, or naming
  another program's shared object) is a miss, never run;
* a hung compiler, or another process holding an entry's lock, ends in a CompileError naming the
  knob to raise (``FUNCTX_COMPILE_TIMEOUT``, ``FUNCTX_CACHE_LOCK_TIMEOUT``); a lock left by a
  process that died does not block;
* a corrupted prelude header is rewritten; a truncated ``programs/*.npz`` is a miss; a full disk
  falls back to a private directory; a directory where a sidecar or lock file belongs is
  replaced; a cache that cannot be written is still used for what it holds.
"""

from __future__ import annotations

import builtins
import ctypes
import errno
import fcntl
import glob
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import warnings

import numpy as np
import pytest

import functx
import functx.numpy as fnp
from functx.lowering import cache, program_cache

X = np.linspace(-1.5, 1.5, 9).astype(np.float32)
C = np.linspace(0.0, 1.0, 9).astype(np.float32)
_SRC = 'extern "C" int fx_run(void** a) { (void)a; return 7; }\n// faults: %s\n'


@pytest.fixture(scope="module")
def seed(tmp_path_factory):
    """A cache holding the prelude's precompiled header and ``_prog``'s and ``_other``'s
    programs, copied into each test's cache (building them again would take most of the time)."""
    d = tmp_path_factory.mktemp("seed") / "cache"
    mp = pytest.MonkeyPatch()
    mp.setenv("FUNCTX_CACHE_DIR", str(d))
    try:
        functx.jit(_prog)(X)
        functx.jit(_other)(X)
    finally:
        mp.undo()
    return d


@pytest.fixture
def fresh(tmp_path, monkeypatch, seed):
    """A cache directory of this test's own (a copy of ``seed``), and no private directory or
    warnings yet."""
    monkeypatch.setattr(cache, "_fallback_dir", None)
    if hasattr(cache, "_warned"):
        monkeypatch.setattr(cache, "_warned", set())
    monkeypatch.setattr(cache, "_headers_checked", set())
    d = tmp_path / "cache"
    shutil.copytree(seed, d, ignore=shutil.ignore_patterns("*.lock"))
    monkeypatch.setenv("FUNCTX_CACHE_DIR", str(d))
    yield d
    if cache._fallback_dir:
        shutil.rmtree(cache._fallback_dir, ignore_errors=True)


def _prog(x):
    return fnp.exp(x) * C - 2.0


def _other(x):
    return fnp.sin(x) * C + 5.0


def _expect(x):
    return np.exp(x) * C - 2.0


def _entry(monkeypatch, fn=_prog):
    """jit ``fn`` once: (the index key, the Jaxpr it was looked up with, its JSON path)."""
    seen = {}
    load = program_cache.load

    def spy(key, closed):
        seen.setdefault("args", (key, closed))
        return load(key, closed)

    monkeypatch.setattr(program_cache, "load", spy)
    functx.jit(fn)(X)
    monkeypatch.setattr(program_cache, "load", load)
    key, closed = seen["args"]
    meta = os.path.join(os.environ["FUNCTX_CACHE_DIR"], "programs", f"{key}.json")
    assert os.path.exists(meta)
    return key, closed, meta


# --- the program index checks entries against the Jaxpr ------------------------------------------
def _tamper(meta, fresh, monkeypatch, how):
    entry = json.load(open(meta))
    if how == "output shape":
        entry["out_specs"][0][0] = [1]  # the kernel would write 9 floats into 1
    elif how == "output dtype":
        entry["out_specs"][0][1] = "float16"
    elif how == "output count":
        entry["out_specs"].append([[9], "float32"])
    elif how == "input count":
        entry["n_in"] += 1
    elif how == "input dtype":
        entry["in_dtypes"] = ["int8"]
    elif how == "another program's object":
        _, _, other = _entry(monkeypatch, _other)
        entry["so"] = json.load(open(other))["so"]
    elif how == "constants":
        np.savez(meta[:-5] + ".npz", c0=np.zeros(2, np.float32))  # 2 floats where 9 are read
    with open(meta, "w") as f:
        json.dump(entry, f)


@pytest.mark.parametrize(
    "how",
    [
        "output shape",
        "output dtype",
        "output count",
        "input count",
        "input dtype",
        "another program's object",
        "constants",
    ],
)
def test_an_index_entry_that_disagrees_with_the_jaxpr_is_a_miss(fresh, monkeypatch, how):
    key, closed, meta = _entry(monkeypatch)
    assert program_cache.load(key, closed) is not None  # the entry as written is good
    _tamper(meta, fresh, monkeypatch, how)
    assert program_cache.load(key, closed) is None, f"an entry with a wrong {how} was loaded"
    np.testing.assert_allclose(np.asarray(functx.jit(_prog)(X)), _expect(X), rtol=1e-6)
    assert program_cache.load(key, closed) is not None  # rewritten


def test_a_truncated_constants_file_is_a_miss(fresh, monkeypatch):
    key, closed, meta = _entry(monkeypatch)
    npz = meta[:-5] + ".npz"
    data = open(npz, "rb").read()
    with open(npz, "wb") as f:
        f.write(data[: len(data) // 2])
    assert program_cache.load(key, closed) is None
    np.testing.assert_allclose(np.asarray(functx.jit(_prog)(X)), _expect(X), rtol=1e-6)
    assert program_cache.load(key, closed) is not None


# --- hangs -------------------------------------------------------------------------------------
@pytest.fixture
def hung_compiler(tmp_path, monkeypatch):
    """``CXX`` is a compiler that answers ``--version`` and then hangs on any compile (its pid
    goes to ``pid``)."""
    script = tmp_path / "hung-g++"
    pid = tmp_path / "pid"
    script.write_text(
        '#!/bin/sh\ncase "$*" in *--version*) echo "hung-g++ 1.0"; exit 0;; esac\n'
        f"echo $$ > {pid}\nexec sleep 12\n"
    )
    script.chmod(0o755)
    monkeypatch.setenv("CXX", str(script))
    cache.compiler.cache_clear()
    cache.compiler_id.cache_clear()
    yield pid
    cache.compiler.cache_clear()
    cache.compiler_id.cache_clear()


def test_a_hung_compiler_times_out(fresh, monkeypatch, hung_compiler):
    monkeypatch.setenv("FUNCTX_COMPILE_TIMEOUT", "0.5")
    t0 = time.monotonic()
    with pytest.raises(cache.CompileError, match="FUNCTX_COMPILE_TIMEOUT") as info:
        cache.compile_cached(_SRC % "hung")
    assert time.monotonic() - t0 < 8
    assert "did not finish" in str(info.value) and "hung-g++" in str(info.value)
    with pytest.raises(ProcessLookupError):  # the compiler was killed, not left running
        os.kill(int(hung_compiler.read_text()), 0)


def test_a_hung_compiler_under_jit_gives_a_clear_error(fresh, monkeypatch, hung_compiler):
    monkeypatch.setenv("FUNCTX_COMPILE_TIMEOUT", "0.5")
    t0 = time.monotonic()
    with pytest.raises(functx.FunctxError, match="FUNCTX_COMPILE_TIMEOUT"):
        functx.jit(lambda x: x * 3.0 - 0.25)(X)
    assert time.monotonic() - t0 < 15


def test_waiting_for_a_held_lock_times_out(fresh, monkeypatch):
    monkeypatch.setenv("FUNCTX_CACHE_LOCK_TIMEOUT", "0.3")
    src = _SRC % "held lock"
    lock = fresh / f"{cache._key(cache._units(src), cache.FLAGS)}.lock"
    holder = open(lock, "a")  # another process, stuck while compiling this entry
    fcntl.flock(holder, fcntl.LOCK_EX)
    got = {}

    def work():
        try:
            got["value"] = cache.compile_cached(src)
        except Exception as e:  # noqa: BLE001 - reported below
            got["error"] = e

    t = threading.Thread(target=work, daemon=True)
    t.start()
    t.join(10)
    try:
        assert not t.is_alive(), "the lock wait has no bound"
        err = got.get("error")
        assert isinstance(err, cache.CompileError), got
        assert "FUNCTX_CACHE_LOCK_TIMEOUT" in str(err) and str(lock) in str(err)
    finally:
        holder.close()
        t.join(60)


def test_a_lock_left_by_a_dead_process_does_not_block(fresh, monkeypatch):
    monkeypatch.setenv("FUNCTX_CACHE_LOCK_TIMEOUT", "5")
    src = _SRC % "dead holder"
    lock = fresh / f"{cache._key(cache._units(src), cache.FLAGS)}.lock"
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys\n"
            "f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX)\n"
            "os.kill(os.getpid(), 9)",
            str(lock),
        ],
        check=False,
    )
    assert proc.returncode == -9 and lock.exists()
    t0 = time.monotonic()
    so, compiled = cache.compile_cached(src)
    assert compiled and ctypes.CDLL(so).fx_run(None) == 7 and time.monotonic() - t0 < 5


# --- damaged files -----------------------------------------------------------------------------
@pytest.mark.parametrize("gch", ["removed", "kept"])
def test_a_corrupted_prelude_header_is_rewritten(fresh, gch):
    from functx.lowering.cpp import prelude

    h = cache.prelude_header(prelude.PRELUDE)
    with open(h, "w") as f:
        f.write("#error this header is corrupted\n")
    if gch == "removed":
        os.unlink(h + ".gch")
    cache._headers_checked.clear()  # (a new process)
    out = functx.jit(lambda x: fnp.tanh(x) + 3.0 + (gch == "kept"))(X)
    np.testing.assert_allclose(np.asarray(out), np.tanh(X) + 3.0 + (gch == "kept"), rtol=1e-6)
    assert open(h).read() == prelude.PRELUDE and cache._valid(h + ".gch")


@pytest.mark.parametrize("which", ["sidecar", "lock"])
def test_a_directory_where_a_file_belongs_is_replaced(fresh, which):
    src = _SRC % f"directory at the {which}"
    key = cache._key(cache._units(src), cache.FLAGS)
    if which == "sidecar":
        cache.compile_cached(src)
        os.unlink(fresh / f"{key}.so.sha256")
        path = fresh / f"{key}.so.sha256"
    else:
        path = fresh / f"{key}.lock"
    os.makedirs(path / "inside")
    so, compiled = cache.compile_cached(src)
    assert compiled and ctypes.CDLL(so).fx_run(None) == 7
    assert path.is_file() and cache.compile_cached(src) == (so, False)


def test_a_full_disk_falls_back_to_a_private_directory(fresh, monkeypatch):
    real = os.replace

    def full(src, dst, *args, **kwargs):
        if os.fspath(dst).startswith(str(fresh)):
            raise OSError(errno.ENOSPC, "No space left on device", os.fspath(dst))
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", full)
    with pytest.warns(UserWarning, match="No space left on device") as record:
        out = functx.jit(lambda x: x * 9.0 - 4.0)(X)
    np.testing.assert_allclose(np.asarray(out), X * 9.0 - 4.0, rtol=1e-6)
    assert any(str(fresh) in str(w.message) for w in record)
    assert glob.glob(os.path.join(cache._fallback_dir, "*.so"))


def _forbid_writes(monkeypatch, d):
    """Every write under ``d`` fails as on a read-only file system (chmod does not stop root)."""
    d = str(d)

    def inside(p):
        return isinstance(p, (str, bytes, os.PathLike)) and os.fsdecode(p).startswith(d)

    def refuse(p):
        raise OSError(errno.EROFS, "Read-only file system", os.fsdecode(p))

    real_open, real_os_open, real_mkdir = builtins.open, os.open, os.mkdir
    writing = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

    def guarded_open(file, mode="r", *args, **kwargs):
        if inside(file) and any(c in mode for c in "wax+"):
            refuse(file)
        return real_open(file, mode, *args, **kwargs)

    def guarded_os_open(path, flags, *args, **kwargs):
        if inside(path) and flags & writing:
            refuse(path)
        return real_os_open(path, flags, *args, **kwargs)

    def guarded_mkdir(path, *args, **kwargs):
        if inside(path):
            if os.path.lexists(path):
                raise FileExistsError(errno.EEXIST, "File exists", os.fsdecode(path))
            refuse(path)
        return real_mkdir(path, *args, **kwargs)

    def guarded(real):
        def f(a, *args, **kwargs):
            if inside(a) or (args and inside(args[0])):
                refuse(a)
            return real(a, *args, **kwargs)

        return f

    monkeypatch.setattr(builtins, "open", guarded_open)
    monkeypatch.setattr(os, "open", guarded_os_open)
    monkeypatch.setattr(os, "mkdir", guarded_mkdir)
    for name in ("replace", "rename", "unlink", "rmdir", "symlink", "chmod"):
        monkeypatch.setattr(os, name, guarded(getattr(os, name)))


def test_a_read_only_cache_is_used_without_compiling(fresh, monkeypatch, capfd):
    functx.jit(_prog)(X)  # (the cache holds it)
    _forbid_writes(monkeypatch, fresh)
    monkeypatch.setenv("FUNCTX_LOG_COMPILES", "1")
    capfd.readouterr()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = functx.jit(_prog)(X)
    err = capfd.readouterr().err
    np.testing.assert_allclose(np.asarray(out), _expect(X), rtol=1e-6)
    assert "loaded the compiled program from the cache" in err, err
    assert "functx: compiled" not in err, err
    assert not [w for w in caught if "cache" in str(w.message)], [str(w.message) for w in caught]
    # a program it does not hold is compiled in the private directory, with a warning
    with pytest.warns(UserWarning, match="could not write compiled code"):
        out = functx.jit(lambda x: fnp.cos(x) * C + 0.5)(X)
    np.testing.assert_allclose(np.asarray(out), np.cos(X) * C + 0.5, rtol=1e-6)


@pytest.mark.parametrize("value", ["inf", "1e300"])
def test_an_unbounded_compile_timeout_means_no_limit(fresh, monkeypatch, value):
    monkeypatch.setenv("FUNCTX_COMPILE_TIMEOUT", value)
    monkeypatch.setenv("FUNCTX_CACHE_LOCK_TIMEOUT", value)
    so, compiled = cache.compile_cached(_SRC % f"no limit {value}")
    assert compiled and ctypes.CDLL(so).fx_run(None) == 7


def test_a_cut_off_shared_object_with_a_matching_sidecar_is_not_valid(fresh, tmp_path):
    """A program's shared object cut short, its ``.sha256`` rewritten to match: not valid (the
    cache builds it again) rather than loaded, which would kill the process with SIGBUS."""
    so = sorted(glob.glob(os.path.join(fresh, "**", "*.so"), recursive=True))[0]
    data = open(so, "rb").read()
    for name, body in (("whole.so", data), ("cut.so", data[: len(data) // 2])):
        path = str(tmp_path / name)
        open(path, "wb").write(body)
        open(path + ".sha256", "w").write(cache.hashlib.sha256(body).hexdigest())
        assert (cache.valid_digest(path) is None) == (name == "cut.so")

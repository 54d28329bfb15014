"""The compile cache must not be a way for another local user to run code as you
(``functx/lowering/cache.py``, ``program_cache.py``; issue 16, "The compile cache is a
code-injection channel").

Each attack of the issue is played here: a planted call-extension ``.so`` with a recomputed
sidecar, a planted program ``.so``, an index entry whose ``"so"`` points outside the cache, a
planted prelude header, a symbolic link at a lock path or at a temporary file's name, a root
that is world-writable or owned by another user. A planted object is a tiny shared library whose
constructor writes a marker file: the marker must never appear, results must stay right, and the
cache must warn (``CacheWarning``) where it refuses a directory. Another user is simulated by
``os.chown`` to an unused uid (skipped unless running as root).
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
import stat
import subprocess
import warnings

import numpy as np
import pytest

import functx
import functx.numpy as fnp
from functx.lowering import cache, program_cache, runtime

OTHER_UID = 4242  # a uid nobody on the test machine uses
X = np.linspace(-1.5, 1.5, 9).astype(np.float32)
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give files to another uid")


def _prog(x):
    return fnp.sin(x) * 2.0 + x


def _planted_so(where, marker) -> str:
    """A shared object that writes ``marker`` when loaded (and looks like a program)."""
    src = os.path.join(where, "evil.c")
    with open(src, "w") as f:
        f.write(
            "#include <stdio.h>\n__attribute__((constructor)) static void fx_evil(void) {\n"
            f'  FILE* f = fopen("{marker}", "w"); if (f) {{ fputs("pwned", f); fclose(f); }}\n'
            "}\nint fx_run(void** a) { (void)a; return 0; }\n"
            "void fx_set_gemm(void* a, void* b) { (void)a; (void)b; }\n"
        )
    so = os.path.join(where, "evil.so")
    subprocess.run(["gcc", "-shared", "-fPIC", src, "-o", so], check=True)
    return so


def _plant(so_path, evil):
    """Put ``evil`` at ``so_path`` with a sidecar that matches it (what an attacker can do)."""
    if os.path.abspath(evil) != os.path.abspath(so_path):
        shutil.copyfile(evil, so_path)
    with open(so_path + ".sha256", "w") as f:
        f.write(hashlib.sha256(open(evil, "rb").read()).hexdigest())


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """Forget the warnings given, as a new process would; the private directory is a new one
    (seeded with the prelude header: building it again would take most of the time)."""
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    for p in _SEED:
        shutil.copy2(p, private)
    monkeypatch.setattr(cache, "_fallback_dir", str(private))
    if hasattr(cache, "_warned"):
        monkeypatch.setattr(cache, "_warned", set())
    monkeypatch.setattr(cache, "_headers_checked", set())
    yield
    if cache._fallback_dir:
        shutil.rmtree(cache._fallback_dir, ignore_errors=True)


_SEED: list = []  # the prelude header's files, built once (the precompiled form takes a while)


@pytest.fixture(scope="module", autouse=True)
def _prelude_seed(tmp_path_factory):
    from functx.lowering.cpp import prelude

    d = tmp_path_factory.mktemp("prelude") / "cache"
    mp = pytest.MonkeyPatch()
    mp.setenv("FUNCTX_CACHE_DIR", str(d))
    try:
        h = cache.prelude_header(prelude.PRELUDE)
    finally:
        mp.undo()
    _SEED[:] = [h, h + ".gch", h + ".gch.sha256"]
    yield
    _SEED.clear()


def _header_name():
    return os.path.basename(_SEED[0])


def _compiled_entry(d, monkeypatch, fn=_prog):
    """Compile ``fn`` into the cache ``d`` (seeded with the prelude header): (its .so path, its
    index JSON path)."""
    os.makedirs(d, mode=0o700, exist_ok=True)
    for p in _SEED:
        shutil.copy2(p, d)
    monkeypatch.setenv("FUNCTX_CACHE_DIR", str(d))
    np.testing.assert_allclose(np.asarray(functx.jit(fn)(X)), np.asarray(fn(X)), rtol=1e-6)
    (meta,) = glob.glob(str(d / "programs" / "*.json"))
    so = os.path.join(d, json.load(open(meta))["so"])
    return so, meta


def _cache_warnings(caught):
    return [
        str(w.message)
        for w in caught
        if issubclass(w.category, UserWarning) and "cache directory" in str(w.message)
    ]


# --- planted shared objects --------------------------------------------------------------------
@pytest.mark.parametrize(
    "how", ["world-writable root", "root of another user", "files of another user"]
)
def test_a_planted_program_is_never_loaded(tmp_path, monkeypatch, fresh, how):
    if how != "world-writable root" and os.geteuid() != 0:
        pytest.skip("needs root to give files to another uid")
    marker = tmp_path / "marker"
    evil = _planted_so(tmp_path, marker)
    # the entry as functx would write it, copied to the shared directory with the .so swapped
    so, _ = _compiled_entry(tmp_path / "clean", monkeypatch)
    shared = tmp_path / "shared"
    shutil.copytree(tmp_path / "clean", shared)
    target = str(shared / os.path.basename(so))
    _plant(target, evil)
    if how == "world-writable root":
        shared.chmod(0o777)
    else:
        for p in (
            [shared, *shared.rglob("*")]
            if how == "root of another user"
            else [target, target + ".sha256"]
        ):
            os.chown(p, OTHER_UID, OTHER_UID)
    monkeypatch.setenv("FUNCTX_CACHE_DIR", str(shared))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = functx.jit(_prog)(X)
    assert not marker.exists(), f"the planted program ran ({how})"
    np.testing.assert_allclose(np.asarray(out), np.sin(X) * 2.0 + X, rtol=1e-6)
    if how != "files of another user":
        (msg,) = set(_cache_warnings(caught))
        assert str(shared) in msg and ("0777" in msg or str(OTHER_UID) in msg), msg
        assert "FUNCTX_CACHE_DIR" in msg and "chmod 700" in msg, msg
        assert issubclass(cache.CacheWarning, UserWarning)


def test_a_planted_call_extension_is_never_loaded(tmp_path, monkeypatch, fresh):
    marker = tmp_path / "marker"
    evil = _planted_so(tmp_path, marker)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # a team directory anybody can write
    lib = runtime.call_library()
    monkeypatch.setattr(lib, "prebuilt_path", str(tmp_path / "none.so"))  # (not installed)
    name = cache._key(cache._units(lib.source), cache.FLAGS + lib.flags) + "-pyext.so"
    _plant(str(shared / name), evil)
    before = sorted(os.listdir(shared))
    monkeypatch.setenv("FUNCTX_CACHE_DIR", str(shared))
    monkeypatch.setattr(runtime, "_fast", [None])  # a new process: the extension not loaded yet
    monkeypatch.setattr(runtime, "_fast_building", [])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        runtime.fast_call()
        for t in runtime._fast_building:
            t.join(120)
    assert not marker.exists(), "the planted call extension ran"
    assert _cache_warnings(caught)
    assert sorted(os.listdir(shared)) == before  # nothing of ours went there either


@pytest.mark.parametrize("where", ["absolute", "parent"])
def test_an_index_entry_cannot_name_a_file_outside_the_cache(tmp_path, monkeypatch, fresh, where):
    marker = tmp_path / "marker"
    outside = tmp_path / "outside"
    outside.mkdir()
    evil = _planted_so(outside, marker)
    _plant(evil, evil)  # (its own sidecar and a source: all the old check asked for)
    (outside / "evil.cpp").write_text("// the source it claims\n")
    d = tmp_path / "cache"
    _, meta = _compiled_entry(d, monkeypatch)
    entry = json.load(open(meta))
    entry["so"] = evil if where == "absolute" else os.path.join("..", "outside", "evil.so")
    with open(meta, "w") as f:
        json.dump(entry, f)
    out = functx.jit(_prog)(X)
    assert not marker.exists(), "an index entry loaded a shared object outside the cache"
    np.testing.assert_allclose(np.asarray(out), np.sin(X) * 2.0 + X, rtol=1e-6)
    assert "/" not in json.load(open(meta))["so"]  # rewritten


def test_a_planted_prelude_header_is_rewritten(tmp_path, monkeypatch, fresh):
    from functx.lowering.cpp import prelude

    marker = tmp_path / "marker"
    name = _header_name()
    d = tmp_path / "cache"
    d.mkdir(mode=0o700)
    planted = prelude.PRELUDE + (
        "\n#include <cstdio>\n__attribute__((constructor)) static void fx_evil_header() {\n"
        f'  FILE* f = std::fopen("{marker}", "w"); if (f) {{ std::fputs("pwned", f); '
        "std::fclose(f); }\n}\n"
    )
    (d / name).write_text(planted)  # and no precompiled form yet: it gets built from this text
    monkeypatch.setenv("FUNCTX_CACHE_DIR", str(d))
    cache._headers_checked.clear()
    out = functx.jit(lambda x: fnp.cos(x) * 7.0 - 1.0)(X)
    np.testing.assert_allclose(np.asarray(out), np.cos(X) * 7.0 - 1.0, rtol=1e-6)
    assert not marker.exists(), "the planted prelude header's code ran"
    assert (d / name).read_text() == prelude.PRELUDE


# --- links at the names functx writes ----------------------------------------------------------
_SRC = 'extern "C" int fx_run(void** a) { (void)a; return 7; }\n// %s\n'


@pytest.mark.parametrize("which", ["entry lock", "prelude lock", "sidecar temporary"])
def test_a_link_at_a_name_functx_writes_is_not_followed(tmp_path, monkeypatch, fresh, which):
    import ctypes

    from functx.lowering.cpp import prelude

    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    d = tmp_path / "cache"
    d.mkdir(mode=0o700)
    header = _header_name()
    monkeypatch.setenv("FUNCTX_CACHE_DIR", str(d))
    src = _SRC % which
    key = cache._key(cache._units(src), cache.FLAGS)
    link = {
        "entry lock": f"{key}.lock",
        "prelude lock": header[:-2] + ".lock",
        "sidecar temporary": f"{key}.so.sha256.tmp",
    }[which]
    os.symlink(victim, d / link)
    cache._headers_checked.clear()
    if which == "prelude lock":
        assert cache.prelude_header(prelude.PRELUDE) == str(d / header)
        assert (d / header).read_text() == prelude.PRELUDE
    else:
        so, compiled = cache.compile_cached(src)
        assert compiled and ctypes.CDLL(so).fx_run(None) == 7
    assert victim.read_text() == "precious", f"the {which} link was followed"


# --- directories -------------------------------------------------------------------------------
def test_new_directories_and_files_are_private(tmp_path, monkeypatch, fresh):
    d = tmp_path / "new" / "cache"
    _compiled_entry(d, monkeypatch, lambda x: x * 4.0 - 2.0)
    for p in [d, *d.rglob("*")]:
        mode = stat.S_IMODE(p.lstat().st_mode)
        if p.is_dir():
            assert mode == 0o700, f"{p}: {mode:o}"
        else:
            assert not mode & 0o022, f"{p}: {mode:o}"


@as_root
@pytest.mark.parametrize("how", ["group-writable", "another owner"])
def test_an_untrusted_subdirectory_is_not_used(tmp_path, monkeypatch, fresh, how):
    d = tmp_path / "cache"
    so, meta = _compiled_entry(d, monkeypatch, lambda x: x * 6.0 + 0.5)
    programs = d / "programs"
    if how == "group-writable":
        programs.chmod(0o770)
    else:
        os.chown(programs, OTHER_UID, OTHER_UID)
    closed = functx.make_jaxpr(lambda x: x * 6.0 + 0.5)(X)
    with pytest.warns(UserWarning, match="cache directory .*programs"):
        key = os.path.basename(meta)[:-5]
        assert program_cache.load(key, closed) is None


def test_entries_stay_usable_under_a_group_writable_umask(tmp_path, monkeypatch, fresh, capfd):
    """With ``umask 002`` the compiler and linker make group-writable files; functx tightens
    them, so its own entries pass its checks and are not rebuilt on every run."""
    old = os.umask(0o002)
    try:
        _compiled_entry(tmp_path / "cache", monkeypatch, lambda x: x * 8.0 + 0.125)
        monkeypatch.setenv("FUNCTX_LOG_COMPILES", "1")
        cache._headers_checked.clear()
        capfd.readouterr()
        out = functx.jit(lambda x: x * 8.0 + 0.125)(X)
    finally:
        os.umask(old)
    np.testing.assert_allclose(np.asarray(out), X * 8.0 + 0.125, rtol=1e-6)
    assert "loaded the compiled program from the cache" in capfd.readouterr().err


@as_root
@pytest.mark.parametrize("how", ["world-writable parent", "parent of another user"])
def test_a_root_inside_a_directory_another_user_controls_is_not_used(
    tmp_path, monkeypatch, fresh, how
):
    """Whoever can write the directory above the root can rename the root away between the
    check and the load and put theirs there: such a root is refused like a foreign one."""
    shared = tmp_path / "team"
    shared.mkdir()
    if how == "world-writable parent":
        shared.chmod(0o777)
    else:
        os.chown(shared, OTHER_UID, OTHER_UID)
    root = shared / "cache"
    root.mkdir(mode=0o700)
    monkeypatch.setenv("FUNCTX_CACHE_DIR", str(root))
    with pytest.warns(UserWarning, match=f"cache directory {root} is inside {shared}"):
        d = cache.cache_dir()
    assert d == cache._fallback_dir and d != str(root)
    shared.chmod(0o1777)  # sticky (as /tmp): nobody else can rename what is ours in it
    os.chown(shared, 0, 0)
    cache._warned.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cache.cache_dir() == str(root)


def test_a_root_that_is_a_link_is_used_resolved(tmp_path, monkeypatch, fresh):
    """A link may name the root, but the path used is the directory it pointed at when checked:
    retargeting the link later changes nothing."""
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    monkeypatch.setenv("FUNCTX_CACHE_DIR", str(link))
    assert cache.cache_dir() == str(real)


@as_root
def test_a_private_directory_taken_over_by_another_user_is_not_reused(tmp_path, monkeypatch, fresh):
    """The private directory's name is known (the warnings print it); once a temp cleaner
    removed it, another user can make a directory of that name: functx makes a new one."""
    taken = tmp_path / "functx-cache-taken"
    taken.mkdir()
    taken.chmod(0o777)
    os.chown(taken, OTHER_UID, OTHER_UID)
    monkeypatch.setattr(cache, "_fallback_dir", str(taken))
    d = cache.private_dir()
    try:
        st = os.lstat(d)
        assert d != str(taken) and st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) == 0o700
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_parents_functx_makes_are_private_under_a_group_writable_umask(
    tmp_path, monkeypatch, fresh
):
    """Missing parents of the root are made 0700 too (the XDG spec's mode), so that a
    ``umask 002`` does not make functx refuse the directory it just made."""
    monkeypatch.delenv("FUNCTX_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home" / "cache"))
    old = os.umask(0o002)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            d = cache.cache_dir()
    finally:
        os.umask(old)
    home = tmp_path / "home"
    assert d == str(home / "cache" / "functx")
    for p in (home, home / "cache", home / "cache" / "functx"):
        assert stat.S_IMODE(os.stat(p).st_mode) == 0o700, p

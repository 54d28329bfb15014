"""The on-disk compilation cache and the compiler driver (``functx/lowering/cache.py``).

* processes share the cache: a second process reuses it without compiling (checked with
  ``FUNCTX_LOG_COMPILES=1``, which logs ``compiled N kernels`` only when the compiler ran);
* two processes compiling the same program at once both succeed, and it is compiled once;
* a truncated or corrupted shared object (or a missing checksum) is detected and rebuilt;
* an unusable cache directory falls back to a temporary one with a RuntimeWarning;
* a compiler failure names the generated source file and quotes the compiler;
* a missing compiler gives an error that says how to install one.
"""

from __future__ import annotations

import glob
import hashlib
import os
import pathlib
import shutil
import subprocess
import sys
import threading
import time
import warnings

import numpy as np
import pytest

import functx
from functx.lowering import cache

REPO = str(pathlib.Path(__file__).resolve().parents[2])

# A child process: imports functx, says it is ready, waits for the go file (so that two children
# compile at the same moment), then jits and runs a small program and prints its result.
CHILD = r"""
import os, sys, time
import numpy as np
import functx, functx.numpy as fnp
ready, go = sys.argv[1], sys.argv[2]
open(ready, "w").close()
deadline = time.time() + 60
while not os.path.exists(go) and time.time() < deadline:
    time.sleep(0.005)
f = functx.jit(lambda x: fnp.sum(fnp.tanh(x) * 3.0 + x, axis=1))
x = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
print(repr(np.asarray(f(x)).tolist()))
"""


def _expected():
    x = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    return np.sum(np.tanh(x) * 3.0 + x, axis=1)


def _env(cache_dir):
    env = dict(os.environ)
    env.update(
        FUNCTX_CACHE_DIR=str(cache_dir),
        FUNCTX_LOG_COMPILES="1",
        PYTHONPATH=REPO + os.pathsep + env.get("PYTHONPATH", ""),
    )
    return env


def _start(cache_dir, tag):
    d = pathlib.Path(cache_dir).parent
    ready = d / f"ready-{tag}"
    go = d / "go"
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(ready), str(go)],
        env=_env(cache_dir),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    return proc, ready, go


def _finish(proc):
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, f"child failed:\n{err}"
    np.testing.assert_allclose(eval(out.strip().splitlines()[-1]), _expected(), rtol=1e-6)  # noqa: S307
    return err


def _compiled_lines(stderr):
    return [ln for ln in stderr.splitlines() if ln.startswith("functx: compiled")]


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory):
    """Two children started together on an empty cache directory; returns (dir, their stderr)."""
    cache_dir = tmp_path_factory.mktemp("concurrent") / "cache"
    procs = [_start(cache_dir, t) for t in ("a", "b")]
    deadline = time.time() + 60
    while not all(r.exists() for _, r, _ in procs) and time.time() < deadline:
        time.sleep(0.01)
    procs[0][2].touch()  # go: both compile now
    errs = [_finish(p) for p, _, _ in procs]
    return cache_dir, errs


def test_concurrent_compiles_of_the_same_program(shared_cache):
    cache_dir, errs = shared_cache
    # both succeeded (checked in _finish); the per-entry lock lets exactly one compile
    assert sum(len(_compiled_lines(e)) for e in errs) == 1, errs
    assert not glob.glob(os.path.join(cache_dir, "*.tmp*")), os.listdir(cache_dir)
    for so in glob.glob(os.path.join(cache_dir, "*.so")):
        with open(so, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        assert open(so + ".sha256").read().strip() == digest


def test_second_process_reuses_the_cache(shared_cache):
    cache_dir, _ = shared_cache
    before = sorted(os.listdir(cache_dir))
    proc, ready, go = _start(cache_dir, "c")
    go.touch()
    err = _finish(proc)
    assert "functx: compiling" in err  # a new process traces and looks the program up ...
    assert not _compiled_lines(err), err  # ... and finds it on disk
    assert sorted(os.listdir(cache_dir)) == before


# --- corrupted entries -----------------------------------------------------------------------
X = np.linspace(-2, 2, 10).astype(np.float32)


def _prog(x):
    return functx.numpy.cos(x) * 5.0 - x


@pytest.fixture(scope="module")
def pristine_entry(tmp_path_factory):
    """A cache directory holding the compiled ``_prog`` (compiled and loaded in this process)."""
    d = tmp_path_factory.mktemp("pristine")
    mp = pytest.MonkeyPatch()
    mp.setenv("FUNCTX_CACHE_DIR", str(d))
    try:
        functx.jit(_prog)(X)
    finally:
        mp.undo()
    return d


def _corrupt(so, how):
    if how == "truncated":
        size = os.path.getsize(so)
        with open(so, "r+b") as f:
            f.truncate(size // 3)
    elif how == "flipped":
        data = bytearray(open(so, "rb").read())
        mid = len(data) // 2
        data[mid : mid + 64] = bytes(b ^ 0xFF for b in data[mid : mid + 64])
        open(so, "wb").write(bytes(data))
    elif how == "no_checksum":
        os.unlink(so + ".sha256")
    elif how == "empty":
        open(so, "wb").close()


@pytest.mark.parametrize("how", ["truncated", "flipped", "no_checksum", "empty"])
def test_corrupted_shared_object_is_rebuilt(pristine_entry, tmp_path, monkeypatch, capfd, how):
    # work on a copy: the pristine file is loaded in this process and must not change under it
    d = tmp_path / "cache"
    shutil.copytree(pristine_entry, d)
    # (the dispatch extension may be there too, or its build in progress on another thread)
    sos = [s for s in glob.glob(str(d / "*.so")) if "-pyext" not in s and ".tmp." not in s]
    assert len(sos) == 1, sos
    so = sos[0]
    _corrupt(so, how)
    monkeypatch.setenv("FUNCTX_CACHE_DIR", str(d))
    monkeypatch.setenv("FUNCTX_LOG_COMPILES", "1")
    capfd.readouterr()
    out = functx.jit(_prog)(X)
    err = capfd.readouterr().err
    assert _compiled_lines(err), f"a {how} entry was not rebuilt: {err}"
    np.testing.assert_allclose(np.asarray(out), np.cos(X) * 5.0 - X, rtol=1e-6, atol=1e-6)
    digest = hashlib.sha256(open(so, "rb").read()).hexdigest()
    assert open(so + ".sha256").read().strip() == digest


# --- unusable cache directories --------------------------------------------------------------
def test_unusable_cache_dir_falls_back_with_warning(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("FUNCTX_CACHE_DIR", str(blocker / "cache"))  # makedirs must fail
    monkeypatch.setattr(cache, "_fallback_dir", None)
    with pytest.warns(RuntimeWarning, match="not writable"):
        out = functx.jit(lambda x: x * 3.0 + 1.0)(X)
    np.testing.assert_allclose(np.asarray(out), X * 3.0 + 1.0, rtol=1e-6)
    fallback = cache._fallback_dir
    assert fallback and os.path.isdir(fallback) and glob.glob(os.path.join(fallback, "*.so"))
    assert not blocker.is_dir()
    shutil.rmtree(fallback, ignore_errors=True)


def test_read_only_cache_dir_falls_back_with_warning(tmp_path, monkeypatch):
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o500)
    try:
        if os.access(d, os.W_OK):
            pytest.skip(
                "running as root (or with CAP_DAC_OVERRIDE): chmod 0o500 does not stop "
                "writes; test_unusable_cache_dir_falls_back_with_warning covers the path"
            )
        monkeypatch.setenv("FUNCTX_CACHE_DIR", str(d))
        monkeypatch.setattr(cache, "_fallback_dir", None)
        with pytest.warns(RuntimeWarning, match="not writable"):
            out = functx.jit(lambda x: x * 3.0 + 1.0)(X)
        np.testing.assert_allclose(np.asarray(out), X * 3.0 + 1.0, rtol=1e-6)
        assert os.listdir(d) == []
        shutil.rmtree(cache._fallback_dir, ignore_errors=True)
    finally:
        d.chmod(0o700)


def test_cache_dir_probe_is_thread_safe(tmp_path, monkeypatch):
    monkeypatch.setenv("FUNCTX_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cache, "_fallback_dir", None)
    got, caught = [], []

    def work():
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            for _ in range(1000):
                got.append(cache.cache_dir())
        caught.extend(w)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    fallback = cache._fallback_dir
    if fallback:
        shutil.rmtree(fallback, ignore_errors=True)
    assert set(got) == {str(tmp_path)}, f"{sum(g != str(tmp_path) for g in got)} fallbacks"
    assert not caught, [str(w.message) for w in caught]


# --- compiler failures -----------------------------------------------------------------------
def test_compile_failure_names_source_and_compiler_message(monkeypatch):
    monkeypatch.setattr(cache, "FLAGS", cache.FLAGS + ["-fno-such-flag-for-functx"])
    with pytest.raises(cache.CompileError) as info:
        functx.jit(lambda x: x - 7.0)(X)
    msg = str(info.value)
    assert isinstance(info.value, functx.FunctxError)
    src = [w for w in msg.split() if w.endswith(".cpp")]
    assert src and os.path.exists(src[0]), msg  # the generated source is kept for the report
    assert "fx_run" in open(src[0]).read()
    assert "-fno-such-flag-for-functx" in msg and "unrecognized" in msg, msg  # g++'s own words


@pytest.fixture
def fresh_compiler_lookup():
    cache.compiler.cache_clear()
    cache.compiler_id.cache_clear()
    yield
    cache.compiler.cache_clear()
    cache.compiler_id.cache_clear()


def test_missing_compiler_gives_clear_error(monkeypatch, fresh_compiler_lookup):
    monkeypatch.setenv("CXX", "/nonexistent/bin/g++-functx")
    with pytest.raises(cache.CompileError, match="g\\+\\+"):
        functx.jit(lambda x: x * 11.0)(X)


def test_no_compiler_at_all_gives_clear_error(monkeypatch, fresh_compiler_lookup):
    monkeypatch.delenv("CXX", raising=False)
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    with pytest.raises(cache.CompileError, match="install g\\+\\+"):
        functx.jit(lambda x: x * 13.0)(X)


# --- several translation units ---------------------------------------------------------------
_UNIT_MAIN = 'extern "C" int fx_two(void); extern "C" int fx_run(void** a) { return fx_two(); }\n'
_UNIT_TWO = 'extern "C" int fx_two(void) { return 2; }\n'


def test_translation_units_compile_into_one_shared_object(tmp_path, monkeypatch):
    import ctypes

    monkeypatch.setenv("FUNCTX_CACHE_DIR", str(tmp_path))
    so, compiled = cache.compile_cached([_UNIT_MAIN, _UNIT_TWO])
    assert compiled and cache.compile_cached([_UNIT_MAIN, _UNIT_TWO]) == (so, False)
    assert ctypes.CDLL(so).fx_run(None) == 2
    assert cache.unit_paths(so) == [so[:-3] + ".cpp", so[:-3] + ".1.cpp"]
    assert cache.read_source(so) == cache.join_units([_UNIT_MAIN, _UNIT_TWO])
    assert "// --- translation unit 1 ---\n" + _UNIT_TWO in cache.read_source(so)
    assert not glob.glob(str(tmp_path / "*.o"))  # the object files are not kept
    assert cache.cached([_UNIT_MAIN, _UNIT_TWO]) == so and cache.cached([_UNIT_MAIN]) is None


def _runs(monkeypatch):
    """The compiler commands ``cache._run`` is given, from now on."""
    cache.compiler_id()  # (its ``--version`` run first)
    cmds, run = [], cache._run
    monkeypatch.setattr(cache, "_run", lambda cmd, *a: cmds.append(cmd) or run(cmd, *a))
    return cmds


@pytest.mark.skipif(not shutil.which("ld.gold"), reason="no gold linker")
@pytest.mark.parametrize("units", [[_UNIT_TWO], [_UNIT_MAIN, _UNIT_TWO]])
def test_shared_objects_link_with_gold_where_there_is_one(tmp_path, monkeypatch, units):
    import ctypes

    monkeypatch.setenv("FUNCTX_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cache, "_LINKER", {})
    cmds = _runs(monkeypatch)
    so, compiled = cache.compile_cached(units)
    assert compiled and ctypes.CDLL(so).fx_two() == 2
    links = [c for c in cmds if "-c" not in c]
    assert len(links) == 1 and "-fuse-ld=gold" in links[0]


def test_a_linker_the_compiler_refuses_falls_back_to_the_default(tmp_path, monkeypatch):
    import ctypes

    monkeypatch.setenv("FUNCTX_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cache, "_LINKER", {"flags": ["-fuse-ld=no-such-linker-for-functx"]})
    cmds = _runs(monkeypatch)
    so, compiled = cache.compile_cached([_UNIT_MAIN, _UNIT_TWO])
    assert compiled and ctypes.CDLL(so).fx_run(None) == 2
    assert cache._LINKER["flags"] == []  # (the rest of the process links with the default)
    assert ["-fuse-ld" in " ".join(c) for c in cmds if "-c" not in c] == [True, False]
    # a failure of the program itself is not run twice
    monkeypatch.setattr(cache, "_LINKER", {"flags": ["-fuse-ld=no-such-linker-for-functx"]})
    del cmds[:]
    with pytest.raises(cache.CompileError):
        cache.compile_cached(['extern "C" int fx_run(void** a) { return fx_none(); }\n'])
    assert len(cmds) == 1 or "fx_none" not in " ".join(cmds[0])


def test_a_crashing_gold_falls_back_to_the_default(tmp_path, monkeypatch):
    """A gold that dies of a signal (collect2's "ld terminated with signal 11", no word of gold):
    the link runs again with the default linker, which the process keeps."""
    import ctypes

    fake = tmp_path / "bin" / "ld.gold"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nkill -SEGV $$\n")
    fake.chmod(0o755)
    monkeypatch.setenv("FUNCTX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(cache, "_LINKER", {"flags": [f"-B{fake.parent}/", "-fuse-ld=gold"]})
    so, compiled = cache.compile_cached([_UNIT_MAIN, _UNIT_TWO])
    assert compiled and ctypes.CDLL(so).fx_run(None) == 2
    assert cache._LINKER["flags"] == []


def test_a_failing_unit_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("FUNCTX_CACHE_DIR", str(tmp_path))
    with pytest.raises(cache.CompileError) as info:
        cache.compile_cached([_UNIT_MAIN, "this is not C++;\n"])
    bad = [w for w in str(info.value).split() if w.endswith(".1.cpp")]
    assert bad and open(bad[0]).read() == "this is not C++;\n", str(info.value)


def test_large_programs_are_split_and_compute_the_same(tmp_path, monkeypatch):
    """Kernels move into functions of other translation units (``cpp.program.SPLIT_MIN_CHARS``): the
    program computes what the one-unit build computes, and a second process loading it from
    the program cache shows every unit's source."""
    from functx.lowering.cpp import program

    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((64, 48)).astype(np.float32) for _ in range(2)]

    def f(x, y):
        a = functx.numpy.tanh(x) @ y.T
        b = functx.nn.softmax(a, axis=-1)
        return b.sum(0), functx.numpy.exp(x - y).max(1), (a * 2.0 + 1.0).mean()

    one = [np.asarray(v) for v in functx.jit(f)(*xs)]
    monkeypatch.setenv("FUNCTX_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(program, "SPLIT_MIN_CHARS", 0)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    lowered = functx.jit(f).lower(*xs)
    text = lowered.as_text()
    assert "// --- translation unit 1 ---" in text and "fx_k" in text, text[-2000:]
    for got, want in zip(lowered.compile()(*xs), one):
        np.testing.assert_array_equal(np.asarray(got), want)
    # from the program cache (no code generation this time): the same object, every unit shown
    monkeypatch.setattr(program, "CppProgram", None)
    second = functx.jit(f).lower(*xs)
    assert second.executable.so_path == lowered.executable.so_path
    assert second.as_text() == text


def test_split_programs_compile_their_reductions_at_o2(monkeypatch):
    """In a split program each reduction is a function of its own carrying the -O2 attribute
    (``cpp.program.O2_KINDS``), in the main unit too; no other kernel carries it. (Lowered and
    rendered only: the test above compiles such a program and checks its values.)"""
    import re

    from functx.lowering import lower, schedule
    from functx.lowering.cpp import program

    def f(x, y):
        a = functx.numpy.tanh(x) * y
        return a.sum(0), functx.numpy.exp(x - y).max(1), (a * 2.0 + 1.0).mean()

    xs = [np.ones((64, 48), np.float32)] * 2
    g = lower.lower_jaxpr(functx.make_jaxpr(f)(*xs))
    kernels = schedule.schedule(g, costly_once=True)
    monkeypatch.setattr(program, "SPLIT_MIN_CHARS", 0)
    units = program.CppProgram(g, kernels).sources(units=2)
    found = [
        (u, m.group(1), re.search(r"// kernel \d+: (\w+)", m.group(2)).group(1))
        for u, text in enumerate(units)
        for m in re.finditer(
            r'^extern "C" ([^\n]*)int fx_k\d+\(void\*\* fx_env\) \{\n(.*?)^\}', text, re.M | re.S
        )
    ]
    reductions = [u for u, attr, kind in found if kind == "reduce" and attr == program._O2]
    assert len(reductions) == sum(k.kind == "reduce" for k in kernels) == 3, found
    assert set(reductions) == {0, 1}  # (in the main unit too)
    assert sum(text.count(program._O2) for text in units) == 3  # (on nothing else)


# --- the prelude's precompiled header ----------------------------------------------------------
def test_units_include_the_prelude_through_a_precompiled_header(tmp_path, monkeypatch):
    from functx.lowering.cpp import prelude

    monkeypatch.setenv("FUNCTX_CACHE_DIR", str(tmp_path))
    lowered = functx.jit(lambda x: x * 3.0 - 1.0).lower(X)
    (h,) = glob.glob(str(tmp_path / "fx_prelude_*.h"))
    assert open(h).read() == prelude.PRELUDE
    assert cache._valid(h + ".gch")  # built, with its checksum
    src = open(lowered.executable.so_path[:-3] + ".cpp").read()
    assert src.startswith(f'#include "{os.path.basename(h)}"\n')  # beside it: relocatable
    text = lowered.as_text()  # shown with the prelude written out
    assert '#include "fx_prelude' not in text and prelude.PRELUDE in text
    out = subprocess.run(
        [
            cache.compiler(),
            *cache.FLAGS,
            "-Winvalid-pch",
            "-H",
            "-fsyntax-only",
            lowered.executable.so_path[:-3] + ".cpp",
        ],
        capture_output=True,
        text=True,
    )
    assert f"! {h}.gch" in out.stderr, out.stderr[:2000]  # gcc used the precompiled header
    # a corrupted precompiled header is rebuilt before the next compile
    with open(h + ".gch", "r+b") as f:
        f.write(b"junk")
    assert not cache._valid(h + ".gch")
    cache._headers_checked.clear()  # (a new process checks the checksum again)
    assert cache.prelude_header(prelude.PRELUDE) == h and cache._valid(h + ".gch")
    np.testing.assert_allclose(np.asarray(functx.jit(lambda x: x * 5.0)(X)), X * 5.0)


def test_prelude_build_runs_its_follow_up_without_holding_back_the_header(monkeypatch):
    # (compile.py hands it the runtime's call extension: compiled while the program is lowered)
    monkeypatch.setattr(cache, "prelude_header", lambda text: f"/cache/{text}.h")
    gate, ran = threading.Event(), []

    def then():
        gate.wait(10)
        ran.append(True)
        raise RuntimeError("a failed follow-up is not the header's business")

    build = cache.PreludeBuild("fx", then=then)
    assert build.header() == "/cache/fx.h" and not ran
    gate.set()
    build._thread.join(10)
    assert ran == [True] and build.header() == "/cache/fx.h"


@pytest.mark.skipif(
    not os.path.exists("/proc/self/autogroup"), reason="Linux's session scheduling groups"
)
def test_background_builds_yield_until_the_program_has_run(monkeypatch):
    # (cpp/gemm.py's library: nothing waits for it, so the program's own compilers go first)
    hooks, procs = [], []
    monkeypatch.setattr(cache.atexit, "register", lambda fn, *a: hooks.append((fn, a)))
    monkeypatch.setattr(cache, "_yielded", {"procs": [], "on": False})
    gate = threading.Event()

    def group(proc):
        with open(f"/proc/{proc.pid}/autogroup") as f:
            return int(f.read().split()[-1])

    def sleeper():
        return cache._spawn([sys.executable, "-c", "import time; time.sleep(30)"])

    def build():
        procs.append(sleeper())
        gate.wait(30)
        procs.append(sleeper())

    thread = cache.background_thread(build)
    try:
        deadline = time.monotonic() + 30
        while not procs and time.monotonic() < deadline:
            time.sleep(0.01)
        assert group(procs[0]) == cache._BACKGROUND_NICE
        mine = sleeper()
        assert group(mine) == 0  # (the program's own compilers keep their priority)
        mine.kill()
        mine.communicate()
        cache.foreground_done()  # (the program has run: the build goes on as usual)
        gate.set()
        thread.join(30)
        assert [group(p) for p in procs] == [0, 0]
        assert [fn for fn, _ in hooks] == [cache._finish]  # (at exit: the same, then the wait)
    finally:
        gate.set()
        for p in procs:
            p.kill()
            p.communicate()


def test_background_builds_get_their_priority_back_at_exit(monkeypatch):
    calls = []
    monkeypatch.setattr(cache, "foreground_done", lambda: calls.append("usual priority"))

    def build():  # (finishes only once its compilers have their priority back)
        deadline = time.monotonic() + 5
        while not calls and time.monotonic() < deadline:
            time.sleep(0.001)
        calls.append("built")

    thread = threading.Thread(target=build)
    thread.start()
    cache._finish(thread)
    assert calls == ["usual priority", "built"]


@pytest.mark.parametrize("units", [[_UNIT_TWO], [_UNIT_MAIN, _UNIT_TWO]])
def test_on_idle_runs_once_a_core_is_left_idle(tmp_path, monkeypatch, units):
    """``compile_cached``'s ``on_idle`` runs once while it compiles: for several units once the
    first of their compilers has ended (a core is free), for one unit at once; not where the
    object is in the cache."""
    import ctypes

    monkeypatch.setenv("FUNCTX_CACHE_DIR", str(tmp_path))
    cache.compiler_id()  # (its ``--version`` run first)
    procs, seen, spawn = [], [], cache._spawn
    monkeypatch.setattr(cache, "_spawn", lambda cmd: procs.append(spawn(cmd)) or procs[-1])

    def on_idle():
        seen.append([p.poll() is not None for p in procs])

    so, compiled = cache.compile_cached(units, on_idle=on_idle)
    assert compiled and ctypes.CDLL(so).fx_two() == 2
    if len(units) == 1:
        assert seen == [[]]  # (before its compiler started)
    else:
        [ended] = seen
        assert len(ended) == 2 and any(ended), ended
    assert cache.compile_cached(units, on_idle=on_idle) == (so, False) and len(seen) == 1

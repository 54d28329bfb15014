"""``functx/lowering/cpp/native.py`` (the fixed C++ libraries, the call extension and the
prelude's precompiled header) and ``functx/lowering/toolchain.py`` (their build at install time,
``setup.py``): an installed file is taken only where it was built from this source with these
flags, this compiler and Python for this CPU and its files can be trusted; a required library
that could not be built is a clear error; the install step goes on without a compiler."""

import _ctypes
import json
import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

import functx
import functx.numpy as fnp
from functx.lowering import cache, runtime, toolchain
from functx.lowering.cpp import native, prelude

ROOT = Path(__file__).resolve().parents[2]


def _library(tmp_path, name="fx_sgemm512"):
    file, flags = toolchain.LIBRARIES[name]
    lib = native.Library(name, file, flags)
    lib.prebuilt_path = str(tmp_path / "none" / f"{name}.so")
    return lib


def _install(lib, where, data=None, **changes):
    """A shared object's bytes (``data``, else the standard library's ``_ctypes`` extension: a
    whole ELF file, never loaded here) at ``where/<name>.so`` and their record as an install
    writes it (``toolchain.record``), with ``changes`` to the record; ``lib`` pointed at them."""
    where.mkdir(mode=0o755, exist_ok=True)
    so = where / f"{lib.name}.so"
    data = Path(_ctypes.__file__).read_bytes() if data is None else data
    so.write_bytes(data)
    so.chmod(0o755)
    rec = toolchain.record(lib.source, data, lib.flags, cache.compiler_id())
    (where / f"{lib.name}.json").write_text(json.dumps({**rec, **changes}))
    lib.prebuilt_path = str(so)
    return str(so)


@pytest.mark.parametrize(
    "how",
    ["cpu", "source_sha256", "flags", "compiler", "python", "damaged", "cut off"]
    + ["group-writable", "link", "bad record"],
)
def test_an_installed_library_not_built_for_this_process_is_not_used(tmp_path, how):
    """An installed library is taken only where its record names this source, these flags, this
    compiler, this Python, this CPU and its own digest, it is a whole ELF file, and its files are
    trusted (regular files, not links, that group/others cannot write): anything else is refused
    with the reason (and the library is built in the cache as before). None installed: nothing
    to say."""
    lib = _library(tmp_path, "fx_attention64")
    assert lib.prebuilt() is None and "prebuilt" not in lib.state
    so = _install(lib, tmp_path / "pkg")
    assert lib.prebuilt() == so  # (the record fits before it is changed below)
    if how == "damaged":
        open(so, "ab").write(b"\0")
    elif how == "group-writable":
        os.chmod(so, 0o775)
    elif how == "link":
        os.rename(so, so + ".real")
        os.symlink(so + ".real", so)
    elif how == "bad record":
        open(so[:-3] + ".json", "w").write("{")
    elif how == "cut off":  # (its record written for the cut-off bytes: loading it was SIGBUS)
        _install(lib, tmp_path / "pkg", Path(so).read_bytes()[:-1])
    else:
        _install(lib, tmp_path / "pkg", **{how: "other"})
    assert lib.prebuilt() is None
    why = {
        "damaged": "library_sha256",
        "cut off": "cut off",
        "group-writable": "writable by group",
        "link": "so",
    }
    assert why.get(how, "" if how == "bad record" else how) in lib.state["prebuilt"]


def test_an_installed_library_in_a_directory_others_can_write_is_not_used(tmp_path):
    """Whoever can write a directory above the library can swap it between the check and the
    load: not used (a sticky one, as ``/tmp``, is fine)."""
    lib = _library(tmp_path)
    so = _install(lib, tmp_path / "pkg")
    os.chmod(tmp_path / "pkg", 0o777)
    assert lib.prebuilt() is None and "writable by group or others" in lib.state["prebuilt"]
    os.chmod(tmp_path / "pkg", 0o1777)
    assert lib.prebuilt() == so


def test_a_required_library_that_could_not_be_built_is_an_error(tmp_path, monkeypatch):
    """The attention steps have no fallback in the programs: where their library could not be
    built, the program's first run raises a functx error naming it (not a crash)."""
    lib = _library(tmp_path, "fx_attention64")
    lib.required = True

    def no_compiler(*args, **kwargs):
        raise OSError("no compiler")

    monkeypatch.setattr(cache, "compile_cached", no_compiler)
    monkeypatch.setattr(cache, "background_thread", lambda fn, yield_cpu: fn())  # (at once)
    with pytest.raises(cache.CompileError, match="fx_attention64 .* could not be built"):
        lib.give(None, {"fx_fa_lib_fwd64": "fx_fa_fwd_lib"})


def test_every_library_source_is_installed_with_the_package():
    """``setup.py`` compiles each library from its file in the package, which an install from a
    wheel must carry too (pyproject.toml's package data), with the files it includes."""
    text = (ROOT / "pyproject.toml").read_text()
    data = re.search(r'^"functx.lowering.cpp" = \[(.*)\]$', text, re.M).group(1)
    here = ROOT / "functx" / "lowering" / "cpp"
    for file, _ in toolchain.LIBRARIES.values():
        included = re.findall(r'^#include "(.*)"', (here / file).read_text(), re.M)
        for name in [file, *included]:
            assert (here / name).exists() and f'"{name}"' in data, name


def test_the_install_step_goes_on_without_a_compiler(tmp_path, monkeypatch):
    """Without a compiler, or where it cannot write, the install step says why and writes
    nothing (functx then builds the libraries at run time)."""
    out = str(tmp_path / "pkg" / "fx_sgemm512.so")
    src = os.path.join(native._HERE, "fx_sgemm512.cpp")
    assert "could not be written" in toolchain.build_library(src, "/proc/no-such/dir/x.so")
    monkeypatch.setenv("CXX", str(tmp_path / "no-such-compiler"))
    assert "did not run" in toolchain.build_library(src, out)
    assert not os.path.exists(out) and not os.path.exists(out[:-3] + ".json")


@pytest.mark.slow  # (0.6 s of gcc CPU)
@pytest.mark.skipif(" avx512f" not in toolchain.cpu_flags(), reason="AVX-512")
def test_the_install_step_builds_a_library_functx_takes(tmp_path):
    """``setup.py``'s step (``toolchain.build_library``) writes a library and a record that a
    process accepts and loads."""
    lib = _library(tmp_path, "fx_attention16")
    out = str(tmp_path / "pkg" / "fx_attention16.so")
    file, flags = toolchain.LIBRARIES["fx_attention16"]
    assert toolchain.build_library(os.path.join(native._HERE, file), out, flags) is None
    lib.prebuilt_path = out
    assert lib.prebuilt() == out, lib.state.get("prebuilt")
    lib.start()
    assert lib.state["path"] == out and "thread" not in lib.state


@pytest.mark.slow  # (0.1 s of gcc CPU)
def test_the_installed_call_extension_is_loaded_without_compiling(tmp_path, monkeypatch):
    """The runtime's call extension an install built (``toolchain.LIBRARIES["fx_call"]``) is
    loaded by ``fast_call`` where its record fits: nothing is compiled in the cache."""
    lib = runtime.call_library()
    out = str(tmp_path / "pkg" / "fx_call.so")
    file, flags = toolchain.LIBRARIES["fx_call"]
    assert toolchain.build_library(os.path.join(native._HERE, file), out, flags) is None
    monkeypatch.setattr(lib, "prebuilt_path", out)
    monkeypatch.setattr(runtime, "_fast", [None])
    monkeypatch.setattr(runtime, "_fast_building", [])
    monkeypatch.setattr(cache, "compile_cached", None)  # (nothing may be compiled)
    monkeypatch.setenv("FUNCTX_CACHE_DIR", str(tmp_path / "cache"))
    call = runtime.fast_call()
    assert call is not None and not runtime._fast_building
    assert call(0, [np.zeros((3, 4), np.float32)[:, ::2]]) == -2  # (not contiguous: refused)


def _install_pch(where, data: bytes, flags=toolchain.PCH_FLAGS) -> str:
    """``data`` as the installed precompiled prelude under ``where``, with the record an install
    writes for ``prelude.PRELUDE`` built with ``flags`` (beyond ``FLAGS``)."""
    where.mkdir(mode=0o755, exist_ok=True)
    out = where / (toolchain.PRELUDE_HEADER + ".gch")
    out.write_bytes(data)
    out.chmod(0o755)
    rec = toolchain.record(prelude.PRELUDE, data, flags, cache.compiler_id())
    Path(toolchain.record_path(str(out))).write_text(json.dumps(rec))
    return str(out)


def _pch(text):
    return cache.installed(cache._INSTALLED_PCH, text, toolchain.PCH_FLAGS)[0]


@pytest.mark.parametrize("how", ["fits", "flags", "compiler", "python", "cpu", "group-writable"])
def test_an_installed_precompiled_prelude_is_taken_only_where_it_fits(tmp_path, monkeypatch, how):
    """``cache.installed`` gives the installed precompiled prelude only where its record names
    this text, these flags, this compiler, Python and CPU and its files can be trusted."""
    monkeypatch.setattr(cache, "_INSTALLED_PCH", str(tmp_path / "pkg" / "fx_prelude.h.gch"))
    assert _pch(prelude.PRELUDE) is None  # (none installed)
    out = _install_pch(tmp_path / "pkg", b"pch bytes")
    if how == "group-writable":
        os.chmod(out, 0o775)
    elif how != "fits":
        rec = json.loads(open(out + ".json").read())
        rec[how] = rec[how] + ["-fno-wrapv"] if how == "flags" else "other"
        open(out + ".json", "w").write(json.dumps(rec))
    assert _pch(prelude.PRELUDE) == (b"pch bytes" if how == "fits" else None)
    assert _pch(prelude.PRELUDE + " ") is None  # (another text)


def _used_pch(so: str) -> str:
    """gcc's ``-H`` lines for the precompiled header of the cached program ``so``'s first unit
    (``!``: used, ``x``: refused)."""
    cmd = [cache.compiler(), *cache.FLAGS, "-H", "-fsyntax-only", so[:-3] + ".cpp"]
    err = subprocess.run(cmd, capture_output=True, text=True).stderr
    return "".join(line for line in err.splitlines(True) if line.rstrip().endswith(".h.gch"))


@pytest.mark.slow  # (three programs and two precompiled headers compiled: 1-2 s of gcc CPU)
@pytest.mark.parametrize("built", ["same flags", "another target, record forged"])
def test_an_installed_precompiled_prelude_is_copied_and_gcc_still_checks_it(
    tmp_path, monkeypatch, built
):
    """The precompiled prelude an install built is copied beside the cache's header instead of
    compiling one there, and gcc uses it. One built for other flags that a (forged) record
    passes is copied too, but gcc refuses it and parses the header: the program compiles and
    gives the same bits as without any precompiled header."""
    x = np.linspace(-3, 3, 24, dtype=np.float32).reshape(4, 6)

    def f(x):
        return fnp.tanh(x) * fnp.exp(-x) + fnp.log1p(x * x)

    header = tmp_path / toolchain.PRELUDE_HEADER
    header.write_text(prelude.PRELUDE)
    extra = [] if built == "same flags" else ["-march=x86-64"]
    out = str(tmp_path / "pkg" / (toolchain.PRELUDE_HEADER + ".gch"))
    assert toolchain.build_library(str(header), out, toolchain.PCH_FLAGS + extra) is None
    _install_pch(tmp_path / "pkg", open(out, "rb").read())  # (the record without ``extra``)
    monkeypatch.setattr(cache, "_INSTALLED_PCH", str(tmp_path / "pkg" / "fx_prelude.h.gch"))
    monkeypatch.setattr(cache, "_headers_checked", set())
    ran = []
    run = cache._run
    monkeypatch.setattr(cache, "_run", lambda cmd, *a, **k: ran.append(cmd) or run(cmd, *a, **k))

    monkeypatch.setenv("FUNCTX_CACHE_DIR", str(tmp_path / "cache"))
    lowered = functx.jit(f).lower(x)
    got = np.asarray(lowered.compile()(x))
    assert not [c for c in ran if "c++-header" in c]  # (copied, not compiled)
    (h,) = (tmp_path / "cache").glob("fx_prelude_*.h")
    assert open(f"{h}.gch", "rb").read() == open(out, "rb").read() and cache._valid(f"{h}.gch")
    used = _used_pch(lowered.executable.so_path)
    assert used.startswith("!" if built == "same flags" else "x"), used

    monkeypatch.setenv("FUNCTX_CACHE_DIR", str(tmp_path / "plain"))
    monkeypatch.setattr(cache, "prelude_header", lambda text: None)  # (the prelude in each unit)
    np.testing.assert_array_equal(got, np.asarray(functx.jit(f)(x)))

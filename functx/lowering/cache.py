"""Compiling generated C++ and caching the shared objects on disk.

Entries live in ``FUNCTX_CACHE_DIR`` (default ``$XDG_CACHE_HOME/functx`` or ``~/.cache/functx``),
keyed by a hash of the source, the compiler's version, the flags and the CPU's features. A source
may come in several translation units (``key.cpp``, ``key.1.cpp``, ...), compiled in parallel
and linked into one shared object. Writers
take a per-entry lock and publish with an atomic rename; each shared object has a SHA-256 sidecar,
and an entry whose bytes do not match it (truncated or corrupted) is rebuilt. A read-only cache
directory falls back to a temporary one with a warning.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
import warnings

from functx.errors import FunctxError

FLAGS = ["-O3", "-march=native", "-mprefer-vector-width=512", "-fopenmp", "-fPIC", "-shared",
         "-std=c++17", "-fwrapv", "-fno-math-errno", "-fno-trapping-math"]


def _libmvec_flags():
    """Link glibc's vector math library when it exists (see the prelude in cpp.py)."""
    import ctypes.util

    return ["-lmvec"] if ctypes.util.find_library("mvec") else []


LIBS = _libmvec_flags()


class CompileError(FunctxError, RuntimeError):
    """The C++ compiler rejected generated code (a functx bug: please report it)."""


@functools.lru_cache(maxsize=1)
def compiler() -> str:
    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
    if not cxx:
        raise CompileError("functx.jit needs a C++ compiler and none was found: install g++ "
                           "(Debian/Ubuntu: apt-get install g++) or set CXX")
    return cxx


@functools.lru_cache(maxsize=1)
def compiler_id() -> str:
    """The compiler's ``--version`` line, remembered on disk next to the compiled code for each
    (resolved path, size, modification time) of the compiler, so that a warm process does not
    start the compiler at all."""
    path = os.path.realpath(shutil.which(compiler()) or compiler())
    try:
        st = os.stat(path)
        memo = os.path.join(cache_dir(), "compiler-" + hashlib.sha256(
            f"{path}\0{st.st_size}\0{st.st_mtime_ns}".encode()).hexdigest()[:16] + ".txt")
        with open(memo) as f:
            line = f.read().strip()
        if line:
            return line
    except OSError:
        memo = None
    line = _run_compiler_version()
    if memo is not None:
        try:
            with open(memo + f".{os.getpid()}.tmp", "w") as f:
                f.write(line)
            os.replace(memo + f".{os.getpid()}.tmp", memo)
        except OSError:
            pass
    return line


def _run_compiler_version() -> str:
    try:
        out = subprocess.run([compiler(), "--version"], capture_output=True, text=True,
                             check=False)
    except OSError as e:
        raise CompileError(f"functx.jit could not run the C++ compiler {compiler()!r} ({e}): "
                           "install g++ (Debian/Ubuntu: apt-get install g++) or point CXX at a "
                           "working compiler") from None
    return out.stdout.splitlines()[0] if out.stdout else compiler()


@functools.lru_cache(maxsize=1)
def cpu_id() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return hashlib.sha256(line.encode()).hexdigest()[:16]
    except OSError:
        pass
    import platform

    return platform.machine()


_fallback_dir: str | None = None


def cache_dir() -> str:
    global _fallback_dir
    base = os.environ.get("FUNCTX_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "functx")
    try:
        os.makedirs(base, exist_ok=True)
        probe = os.path.join(base, f".probe-{os.getpid()}-{threading.get_ident()}")
        with open(probe, "w"):
            pass
        os.unlink(probe)
        return base
    except OSError as e:
        if _fallback_dir is None:
            _fallback_dir = tempfile.mkdtemp(prefix="functx-cache-")
            warnings.warn(f"functx: cache directory {base} is not writable ({e}); compiled code "
                          f"goes to {_fallback_dir} for this process", RuntimeWarning, stacklevel=3)
        return _fallback_dir


def key_of(source: str, flags=FLAGS) -> str:
    h = hashlib.sha256()
    for part in (source, compiler_id(), " ".join(flags + LIBS), cpu_id()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def _digest(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def _valid(so: str) -> bool:
    try:
        with open(so + ".sha256") as f:
            want = f.read().strip()
    except OSError:
        return False
    return want == _digest(so)


def _units(source) -> list[str]:
    return [source] if isinstance(source, str) else list(source)


def _key(units, flags) -> str:
    return key_of(units[0] if len(units) == 1 else "\0".join(units), flags)


def cached(source, extra_flags=(), suffix="") -> str | None:
    """Path of the valid shared object for ``source`` (a string, or a list of translation
    units) already in the cache, else None."""
    so = os.path.join(cache_dir(), _key(_units(source), FLAGS + list(extra_flags)) + suffix
                      + ".so")
    return so if _valid(so) else None


def unit_paths(so: str) -> list[str]:
    """The source files a cached shared object was compiled from, in order."""
    paths = [so[:-3] + ".cpp"]
    while os.path.exists(f"{so[:-3]}.{len(paths)}.cpp"):
        paths.append(f"{so[:-3]}.{len(paths)}.cpp")
    return paths


# --- the prelude as a precompiled header --------------------------------------------------------
# ``fx_prelude_<hash>.h`` holds the prelude every translation unit starts with, and
# ``fx_prelude_<hash>.h.gch`` gcc's precompiled form of it (built with the same flags as the
# units, checked against a SHA-256 sidecar like the shared objects). A unit that includes the
# header then skips parsing it (about 0.1 s per unit). gcc ignores a precompiled header that does
# not fit and parses the text instead; other compilers do the same with the .gch file.
_INCLUDE = re.compile(r'#include "(fx_prelude_[0-9a-f]+\.h)"\n')
_headers_checked: set = set()  # headers whose precompiled form this process found valid


def prelude_header(text: str) -> str | None:
    """The path of the header holding ``text`` (in the cache directory, beside the sources that
    include it by name), its precompiled form built if missing; None if it cannot be written."""
    d = cache_dir()
    key = hashlib.sha256((text + "\0" + compiler_id() + "\0" + " ".join(FLAGS) + "\0"
                          + cpu_id()).encode()).hexdigest()[:16]
    h = os.path.join(d, f"fx_prelude_{key}.h")
    gch = h + ".gch"
    if h in _headers_checked and os.path.exists(gch):
        return h  # (checked once per process: the checksum reads 8 MB)
    if os.path.exists(h) and _valid(gch):
        _headers_checked.add(h)
        return h
    try:
        with open(os.path.join(d, f"fx_prelude_{key}.lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                if not os.path.exists(h):
                    tmp = f"{h}.{os.getpid()}.{threading.get_ident()}.tmp"
                    with open(tmp, "w") as f:
                        f.write(text)
                    os.replace(tmp, h)
                if not _valid(gch):
                    tmp = f"{h}.{os.getpid()}.{threading.get_ident()}.tmp.gch"
                    proc = subprocess.run([compiler(), *FLAGS, "-x", "c++-header", h, "-o", tmp],
                                          capture_output=True, text=True, check=False)
                    if proc.returncode == 0:
                        with open(gch + ".sha256.tmp", "w") as f:
                            f.write(_digest(tmp))
                        os.replace(tmp, gch)
                        os.replace(gch + ".sha256.tmp", gch + ".sha256")
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
    except OSError:
        return None
    if _valid(gch):
        _headers_checked.add(h)
    return h


class PreludeBuild:
    """``prelude_header(text)`` on another thread, started now (while SymPy is imported and the
    program lowered); ``header()`` waits for it."""

    def __init__(self, text: str):
        self._path = None
        self._thread = threading.Thread(target=self._run, args=(text,), daemon=True)
        self._thread.start()

    def _run(self, text):
        try:
            self._path = prelude_header(text)
        except Exception:  # noqa: BLE001 - without the header the units carry the prelude
            self._path = None

    def header(self) -> str | None:
        self._thread.join()
        return self._path


def join_units(units, where: str | None = None) -> str:
    """Translation units as one text (what ``as_text`` shows), with the prelude header they
    include (from ``where``, the cache directory by default) written out in full."""
    def expand(u):
        m = _INCLUDE.match(u)
        if m is None:
            return u
        try:
            with open(os.path.join(where or cache_dir(), m.group(1))) as f:
                return f.read() + "\n" + u[m.end():]
        except OSError:
            return u
    return "\n".join(expand(u) if i == 0 else f"// --- translation unit {i} ---\n{expand(u)}"
                     for i, u in enumerate(units))


def read_source(so: str) -> str:
    """The source of a cached shared object: its translation units, one after the other."""
    texts = []
    for path in unit_paths(so):
        with open(path) as f:
            texts.append(f.read())
    return join_units(texts, os.path.dirname(so))


def _check(proc, src, cmd):
    if proc.returncode != 0:
        raise CompileError(f"functx.jit: the C++ compiler failed on generated source {src}"
                           f"\ncommand: {' '.join(cmd)}\n{proc.stderr[-4000:]}")


def _build(srcs, flags, tmp):
    """Compile the translation units ``srcs`` into the shared object ``tmp``: one compiler run
    for one unit; for several, one run per unit at the same time, then a link."""
    if len(srcs) == 1:
        cmd = [compiler(), *flags, srcs[0], "-o", tmp, *LIBS]
        _check(subprocess.run(cmd, capture_output=True, text=True, check=False), srcs[0], cmd)
        return
    objs = [f"{tmp[:-3]}.{i}.o" for i in range(len(srcs))]
    try:
        cmds = [[compiler(), *flags, "-c", s, "-o", o] for s, o in zip(srcs, objs)]
        procs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for c in cmds]
        done = [(p, p.communicate()) for p in procs]
        for (p, (_, err)), s, c in zip(done, srcs, cmds):
            _check(subprocess.CompletedProcess(c, p.returncode, "", err), s, c)
        cmd = [compiler(), *flags, *objs, "-o", tmp, *LIBS]
        _check(subprocess.run(cmd, capture_output=True, text=True, check=False), srcs[0], cmd)
    finally:
        for o in objs:
            try:
                os.unlink(o)
            except OSError:
                pass


def compile_cached(source, extra_flags=(), suffix="") -> tuple[str, bool]:
    """Path of the shared object for ``source`` (a string, or a list of translation units) and
    whether it was compiled now."""
    d = cache_dir()
    flags = FLAGS + list(extra_flags)
    units = _units(source)
    key = _key(units, flags) + suffix
    so = os.path.join(d, f"{key}.so")
    if _valid(so):
        return so, False
    with open(os.path.join(d, f"{key}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if _valid(so):
                return so, False
            srcs = [os.path.join(d, f"{key}.cpp" if i == 0 else f"{key}.{i}.cpp")
                    for i in range(len(units))]
            for src, text in zip(srcs, units):
                with open(src, "w") as f:
                    f.write(text)
            tmp = os.path.join(d, f"{key}.{os.getpid()}.tmp.so")
            _build(srcs, flags, tmp)
            digest = _digest(tmp)
            with open(so + ".sha256.tmp", "w") as f:
                f.write(digest)
            os.replace(tmp, so)
            os.replace(so + ".sha256.tmp", so + ".sha256")
            return so, True
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


# --- Triton: generated modules and Triton's own kernel cache -----------------------------------
# Layout under the cache directory: ``triton/modules/functx_triton_<hash>.py`` (the generated
# module, keyed by a hash of its source, with a SHA-256 sidecar like the shared objects) and
# ``triton/kernels/`` (Triton's cache of the kernels it compiled from those modules: cubins,
# PTX and their metadata, keyed by Triton itself).
_ours: str | None = None  # the TRITON_CACHE_DIR value this module set (not the user's)


def triton_dir() -> str:
    d = os.path.join(cache_dir(), "triton")
    os.makedirs(d, exist_ok=True)
    return d


def triton_kernel_dir() -> str:
    """Point Triton's kernel cache at ``<cache>/triton/kernels`` (through ``triton.knobs``
    where it exists, else ``TRITON_CACHE_DIR``) and return it. A ``TRITON_CACHE_DIR`` the user
    set wins."""
    global _ours
    user = os.environ.get("TRITON_CACHE_DIR")
    if user and user != _ours:
        return user
    d = os.path.join(triton_dir(), "kernels")
    os.makedirs(d, exist_ok=True)
    try:
        import triton

        triton.knobs.cache.dir = d
    except (ImportError, AttributeError):
        os.environ["TRITON_CACHE_DIR"] = d
        _ours = d
    return d


def triton_module(source: str) -> tuple[str, str, bool]:
    """Store generated Triton source as a module file: ``(key, path, written now)``. The key
    is a hash of the source; an entry whose bytes do not match its sidecar is rewritten."""
    key = hashlib.sha256(source.encode()).hexdigest()[:24]
    d = os.path.join(triton_dir(), "modules")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, f"functx_triton_{key}.py")
    if _valid(path):
        return key, path, False
    with open(os.path.join(d, f"{key}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if _valid(path):
                return key, path, False
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "w") as f:
                f.write(source)
            digest = _digest(tmp)
            with open(path + ".sha256.tmp", "w") as f:
                f.write(digest)
            os.replace(tmp, path)
            os.replace(path + ".sha256.tmp", path + ".sha256")
            return key, path, True
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)

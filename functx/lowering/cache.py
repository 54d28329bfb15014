"""Compiling generated C++ and caching the shared objects on disk.

Entries live in ``FUNCTX_CACHE_DIR`` (default ``$XDG_CACHE_HOME/functx`` or ``~/.cache/functx``),
keyed by a hash of the source, the compiler's version, the flags and the CPU's features. A source
may come in several translation units (``key.cpp``, ``key.1.cpp``, ...), compiled in parallel
and linked into one shared object. Writers
take a per-entry lock and publish with an atomic rename; each shared object has a SHA-256 sidecar,
and an entry whose bytes do not match it (truncated or corrupted) is rebuilt.

The cache holds code this process loads, so it must be nobody else's to write:

* the root and every directory under it are created with mode 0700; a root (or subdirectory)
  owned by another user or writable by group/others, or a root inside a directory that another
  user owns or can write (unless sticky, as ``/tmp``), is refused with a ``CacheWarning`` and a
  private temporary directory (0700) serves this process instead;
* every cache file is opened with ``O_NOFOLLOW`` and used only if it is a regular file of this
  user that group/others cannot write; new files are written under unpredictable names
  (``mkstemp``, ``O_EXCL``) and renamed into place; lock files are opened without following links
  and never truncated;
* the prelude header is compared with the text it must hold (and its precompiled form's sidecar
  names that text's hash), so a planted or damaged header is rewritten.

A directory this process cannot write (read-only, full) is still read: entries in it are used, and
what has to be compiled goes to the private directory, with a warning. ``FUNCTX_COMPILE_TIMEOUT``
(seconds, default 600) bounds each compiler run and ``FUNCTX_CACHE_LOCK_TIMEOUT`` (default 900)
the wait for another process compiling the same entry; a lock held by a process that died is
released by the kernel (``flock``) and never blocks.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import fcntl
import functools
import hashlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
import warnings
from concurrent import futures

from functx import config
from functx.errors import CacheWarning, FunctxError
from functx.lowering import toolchain
from functx.lowering.toolchain import FLAGS, cpu_id  # noqa: F401 - (cpu_id: cache.cpu_id)


def _libmvec_flags():
    """Link glibc's vector math library when it exists (see the prelude in cpp/prelude.py)."""
    import ctypes.util

    return ["-lmvec"] if ctypes.util.find_library("mvec") else []


LIBS = _libmvec_flags()


class CompileError(FunctxError, RuntimeError):
    """The C++ compiler rejected generated code (a functx bug: please report it), or did not
    finish in time, or the cache could not be used."""


# --- files nobody else can have planted ---------------------------------------------------
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _foreign(st, root_too: bool = False) -> str | None:
    """Why a file or directory with this ``stat`` could hold someone else's bytes, or None (a
    file of root's too, with ``root_too``)."""
    if st.st_uid != os.geteuid() and not (root_too and st.st_uid == 0):
        return f"owned by uid {st.st_uid}, not by you (uid {os.geteuid()})"
    if st.st_mode & 0o022:
        return f"writable by group or others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def read_file(path: str, root_too: bool = False) -> bytes:
    """The bytes of the cache file ``path``: opened without following a symbolic link (nor
    blocking on a FIFO), and only if it is a regular file of this user (or root's, with
    ``root_too``) that nobody else can write; OSError otherwise."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        why = "not a regular file" if not stat.S_ISREG(st.st_mode) else _foreign(st, root_too)
        if why:
            raise OSError(errno.EPERM, f"cache file {path} is {why}: not used")
        return f.read()


def read_installed(path: str) -> bytes:
    """The bytes of a file installed with functx (``cpp/gemm.py``'s prebuilt library and its
    record), trusted as a cache file is (``read_file``), a system-wide install's (root's) too,
    and only where every directory above it is root's or this user's and writable by
    group/others only if sticky; OSError otherwise."""
    real = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
    why = _unsafe_parent(real)
    if why is not None:
        raise OSError(errno.EPERM, f"installed file {path} is {why}: not used")
    return read_file(real, root_too=True)


def installed(path: str, source: str, flags) -> tuple[bytes | None, str | None]:
    """The bytes of the file an install built at ``path`` from ``source`` with ``flags`` beyond
    ``toolchain.FLAGS``, where its record (``toolchain.record_path``) names this source, these
    flags, this compiler, this Python, this CPU and the file's own digest, and both files can be
    trusted (``read_installed``: regular files of this user or root's that nobody else can
    write, nor the directories above them); else None and why (None too where nothing was
    installed: a clone run in place, an install without a compiler)."""
    if not os.path.lexists(path):
        return None, None
    try:
        want = json.loads(read_installed(toolchain.record_path(path)))
        data = read_installed(path)
        got = toolchain.record(source, data, flags, compiler_id())
    except (OSError, ValueError, CompileError) as e:
        return None, str(e)
    if want != got:
        diff = sorted(k for k in got if want.get(k) != got[k]) if isinstance(want, dict) else []
        return None, f"{path} was built for another {', '.join(diff) or 'record'}"
    short = toolchain.elf_short(data) if path.endswith(".so") else None
    if short is not None:  # (loading it would crash the process)
        return None, f"{path} is {short}"
    return data, None


def _remove(path: str) -> None:
    """Remove whatever is at ``path`` (a file, a link, a directory that took a file's place)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def _unlink_quiet(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _replace(src: str, dst: str) -> None:
    """``os.replace`` that first clears a directory standing where the file goes."""
    try:
        if stat.S_ISDIR(os.lstat(dst).st_mode):
            shutil.rmtree(dst)
    except FileNotFoundError:
        pass
    os.replace(src, dst)


def _temp_beside(path: str, suffix: str = ".tmp") -> str:
    """A new empty file (0600, ``O_EXCL``, an unpredictable name) in ``path``'s directory."""
    d, name = os.path.split(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=suffix, dir=d)
    os.close(fd)
    return tmp


def write_file(path: str, data: bytes) -> None:
    """Publish ``data`` at ``path`` atomically: written to a fresh unpredictable name beside it
    and renamed into place (a link or directory at ``path`` is replaced, never followed)."""
    d, name = os.path.split(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=d)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        _replace(tmp, path)
    except BaseException:
        _unlink_quiet(tmp)
        raise


def _open_lock(path: str) -> int:
    """A descriptor of the lock file ``path``, never following a link nor truncating: a link, a
    directory or a foreign file found there is removed and a fresh lock file made."""
    for _ in range(3):
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | _NOFOLLOW, 0o600)
        except OSError as e:
            if e.errno not in (errno.ELOOP, errno.EISDIR, errno.ENXIO, errno.EMLINK):
                raise
            _remove(path)
            continue
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode) and _foreign(st) is None:
            return fd
        os.close(fd)
        _remove(path)
    raise OSError(errno.EPERM, f"could not make the lock file {path}")


@contextlib.contextmanager
def _locked(path: str):
    """Hold the ``flock`` on ``path`` (waiting at most ``config.cache_lock_timeout()`` seconds)."""
    fd = _open_lock(path)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            limit = config.cache_lock_timeout()
            deadline = time.monotonic() + limit
            delay = 0.002
            while True:
                time.sleep(delay)
                delay = min(2 * delay, 0.1)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise CompileError(
                            f"functx.jit: waited {limit:g} s for the cache lock {path}, held by "
                            "another process that is compiling the same code; raise "
                            "FUNCTX_CACHE_LOCK_TIMEOUT (seconds) if that compile is just slow, "
                            "or end the process holding the lock"
                        ) from None
        yield
    finally:
        os.close(fd)  # (releases the lock)


def _run(cmd: list, what: str, deadline: float | None = None) -> subprocess.CompletedProcess:
    """Run a compiler command, killing it (and what it started) at the deadline."""
    limit = config.compile_timeout()
    if deadline is None:
        deadline = time.monotonic() + limit
    proc = _spawn(cmd)
    return _wait(proc, cmd, what, deadline, limit)


def _spawn(cmd: list) -> subprocess.Popen:
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    if getattr(_background, "on", False):
        with _yield_lock:
            _yielded["procs"] = [p for p in _yielded["procs"] if p.poll() is None] + [proc]
            if _yielded["on"]:
                _group_nice(proc.pid, _BACKGROUND_NICE)
    return proc


# Background builds (``background_thread``): the nice value of their compilers' scheduling groups
# while they yield (until the program being called has run once: ``foreground_done``). At 10 (a
# tenth of a group's weight) the GPT block's first call at load 4-5 still gave them 0.05-0.09 s of
# CPU each during its units; at 19, 0.00-0.05 s, and its units took 0.89x the time.
_BACKGROUND_NICE = 19
_background = threading.local()  # (``on`` in the threads of background builds)
_yielded: dict = {"procs": [], "on": False}
_yield_lock = threading.Lock()


def _group_nice(pid: int, nice: int) -> None:
    """Set the nice value of the scheduling group of ``pid``'s session. Each compiler starts a
    session of its own, and where Linux groups the processes by session ("autogroup": processes
    in the root CPU cgroup, as on the 2-core benchmark machine) that value, not the process's
    own, is what ranks it against the other sessions, this process's included. Without
    autogroup the write does nothing (or fails: ignored), and the build runs as before."""
    try:
        with open(f"/proc/{pid}/autogroup", "w") as f:
            f.write(str(nice))
    except OSError:
        pass


def background_thread(
    target, join_timeout: float | None = None, yield_cpu: bool = True
) -> threading.Thread:
    """Run ``target`` on a daemon thread of its own, started now, whose compiler runs yield the
    cores to the program being compiled and called: a build nothing waits for (``cpp/gemm.py``'s
    library, the runtime's call extension), which then takes a core only when the compilers of
    that program leave it idle, and gets the usual priority back once the program has run
    (``foreground_done``). A process ending during the build gives it the usual priority back
    too and waits for the thread, at most ``join_timeout`` seconds when given (the result is
    then in the cache for the next process, and no compiler is left running behind it). With
    ``yield_cpu`` False its compilers keep the usual priority (a build the program's first run
    waits for: ``cpp/gemm.py``'s library)."""

    def run():
        _background.on = yield_cpu
        target()

    if yield_cpu:
        with _yield_lock:
            _yielded["on"] = True
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    atexit.register(_finish, thread, join_timeout)
    return thread


def foreground_done() -> None:
    """The program being compiled when the background builds started has run once (or the
    process ends): their compilers get the usual priority back."""
    with _yield_lock:
        if not _yielded["on"]:
            return
        _yielded["on"] = False
        for proc in _yielded["procs"]:
            if proc.poll() is None:
                _group_nice(proc.pid, 0)


def _finish(thread, timeout: float | None = None) -> None:
    foreground_done()
    thread.join(timeout)


def _wait(proc, cmd, what, deadline, limit) -> subprocess.CompletedProcess:
    try:
        out, err = proc.communicate(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            proc.kill()
        proc.communicate()
        raise CompileError(
            f"functx.jit: the C++ compiler did not finish {what} within "
            f"{limit:g} s (FUNCTX_COMPILE_TIMEOUT)\ncommand: {' '.join(cmd)}\n"
            "raise FUNCTX_COMPILE_TIMEOUT (seconds) if the program is just large, "
            "or check the compiler"
        ) from None
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


@functools.lru_cache(maxsize=1)
def compiler() -> str:
    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
    if not cxx:
        raise CompileError(
            "functx.jit needs a C++ compiler and none was found: install g++ "
            "(Debian/Ubuntu: apt-get install g++) or set CXX"
        )
    return cxx


@functools.lru_cache(maxsize=1)
def compiler_id() -> str:
    """The compiler's ``--version`` line, remembered on disk next to the compiled code for each
    (resolved path, size, modification time) of the compiler, so that a warm process does not
    start the compiler at all."""
    path = os.path.realpath(shutil.which(compiler()) or compiler())
    memo = None
    try:
        st = os.stat(path)
        memo = os.path.join(
            cache_dir(),
            "compiler-"
            + hashlib.sha256(f"{path}\0{st.st_size}\0{st.st_mtime_ns}".encode()).hexdigest()[:16]
            + ".txt",
        )
        line = read_file(memo).decode().strip()
        if line:
            return line
    except (OSError, UnicodeDecodeError):
        pass
    line = _run_compiler_version()
    if memo is not None:
        try:
            write_file(memo, line.encode())
        except OSError:
            pass
    return line


def _run_compiler_version() -> str:
    try:
        out = _run([compiler(), "--version"], "printing its version")
    except OSError as e:
        raise CompileError(
            f"functx.jit could not run the C++ compiler {compiler()!r} ({e}): "
            "install g++ (Debian/Ubuntu: apt-get install g++) or point CXX at a "
            "working compiler"
        ) from None
    return out.stdout.splitlines()[0] if out.stdout else compiler()


_fallback_dir: str | None = None  # this process's private cache directory, once needed
_dir_lock = threading.Lock()
_warned: set = set()


def _warn_once(tag, msg: str) -> None:
    with _dir_lock:
        if tag in _warned:
            return
        _warned.add(tag)
    warnings.warn(msg, CacheWarning, stacklevel=4)


def _is_private_dir(path: str) -> bool:
    """Whether ``path`` is (not a link to) a directory of this user that nobody else can write."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and _foreign(st) is None


def private_dir() -> str:
    """This process's own cache directory (``mkdtemp``: mode 0700), made on first use, and made
    anew if it went away (a temp cleaner) or was replaced by anything but a private directory of
    ours (another user can recreate its name then)."""
    global _fallback_dir
    with _dir_lock:
        if _fallback_dir is None or not _is_private_dir(_fallback_dir):
            _fallback_dir = tempfile.mkdtemp(prefix="functx-cache-")
        return _fallback_dir


def _untrusted(path: str, why: str) -> str:
    d = private_dir()
    _warn_once(
        ("untrusted", path, why),
        f"functx: the cache directory {path} is {why}; another user could plant code "
        f"there that functx would load, so it is not used and compiled code goes to the "
        f"private directory {d} for this process. Make it yours and private (chown, then "
        f"chmod 700 {path}) or set FUNCTX_CACHE_DIR to a directory only you can write.",
    )
    return d


def cache_dir() -> str:
    """The cache root: ``FUNCTX_CACHE_DIR`` (made with mode 0700 if missing) when it is this
    user's and nobody else can write it, else (with a ``CacheWarning``) a private temporary
    directory. A root this process cannot write is still returned: its entries are read, and
    new code is compiled in the private directory (``compile_cached``)."""
    base = config.cache_dir_setting()
    try:
        _makedirs_private(base)
        # (a root that is a link to a directory of yours is fine; the directory it points at
        # now is checked and used, so that retargeting the link later changes nothing)
        base = os.path.realpath(base)
        st = os.lstat(base)
    except OSError as e:
        d = private_dir()
        _warn_once(
            ("unusable", base),
            f"functx: cache directory {base} is not writable ({e}); "
            f"compiled code goes to {d} for this process",
        )
        return d
    why = "not a directory" if not stat.S_ISDIR(st.st_mode) else _foreign(st)
    if why is None:
        why = _unsafe_parent(base)
    return base if why is None else _untrusted(base, why)


def _makedirs_private(path: str) -> None:
    """``os.makedirs(path, 0o700, exist_ok=True)`` with mode 0700 for every directory it makes,
    not only the last (as the XDG spec asks; a parent made group-writable by a ``umask 002``
    would make the root untrusted)."""
    head = os.path.dirname(path)
    if head and head != path and not os.path.lexists(head):
        _makedirs_private(head)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        if not os.path.isdir(path):
            raise


def _unsafe_parent(real: str) -> str | None:
    """Why a directory above ``real`` (a path without links) lets another user swap it for
    theirs (rename it away, put a link there), or None: each must be root's or ours, and
    writable by group/others only if sticky (``/tmp``)."""
    p = real
    while True:
        parent = os.path.dirname(p)
        if parent == p:
            return None
        p = parent
        try:
            st = os.lstat(p)
        except OSError as e:
            return f"inside {p}, which cannot be checked ({e})"
        if not stat.S_ISDIR(st.st_mode):  # (a link put there since realpath)
            return f"inside {p}, which is no longer a directory"
        if st.st_uid not in (0, os.geteuid()):
            return f"inside {p}, owned by uid {st.st_uid}, who can replace it"
        if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
            return (
                f"inside {p}, writable by group or others (mode "
                f"{stat.S_IMODE(st.st_mode):04o}), who can replace it"
            )


def subdir(*names: str) -> str:
    """``<cache>/<names...>``, each level made with mode 0700 and checked like the root: one
    that is a link, not a directory, or not private to this user is not used (warning), and the
    same path under the private directory serves instead."""
    root = cache_dir()
    path = root
    for name in names:
        path = os.path.join(path, name)
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError:
            if not os.path.lexists(path):
                raise
        st = os.lstat(path)
        why = "not a directory" if not stat.S_ISDIR(st.st_mode) else _foreign(st)
        if why is not None:
            if root == private_dir():
                raise OSError(errno.EPERM, f"cache directory {path} is {why}")
            _untrusted(path, why)
            fallback = os.path.join(private_dir(), *names)
            os.makedirs(fallback, mode=0o700, exist_ok=True)
            return fallback
    return path


def key_of(source: str, flags=FLAGS) -> str:
    h = hashlib.sha256()
    for part in (source, compiler_id(), " ".join(flags + LIBS), cpu_id()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def _digest(path: str) -> str | None:
    try:
        return hashlib.sha256(read_file(path)).hexdigest()
    except OSError:
        return None


def valid_digest(path: str, also: str | None = None) -> str | None:
    """The SHA-256 of the cache file ``path`` if its sidecar ``path.sha256`` holds it (and, when
    ``also`` is given, names ``also`` after it), both being files of this user, and a shared
    object (``.so``) is a whole ELF file (``toolchain.elf_short``); else None."""
    try:
        want = read_file(path + ".sha256").decode().split()
    except (OSError, UnicodeDecodeError):
        return None
    try:
        data = read_file(path)
    except OSError:
        return None
    digest = hashlib.sha256(data).hexdigest()
    if not want or want[0] != digest or (also is not None and want[1:] != [also]):
        return None
    if path.endswith(".so") and toolchain.elf_short(data) is not None:
        return None  # (a cut-off library with a matching sidecar: loading it is SIGBUS)
    return digest


def _valid(path: str, also: str | None = None) -> bool:
    return valid_digest(path, also) is not None


def _units(source) -> list[str]:
    return [source] if isinstance(source, str) else list(source)


def _key(units, flags) -> str:
    return key_of(units[0] if len(units) == 1 else "\0".join(units), flags)


def cached(source, extra_flags=(), suffix="") -> str | None:
    """Path of the valid shared object for ``source`` (a string, or a list of translation
    units) already in the cache, else None."""
    so = os.path.join(cache_dir(), _key(_units(source), FLAGS + list(extra_flags)) + suffix + ".so")
    return so if _valid(so) else None


def unit_paths(so: str) -> list[str]:
    """The source files a cached shared object was compiled from, in order."""
    paths = [so[:-3] + ".cpp"]
    while os.path.lexists(f"{so[:-3]}.{len(paths)}.cpp"):
        paths.append(f"{so[:-3]}.{len(paths)}.cpp")
    return paths


# --- the prelude as a precompiled header --------------------------------------------------------
# ``fx_prelude_<hash>.h`` holds the prelude every translation unit starts with, and
# ``fx_prelude_<hash>.h.gch`` gcc's precompiled form of it (built with the same flags as the
# units, checked against a SHA-256 sidecar like the shared objects). A unit that includes the
# header then skips parsing it (about 0.1 s per unit). gcc ignores a precompiled header that does
# not fit and parses the text instead; other compilers do the same with the .gch file. Where an
# install built the precompiled form of the same text with the same flags, compiler and CPU
# (``installed``), its bytes are copied here instead of compiling it (0.22 s of gcc).
_INCLUDE = re.compile(r'#include "(fx_prelude_[0-9a-f]+\.h)"\n')
#: where an install builds the prelude's precompiled header (``toolchain.PRELUDE_HEADER``)
_INSTALLED_PCH = os.path.join(os.path.dirname(__file__), "cpp", toolchain.PRELUDE_HEADER + ".gch")
_headers_checked: set = set()  # headers whose precompiled form this process found valid


def _holds(path: str, text: str) -> bool:
    """Whether the cache file ``path`` holds exactly ``text``."""
    try:
        return read_file(path) == text.encode()
    except OSError:
        return False


def prelude_header(text: str) -> str | None:
    """The path of the header holding ``text`` (in the cache directory, beside the sources that
    include it by name), its precompiled form built if missing; None if it cannot be written.
    The header is compared with ``text`` (a planted or damaged one is rewritten) and the
    precompiled form's sidecar names the hash of the text it was built from."""
    d = cache_dir()
    key = hashlib.sha256(
        (text + "\0" + compiler_id() + "\0" + " ".join(FLAGS) + "\0" + cpu_id()).encode()
    ).hexdigest()[:16]
    h = os.path.join(d, f"fx_prelude_{key}.h")
    gch = h + ".gch"
    text_digest = hashlib.sha256(text.encode()).hexdigest()
    if h in _headers_checked and os.path.lexists(gch):
        return h  # (checked once per process: the checksum reads 8 MB)
    if _holds(h, text) and _valid(gch, text_digest):
        _headers_checked.add(h)
        return h
    try:
        with _locked(os.path.join(d, f"fx_prelude_{key}.lock")):
            if not _holds(h, text):
                write_file(h, text.encode())
            if not _valid(gch, text_digest):
                _remove(gch)  # (gcc would take a stale one that fits the flags)
                tmp = _temp_beside(gch, ".tmp.gch")
                try:
                    data = installed(_INSTALLED_PCH, text, toolchain.PCH_FLAGS)[0]
                    if data is not None:
                        with open(tmp, "wb") as f:
                            f.write(data)
                    built = (
                        data is not None
                        or _run(
                            [compiler(), *FLAGS, *toolchain.PCH_FLAGS, h, "-o", tmp],
                            "building the prelude's precompiled header",
                        ).returncode
                        == 0
                    )
                    if built:
                        os.chmod(tmp, 0o600)  # (the compiler made it by the umask)
                        _replace(tmp, gch)
                        write_file(gch + ".sha256", f"{_digest(gch)} {text_digest}".encode())
                finally:
                    _unlink_quiet(tmp)
    except CompileError:  # (timed out: the units parse the header's text)
        _unlink_quiet(gch)
        return h if _holds(h, text) else None
    except OSError:
        return h if _holds(h, text) else None
    if _valid(gch, text_digest):
        _headers_checked.add(h)
    return h


class PreludeBuild:
    """``prelude_header(text)`` on another thread, started now (while SymPy is imported and the
    program lowered), then ``then()`` if given (more compiler work for that core while the
    program is still being lowered); ``header()`` waits for the header only."""

    def __init__(self, text: str, then=None):
        self._path = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(text, then), daemon=True)
        self._thread.start()

    def _run(self, text, then):
        try:
            self._path = prelude_header(text)
        except Exception:  # noqa: BLE001 - without the header the units carry the prelude
            self._path = None
        finally:
            self._ready.set()
        if then is not None:
            try:
                then()
            except Exception:  # noqa: BLE001 - optional work: its caller falls back
                pass

    def header(self) -> str | None:
        self._ready.wait()
        return self._path


def join_units(units, where: str | None = None) -> str:
    """Translation units as one text (what ``as_text`` shows), with the prelude header they
    include (from ``where``, the cache directory by default) written out in full."""

    def expand(u):
        m = _INCLUDE.match(u)
        if m is None:
            return u
        try:
            return (
                read_file(os.path.join(where or cache_dir(), m.group(1))).decode()
                + "\n"
                + u[m.end() :]
            )
        except (OSError, UnicodeDecodeError):
            return u

    return "\n".join(
        expand(u) if i == 0 else f"// --- translation unit {i} ---\n{expand(u)}"
        for i, u in enumerate(units)
    )


def read_source(so: str) -> str:
    """The source of a cached shared object: its translation units, one after the other."""
    texts = []
    for path in unit_paths(so):
        texts.append(read_file(path).decode())
    return join_units(texts, os.path.dirname(so))


def _check(proc, src, cmd):
    if proc.returncode != 0:
        if "No space left on device" in proc.stderr:
            raise OSError(errno.ENOSPC, f"no space left on device compiling {src}")
        raise CompileError(
            f"functx.jit: the C++ compiler failed on generated source {src}"
            f"\ncommand: {' '.join(cmd)}\n{proc.stderr[-4000:]}"
        )


# The linker of the shared objects: gold where the system has one. GNU ld took 70 ms of CPU to
# link a program (most of it reading libstdc++'s symbols; one unit or the GPT block's two alike),
# gold 23 ms: on every compiled program's first call, after its last compiler run. A link that
# gold fails (an error naming gold or -fuse-ld, or any of collect2's, which a crashed gold gives:
# "ld terminated with signal 11") is run again with the compiler's default linker, which this
# process then keeps to.
_LINK_FAILED = ("gold", "fuse-ld", "collect2")
_LINKER: dict = {}


def _link_flags() -> list:
    if "flags" not in _LINKER:
        _LINKER["flags"] = ["-fuse-ld=gold"] if shutil.which("ld.gold") else []
    return _LINKER["flags"]


def _link(cmd: list, what: str, src: str) -> None:
    """Run ``cmd``, a compiler command that writes a shared object, with ``_link_flags()``."""
    fast = _link_flags()
    ran = cmd[:1] + fast + cmd[1:]
    res = _run(ran, what)
    if res.returncode != 0 and fast and any(w in res.stderr for w in _LINK_FAILED):
        _LINKER["flags"] = []
        res = _run(ran := cmd, what)
    _check(res, src, ran)


def _build(srcs, flags, tmp, on_idle=None):
    """Compile the translation units ``srcs`` into the shared object ``tmp``: one compiler run
    for one unit; for several, one run per unit at the same time, then a link. Each run is
    killed after ``config.compile_timeout()`` seconds. ``on_idle()``, if given, is called once
    a core is left to other work: when the first of several units is compiled (the GPT block's
    two units ended 35-40 ms apart, then the link took 20 ms on one core), or at once for one
    unit."""
    if len(srcs) == 1:
        if on_idle is not None:
            on_idle()
        _link([compiler(), *flags, srcs[0], "-o", tmp, *LIBS], f"compiling {srcs[0]}", srcs[0])
        return
    objs = [f"{tmp[:-3]}.{i}.o" for i in range(len(srcs))]
    procs = []
    try:
        cmds = [[compiler(), *flags, "-c", s, "-o", o] for s, o in zip(srcs, objs)]
        deadline = time.monotonic() + config.compile_timeout()
        procs = [_spawn(c) for c in cmds]
        with futures.ThreadPoolExecutor(len(procs)) as pool:  # (each waits for its compiler)
            waits = [
                pool.submit(_wait, p, c, f"compiling {s}", deadline, config.compile_timeout())
                for p, c, s in zip(procs, cmds, srcs)
            ]
            if on_idle is not None:
                futures.wait(waits, return_when=futures.FIRST_COMPLETED)
                on_idle()
            done = [w.result() for w in waits]
        for res, s, c in zip(done, srcs, cmds):
            _check(res, s, c)
        _link([compiler(), *flags, *objs, "-o", tmp, *LIBS], f"linking {tmp}", srcs[0])
    finally:
        for p in procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except OSError:
                    pass
                p.communicate()
        for o in objs:
            _unlink_quiet(o)


def compile_cached(source, extra_flags=(), suffix="", on_idle=None) -> tuple[str, bool]:
    """Path of the shared object for ``source`` (a string, or a list of translation units) and
    whether it was compiled now. When the cache directory cannot be written (read-only, full
    disk) the object is compiled in this process's private directory, with a warning.
    ``on_idle()`` is called while it compiles, once a core is left idle (see ``_build``); not
    where the object was in the cache."""
    d = cache_dir()
    flags = FLAGS + list(extra_flags)
    units = _units(source)
    key = _key(units, flags) + suffix
    so = os.path.join(d, f"{key}.so")
    if _valid(so):
        return so, False
    try:
        return _compile_in(d, key, units, flags, [], on_idle)
    except OSError as e:
        fallback = private_dir()
        if d == fallback:
            raise CompileError(
                f"functx.jit could not write compiled code to {d} ({e}): free "
                "some disk space or set FUNCTX_CACHE_DIR to a writable "
                "directory"
            ) from None
        _warn_once(
            ("unwritable", d),
            f"functx: could not write compiled code to the cache "
            f"directory {d} ({e}); what is not cached there yet is compiled in the "
            f"private directory {fallback} for this process (free some disk space or "
            "make the cache writable to keep it)",
        )
        try:  # (-I: the prelude header the units include may be in the cache directory)
            return _compile_in(fallback, key, units, flags, ["-I", d], on_idle)
        except OSError as e2:
            raise CompileError(
                f"functx.jit could not write compiled code to {d} ({e}) nor to "
                f"{fallback} ({e2}): free some disk space or set "
                "FUNCTX_CACHE_DIR to a writable directory"
            ) from None


def _compile_in(d, key, units, flags, extra, on_idle=None) -> tuple[str, bool]:
    so = os.path.join(d, f"{key}.so")
    with _locked(os.path.join(d, f"{key}.lock")):
        if _valid(so):
            return so, False
        srcs = [
            os.path.join(d, f"{key}.cpp" if i == 0 else f"{key}.{i}.cpp") for i in range(len(units))
        ]
        for src, text in zip(srcs, units):
            write_file(src, text.encode())
        tmp = _temp_beside(so, ".tmp.so")
        try:
            _build(srcs, flags + extra, tmp, on_idle)
            os.chmod(tmp, 0o700)  # (the linker made it by the umask, maybe group-writable)
            digest = _digest(tmp)
            _replace(tmp, so)
            write_file(so + ".sha256", digest.encode())
        finally:
            _unlink_quiet(tmp)
        return so, True


# --- Triton: generated modules and Triton's own kernel cache -----------------------------------
# Layout under the cache directory: ``triton/modules/functx_triton_<hash>.py`` (the generated
# module, keyed by a hash of its source, with a SHA-256 sidecar like the shared objects) and
# ``triton/kernels/`` (Triton's cache of the kernels it compiled from those modules: cubins,
# PTX and their metadata, keyed by Triton itself).
_ours: str | None = None  # the TRITON_CACHE_DIR value this module set (not the user's)


def triton_kernel_dir() -> str:
    """Point Triton's kernel cache at ``<cache>/triton/kernels`` (through ``triton.knobs``
    where it exists, else ``TRITON_CACHE_DIR``) and return it. A ``TRITON_CACHE_DIR`` the user
    set wins."""
    global _ours
    user = os.environ.get("TRITON_CACHE_DIR")
    if user and user != _ours:
        return user
    d = subdir("triton", "kernels")
    try:
        import triton

        triton.knobs.cache.dir = d
    except (ImportError, AttributeError):
        os.environ["TRITON_CACHE_DIR"] = d
        _ours = d
    return d


def triton_module(source: str) -> tuple[str, str, bool]:
    """Store generated Triton source as a module file: ``(key, path, written now)``. The key
    is a hash of the source; a file that does not hold exactly ``source`` (damaged, planted)
    is rewritten."""
    key = hashlib.sha256(source.encode()).hexdigest()[:24]
    d = subdir("triton", "modules")
    path = os.path.join(d, f"functx_triton_{key}.py")
    if _holds(path, source):
        return key, path, False
    with _locked(os.path.join(d, f"{key}.lock")):
        if _holds(path, source):
            return key, path, False
        write_file(path, source.encode())
        write_file(path + ".sha256", hashlib.sha256(source.encode()).hexdigest().encode())
        return key, path, True

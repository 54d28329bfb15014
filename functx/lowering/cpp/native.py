"""The fixed C++ libraries: kernels that do not depend on the program (``cpp/gemm.py``'s float32
product, ``cpp/attention.py``'s flash-attention steps for each padded head dimension), which the
programs call through pointers instead of compiling them again in each program; and two more
files that depend on the flags, the compiler and Python but not on the program: the runtime's
call extension (``fx_call.c``, ``runtime.fast_call``) and the prelude's precompiled header
(which ``cache.prelude_header`` copies beside the cache's header).

Like jaxlib's kernels they are built when functx is installed: ``setup.py``'s ``build_fxgemm``
step compiles each library of ``toolchain.LIBRARIES`` beside this file with the programs' flags,
and records what it was built from and for (``toolchain.record``). A process takes an installed
file where its record names the same source, flags, compiler, Python and CPU and its files can be
trusted (``cache.installed``); else (a clone run in place, an install without a compiler, a library
moved to another CPU) it compiles the library once per cache directory, on another thread
(``Library.start``), which a program's first run waits for (``give``). Either way every call of
a program runs the same code: a program that took OpenBLAS's sums on its first calls and the
product library's later gave results that changed in the last bits between calls (session 35).

The programs open no library themselves: each declares a weak pointer per routine it calls
(``fx_own_sgemm_fn``, ``fx_fa_lib_fwd64``, ...), which ``Library.give`` sets, before the
program's first run (``runtime.Executable.run`` through ``gemm.give`` and ``attention.give``), to
the routines of the libraries this process loaded after the checks above."""

from __future__ import annotations

import ctypes
import os
import threading
import warnings

from functx.errors import CacheWarning
from functx.lowering import cache, toolchain

_HERE = os.path.dirname(os.path.abspath(__file__))
_MODE = os.RTLD_NOW | os.RTLD_LOCAL


class Library:
    """One fixed library, ``name`` (as in ``toolchain.LIBRARIES`` where an install builds it):
    its source (``source``: the text of ``file`` here, with what it includes:
    ``toolchain.source_text``), its ``flags`` beyond
    ``toolchain.FLAGS``, the path an install builds it at (``prebuilt_path``) and this
    process's state (``state``: ``lib`` and ``path`` once loaded, ``thread`` while built in the
    cache, ``error`` if that failed, ``prebuilt``: why an installed library was not taken).
    ``required``: a failed build is an error at the first run of a program needing it (else a
    ``CacheWarning``, and the programs do without)."""

    def __init__(self, name: str, file: str, flags=(), required: bool = False):
        self.source = toolchain.source_text(os.path.join(_HERE, file))
        self.name, self.flags, self.required = name, list(flags), required
        self.prebuilt_path = os.path.join(_HERE, name + ".so")
        self.state: dict = {}
        self._lock = threading.Lock()

    def prebuilt(self) -> str | None:
        """``prebuilt_path`` where an install built it for this process (``cache.installed``), else
        None, and, where there was such a library, ``state["prebuilt"]`` says why it was not
        taken."""
        data, why = cache.installed(self.prebuilt_path, self.source, self.flags)
        if why is not None:
            self.state["prebuilt"] = why
        return None if data is None else self.prebuilt_path

    def start(self) -> None:
        """Load the library, once: the installed one (``prebuilt``), else the cache directory's,
        compiled on another thread at the usual priority (a program's first run waits for it)."""
        with self._lock:
            if "thread" in self.state or "lib" in self.state:
                return
            path = self.prebuilt()
            if path is not None:
                try:
                    self.state["lib"], self.state["path"] = ctypes.CDLL(path, mode=_MODE), path
                    return
                except OSError as e:
                    self.state["prebuilt"] = f"{path} did not load: {e}"
            self.state["thread"] = cache.background_thread(self.compile, yield_cpu=False)

    def compile(self) -> None:
        """Build the library in the cache directory and load it (``start``'s thread)."""
        try:
            suffix = "-" + self.name.replace("_", "")
            path, _ = cache.compile_cached(self.source, self.flags, suffix=suffix)
            # loaded here, after the cache's checks (a file of this user, unchanged since it was
            # written): the programs take the routines this process loaded (``give``)
            if cache.valid_digest(path) is None:
                raise OSError(f"{path} does not match its digest")
            self.state["lib"], self.state["path"] = ctypes.CDLL(path, mode=_MODE), path
        except Exception as e:  # noqa: BLE001 - reported once
            self.state["error"] = e
            if not self.required:
                warnings.warn(
                    f"functx: the library {self.name} (lowering/cpp/native.py) did not compile "
                    f"({e}); the programs do without it",
                    CacheWarning,
                    stacklevel=1,
                )

    def wait(self) -> None:
        """Wait for the library where its build is still running (given the usual priority)."""
        self.start()
        thread = self.state.get("thread")
        if isinstance(thread, threading.Thread) and thread.is_alive():
            cache.foreground_done()
            thread.join()

    def give(self, program, routines: dict) -> None:
        """Point ``program``'s variables at this library's routines (``{variable: symbol}``),
        once the library is loaded; a required library that could not be built raises."""
        self.wait()
        if "lib" not in self.state:
            if self.required:
                raise cache.CompileError(
                    f"functx.jit: the library {self.name} (lowering/cpp/native.py) could not be "
                    f"built: {self.state.get('error')}"
                )
            return
        for var, symbol in routines.items():
            fn = ctypes.cast(getattr(self.state["lib"], symbol), ctypes.c_void_p).value
            ctypes.c_void_p.in_dll(program, var).value = fn


#: the runtime's call extension (``runtime.fast_call`` loads it as a CPython module)
CALL = Library("fx_call", *toolchain.LIBRARIES["fx_call"])

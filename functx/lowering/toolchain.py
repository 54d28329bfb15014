"""The C++ compiler settings that installing functx needs as well as running it: the flags of
every compiled program and library, the CPU they are built for, and ``build_library``, which
compiles a fixed library (``cpp/gemm.py``'s float32 product, the runtime's call extension, the
prelude's precompiled header) next to the package when functx is installed (``setup.py``'s
``build_fxgemm`` step), with a record of what it was built from and for.

``setup.py`` loads this file by its path, before functx's dependencies are installed: it imports
the standard library only, and nothing of functx."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import sysconfig
import tempfile

FLAGS = [
    "-O3",
    "-march=native",
    "-mprefer-vector-width=512",
    "-fopenmp",
    "-fPIC",
    "-shared",
    "-std=c++17",
    "-fwrapv",
    "-fno-math-errno",
    "-fno-trapping-math",
]


#: the padded head dimensions (multiples of 16) ``cpp/attention.py``'s steps are built for at
#: install time (others are built at run time)
ATTENTION_DP = (16, 32, 48, 64, 80, 96, 112, 128)
#: the runtime's call extension (``runtime.fast_call``), a CPython module: compiled as C (gcc
#: parses Python.h as C++ in 0.2 s of CPU, as C in 0.09; the last -std wins over FLAGS' C++ one,
#: which clang would refuse for C)
CALL_FLAGS = ["-I" + sysconfig.get_paths()["include"], "-x", "c", "-std=c11", "-O2"]
#: the fixed libraries (``cpp/native.py``): name -> (source file in ``functx/lowering/cpp``,
#: flags beyond ``FLAGS``)
LIBRARIES = {
    "fx_sgemm512": ("fx_sgemm512.cpp", []),
    **{f"fx_attention{dp}": ("fx_attention.cpp", [f"-DFX_FA_DP={dp}"]) for dp in ATTENTION_DP},
    "fx_call": ("fx_call.c", CALL_FLAGS),
}
#: the prelude's precompiled header (``cache.prelude_header``): built at install time from the
#: header ``PRELUDE_HEADER`` (``cpp/prelude.py``'s text, which needs NumPy to generate) into
#: ``PRELUDE_HEADER + ".gch"`` with these flags beyond ``FLAGS``
PRELUDE_HEADER = "fx_prelude.h"
PCH_FLAGS = ["-x", "c++-header"]


@functools.lru_cache(maxsize=1)
def cpu_flags() -> str:
    """The CPU's feature line of ``/proc/cpuinfo`` (``flags``, or ``Features`` on ARM); empty
    where there is none."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return line
    except OSError:
        pass
    return ""


@functools.lru_cache(maxsize=1)
def cpu_id() -> str:
    """What ``-march=native`` code is built for: a hash of the CPU's feature line (else the
    machine's name)."""
    line = cpu_flags()
    if line:
        return hashlib.sha256(line.encode()).hexdigest()[:16]
    import platform

    return platform.machine()


def compiler() -> str | None:
    """The C++ compiler functx runs (``CXX``, else ``g++``, else ``c++``), or None."""
    return os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")


def compiler_version(cxx: str) -> str:
    """The first line of ``cxx --version`` (``cache.compiler_id``'s form); OSError if it fails."""
    try:
        out = subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired as e:
        raise OSError(f"{cxx} --version did not finish") from e
    if out.returncode != 0 or not out.stdout:
        raise OSError(f"{cxx} --version failed")
    return out.stdout.splitlines()[0]


def record(source: str, library: bytes, flags=(), compiler: str = "") -> dict:
    """What a prebuilt file was built from and for: its source's and its own SHA-256, the flags
    (``FLAGS`` and ``flags``), the compiler (its ``--version`` line), the Python it was built
    under (its ABI: the call extension includes Python.h) and the CPU. A file is used only where
    these are the running process's."""
    return {
        "source_sha256": hashlib.sha256(source.encode()).hexdigest(),
        "flags": FLAGS + list(flags),
        "compiler": compiler,
        "python": sysconfig.get_config_var("SOABI") or sys.implementation.cache_tag,
        "cpu": cpu_id(),
        "library_sha256": hashlib.sha256(library).hexdigest(),
    }


def record_path(path: str) -> str:
    """Where the record of the built file ``path`` is: ``x.json`` for ``x.so``, else
    ``path.json``."""
    return path[:-3] + ".json" if path.endswith(".so") else path + ".json"


def elf_short(data: bytes) -> str | None:
    """Why ``data`` is not a whole 64-bit little-endian ELF file (the libraries ``build_library``
    writes), or None: its program headers, the segments the loader maps or reads (``PT_LOAD``,
    ``PT_DYNAMIC``) and its section headers must lie within it. A cut-off library whose record
    was written for the cut-off bytes passes the digest check, and loading it kills the process
    with SIGBUS when the loader touches a page past the end of the file."""
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4:6] != b"\x02\x01":
        return "not a 64-bit little-endian ELF file"
    phoff, shoff = struct.unpack_from("<QQ", data, 0x20)
    phsize, phnum, shsize, shnum = struct.unpack_from("<HHHH", data, 0x36)
    ends = [phoff + phsize * phnum, shoff + shsize * shnum]
    if ends[0] <= len(data) and phsize >= 40:
        for i in range(phnum):
            kind, _, offset, _, _, size = struct.unpack_from("<IIQQQQ", data, phoff + i * phsize)
            if kind in (1, 2):  # PT_LOAD, PT_DYNAMIC
                ends.append(offset + size)
    if max(ends) > len(data):
        return f"cut off: {len(data)} bytes, its headers reach byte {max(ends)}"
    return None


def source_text(path: str) -> str:
    """The text of the C/C++ file ``path`` with each line ``#include "name"`` of a file beside it
    replaced by that file's text: what a fixed library is built from, so that its record's
    digest (``record``) covers the files it includes (``fx_attention.cpp`` includes
    ``fx_mathf.h``, which the programs' prelude holds too)."""
    here = os.path.dirname(path)
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines(keepends=True)
    for i, line in enumerate(lines):
        m = re.match(r'#include "([\w.]+)"', line)
        if m and os.path.isfile(os.path.join(here, m.group(1))):
            lines[i] = source_text(os.path.join(here, m.group(1)))
    return "".join(lines)


def build_library(source_path: str, out_path: str, flags=(), timeout: float = 600) -> str | None:
    """Compile the C++ file ``source_path`` with ``FLAGS`` and ``flags`` (which may name another
    language: ``-x c``, ``-x c++-header``) into ``out_path`` (mode 0755: a shared library, or a
    precompiled header) and write its ``record`` beside it (``record_path``). Returns None, or
    why nothing was built (no compiler, a compiler error, a directory that cannot be written):
    never raises for those, so that an install goes on without it (functx then builds it at run
    time)."""
    cxx = compiler()
    if not cxx:
        return "no C++ compiler (g++, or CXX)"
    tmp = None
    try:
        version = compiler_version(cxx)
        source = source_text(source_path)
        d = os.path.dirname(out_path) or "."
        os.makedirs(d, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".fxlib.", suffix=os.path.splitext(out_path)[1], dir=d)
        os.close(fd)
        # (the language from the file's name or ``flags``: gcc 12 given ``-x c++`` then ``-x
        # c++-header`` wrote a shared object, not a precompiled header)
        cmd = [cxx, *FLAGS, *flags, source_path, "-o", tmp]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            return f"{cxx} failed: {proc.stderr.strip()[-2000:]}"
        with open(tmp, "rb") as f:
            data = f.read()
        os.chmod(tmp, 0o755)
        os.replace(tmp, out_path)
        with open(record_path(out_path), "w", encoding="utf-8") as f:
            json.dump(record(source, data, flags, version), f)
        os.chmod(record_path(out_path), 0o644)
        return None
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{cxx} did not run or its output could not be written: {e}"
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)

"""The C++ compiler settings that installing functx needs as well as running it: the flags of
every compiled program and library, the CPU they are built for, and ``build_library``, which
compiles a fixed library (``cpp/gemm.py``'s float32 product) next to the package when functx is
installed (``setup.py``'s ``build_fxgemm`` step), with a record of what it was built from and for.

``setup.py`` loads this file by its path, before functx's dependencies are installed: it imports
the standard library only, and nothing of functx."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import struct
import subprocess
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
#: the fixed libraries (``cpp/native.py``): name -> (source file in ``functx/lowering/cpp``,
#: flags beyond ``FLAGS``)
LIBRARIES = {
    "fx_sgemm512": ("fx_sgemm512.cpp", []),
    **{f"fx_attention{dp}": ("fx_attention.cpp", [f"-DFX_FA_DP={dp}"]) for dp in ATTENTION_DP},
}


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


def record(source: str, library: bytes, flags=()) -> dict:
    """What a prebuilt library was built from and for: its source's and its own SHA-256, the
    flags (``FLAGS`` and ``flags``) and the CPU. A library is used only where these are the
    running process's."""
    return {
        "source_sha256": hashlib.sha256(source.encode()).hexdigest(),
        "flags": FLAGS + list(flags),
        "cpu": cpu_id(),
        "library_sha256": hashlib.sha256(library).hexdigest(),
    }


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


def build_library(source_path: str, out_path: str, flags=(), timeout: float = 600) -> str | None:
    """Compile the C++ file ``source_path`` with ``FLAGS`` and ``flags`` into the shared library
    ``out_path`` (mode 0755) and write its ``record`` beside it (``out_path`` with ``.json`` for
    ``.so``). Returns None, or why nothing was built (no compiler, a compiler error, a directory
    that cannot be written): never raises for those, so that an install goes on without it
    (functx then builds it at run time)."""
    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
    if not cxx:
        return "no C++ compiler (g++, or CXX)"
    tmp = None
    try:
        with open(source_path, encoding="utf-8") as f:
            source = f.read()
        d = os.path.dirname(out_path) or "."
        os.makedirs(d, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".fxlib.", suffix=".so", dir=d)
        os.close(fd)
        cmd = [cxx, *FLAGS, *flags, "-x", "c++", source_path, "-o", tmp]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            return f"{cxx} failed: {proc.stderr.strip()[-2000:]}"
        with open(tmp, "rb") as f:
            data = f.read()
        os.chmod(tmp, 0o755)
        os.replace(tmp, out_path)
        meta = out_path[:-3] + ".json" if out_path.endswith(".so") else out_path + ".json"
        with open(meta, "w", encoding="utf-8") as f:
            json.dump(record(source, data, flags), f)
        os.chmod(meta, 0o644)
        return None
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{cxx} did not run or its output could not be written: {e}"
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)

"""The index from final Jaxprs to compiled programs (``functx/lowering/program_cache.py``).

* a second process finds its program by the Jaxpr: no lowering (its modules never
  imported), no code generation, same results;
* programs differing only in the values of closed-over constants get different entries;
* a corrupted or half-written index entry is a miss: the program is lowered again (correctly)
  and the entry rewritten;
* Jaxprs whose printout would not identify them are not indexed.
"""

from __future__ import annotations

import glob
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import functx
import functx.numpy as fnp
from functx.lowering import program_cache

REPO = str(pathlib.Path(__file__).resolve().parents[2])

CHILD = r"""
import sys
import numpy as np
import functx, functx.numpy as fnp
w = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
f = functx.jit(functx.grad(lambda w, x: fnp.sum(fnp.tanh(x @ w) ** 2)))
x = np.arange(8, dtype=np.float32).reshape(2, 4) / 10
print(repr(np.asarray(f(w, x)).tolist()))
print("lowered:", "functx.lowering.lower" in sys.modules)
"""


def _child(cache_dir):
    env = dict(
        os.environ,
        FUNCTX_CACHE_DIR=str(cache_dir),
        FUNCTX_LOG_COMPILES="1",
        PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    proc = subprocess.run(
        [sys.executable, "-c", CHILD],
        env=env,
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    return np.array(eval(lines[0])), lines[1], proc.stderr  # noqa: S307


def test_second_process_skips_lowering(tmp_path):
    cache_dir = tmp_path / "cache"
    first, lowered_first, err_first = _child(cache_dir)
    second, lowered_second, err_second = _child(cache_dir)
    assert "functx: compiled" in err_first and "loaded the compiled program" not in err_first
    assert "loaded the compiled program from the cache" in err_second, err_second
    assert "functx: compiled" not in err_second
    assert lowered_first.endswith("True") and lowered_second.endswith("False")
    np.testing.assert_array_equal(first, second)
    w = np.linspace(-1, 1, 12).reshape(4, 3)
    x = np.arange(8).reshape(2, 4) / 10
    t = np.tanh(x @ w)
    np.testing.assert_allclose(second, x.T @ (2 * t * (1 - t * t)), rtol=1e-5, atol=1e-6)
    assert len(glob.glob(str(cache_dir / "programs" / "*.json"))) == 1


def test_constants_are_part_of_the_key(tmp_path, monkeypatch):
    monkeypatch.setenv("FUNCTX_CACHE_DIR", str(tmp_path))
    x = np.ones(5, np.float32)
    outs = []
    for c in (np.arange(5, dtype=np.float32), np.arange(5, dtype=np.float32)[::-1].copy()):
        outs.append(np.asarray(functx.jit(lambda x, c=c: x * c + 1.0)(x)))
        np.testing.assert_array_equal(outs[-1], x * c + 1.0)
    assert len(glob.glob(str(tmp_path / "programs" / "*.json"))) == 2


@pytest.mark.parametrize("how", ["garbage", "truncated", "missing_consts", "wrong_shared_object"])
def test_broken_entry_is_a_miss(tmp_path, monkeypatch, capfd, how):
    monkeypatch.setenv("FUNCTX_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("FUNCTX_LOG_COMPILES", "1")
    c = np.linspace(0, 1, 7, dtype=np.float32)

    def prog(x):
        return fnp.exp(x) * c - 2.0

    x = np.linspace(-1, 1, 7, dtype=np.float32)
    functx.jit(prog)(x)
    (meta,) = glob.glob(str(tmp_path / "programs" / "*.json"))
    if how == "garbage":
        pathlib.Path(meta).write_text("{not json")
    elif how == "truncated":
        text = pathlib.Path(meta).read_text()
        pathlib.Path(meta).write_text(text[: len(text) // 2])
    elif how == "missing_consts":
        os.unlink(meta[:-5] + ".npz")
    else:
        entry = json.loads(pathlib.Path(meta).read_text())
        entry["so"] = "0" * 32 + ".so"
        pathlib.Path(meta).write_text(json.dumps(entry))
    capfd.readouterr()
    out = functx.jit(prog)(x)  # a new jitted function: looks the program up again
    err = capfd.readouterr().err
    assert "loaded the compiled program" not in err, err
    np.testing.assert_allclose(np.asarray(out), np.exp(x) * c - 2.0, rtol=1e-6)
    entry = json.loads(pathlib.Path(meta).read_text())  # rewritten, usable again
    assert os.path.exists(tmp_path / entry["so"])
    capfd.readouterr()
    functx.jit(prog)(x)
    assert "loaded the compiled program from the cache" in capfd.readouterr().err


def test_unfaithful_printouts_are_not_indexed():
    closed = functx.make_jaxpr(lambda x: x + 1.0)(np.float32(1))
    assert program_cache.key_of(closed) is not None

    class Opaque:
        pass

    closed.jaxpr.eqns[0].params["tag"] = Opaque()  # prints as <... object at 0x...>
    assert program_cache.key_of(closed) is None


def test_the_key_covers_the_attention_pass(monkeypatch):
    """compile.py fuses attention after the key is taken: a warm cache must not serve a program
    compiled with the pass to a process that turned it off (or the reverse)."""
    from functx.transforms import attention

    closed = functx.make_jaxpr(lambda x: x + 1.0)(np.float32(1))
    on = program_cache.key_of(closed)
    monkeypatch.setattr(attention, "ENABLED", False)
    off = program_cache.key_of(closed)
    assert None not in (on, off) and on != off


def test_the_key_covers_the_primitives_c_spellings():
    """The C++ text of each elementwise operation is written in functx/primitives/elementwise.py:
    a change there alone must not let a warm cache serve programs with the old code."""
    files = program_cache._stage_files()
    for name in ("../primitives/elementwise.py", "../control/linalg.py", "cpp/dot.py", "lower.py"):
        assert name in files

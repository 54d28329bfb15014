"""Run JAX's own test files with functx in place of JAX's public modules.

Not part of the test suite (pytest's testpaths is ``tests``); run by hand:

    python benchmarks/jax_tests/run.py --jax-git /work/.mirror/jax-ml+jax/repo \
        --ref jax-v0.10.2 --out /tmp/jaxtests [--files api batching ...] [--timeout 60]

For each file it takes ``tests/<name>_test.py`` from the JAX git directory at ``--ref``,
rewrites its imports of public JAX modules into ``fxswap`` calls (see fxswap.py: ``jax``,
``jax.numpy``, ``jax.lax``, ``jax.scipy``, ``jax.random``, ``jax.tree_util``, ... become
functx's; ``jax._src`` stays JAX's), runs it alone under pytest (one process per file, a
per-case time limit) and writes ``<out>/<name>.json`` with each case's outcome and error line.
``--summary`` prints per-file counts and the most frequent causes of failure, from those files.
"""

import argparse
import ast
import collections
import concurrent.futures
import glob
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FILES = [
    "api",
    "batching",
    "custom_api",
    "lax_autodiff",
    "lax_control_flow",
    "lax_numpy",
    "lax_numpy_operators",
    "lax_numpy_reducers",
    "lax_vmap",
    "lax_vmap_op",
]

CONFTEST = """\
import json, os, signal, sys
sys.path.insert(0, {here!r})
sys.path.insert(0, {root!r})
import pytest
import fxswap

fxswap.install()
_LIMIT = int(os.environ.get("FXSWAP_TIMEOUT", "60"))
_OUT = open(  # one JSON line per case, written as it ends (one file per xdist worker)
    os.environ["FXSWAP_RESULTS"] + ("." + os.environ["PYTEST_XDIST_WORKER"]
                                    if "PYTEST_XDIST_WORKER" in os.environ else ""), "w")


def _record(**row):
    _OUT.write(json.dumps(row) + "\\n")
    _OUT.flush()


class CaseTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise CaseTimeout(f"case ran over {{_LIMIT}} s")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(_LIMIT)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def pytest_collection_finish(session):
    fxswap.collecting = False
    _record(collected=len(session.items))


def pytest_collectreport(report):
    if report.failed:
        _record(id=report.nodeid, outcome="error", when="collect",
                message=str(report.longrepr)[-600:], duration=0)


def pytest_runtest_logreport(report):
    if report.when == "call" or (report.when == "setup" and not report.passed):
        msg = ""
        if report.failed:
            crash = getattr(report.longrepr, "reprcrash", None)
            msg = crash.message if crash is not None else str(report.longrepr)[-500:]
        elif report.skipped:
            msg = str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else ""
        _record(id=report.nodeid, outcome=report.outcome, when=report.when,
                message=msg[:600], duration=round(report.duration, 3))
"""


def _is_public_jax(mod):
    return mod == "jax" or (mod.startswith("jax.") and not mod.startswith("jax._src"))


def rewrite(source):
    """Rewrite the imports of public JAX modules into ``fxswap`` calls, keeping line numbers."""
    lines = source.splitlines()
    edits = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            if not any(_is_public_jax(a.name) for a in node.names):
                continue
            parts = []
            for a in node.names:
                if not _is_public_jax(a.name):
                    parts.append(f"import {a.name}" + (f" as {a.asname}" if a.asname else ""))
                elif a.asname:
                    parts.append(f"{a.asname} = __fx.module({a.name!r})")
                else:  # ``import jax.x`` binds ``jax``; ``jax.x`` is then functx's attribute
                    parts.append("jax = __fx.module('jax')")
            edits.append((node, parts))
        elif isinstance(node, ast.ImportFrom) and node.module == "jax._src" and node.level == 0:
            # ``jax._src.api`` is the public ``jax`` namespace's implementation, which tests call
            # as ``api.jit``/``api.grad``/...: it is swapped like ``jax``; the rest stays JAX's.
            if not any(a.name == "api" for a in node.names):
                continue
            parts = [
                f"{a.asname or a.name} = __fx.module('jax')"
                if a.name == "api"
                else f"from jax._src import {a.name}" + (f" as {a.asname}" if a.asname else "")
                for a in node.names
            ]
            edits.append((node, parts))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if not _is_public_jax(node.module):
                continue
            parts = [
                f"{a.asname or a.name} = __fx.attr({node.module!r}, {a.name!r})" for a in node.names
            ]
            edits.append((node, parts))
    for node, parts in edits:
        indent = lines[node.lineno - 1][: node.col_offset]
        lines[node.lineno - 1] = indent + "import fxswap as __fx; " + "; ".join(parts)
        for i in range(node.lineno, node.end_lineno):
            lines[i] = ""
    # Flag parsing is the test runner's business: JAX's own config parses them.
    out = "\n".join(lines) + "\n"
    # The tracer errors the tests expect through ``jax._src.core`` are functx's when functx raises
    # them (JAX's classes from ``core`` would never match).
    for name in ("ConcretizationTypeError", "UnexpectedTracerError"):
        out = out.replace(f"core.{name}", f"__import__('functx').errors.{name}")
    return out.replace("jax.config.parse_flags_with_absl()", "__fx.parse_jax_flags()")


def prepare(args, work):
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(work, "conftest.py"), "w") as f:
        f.write(CONFTEST.format(here=HERE, root=ROOT))
    for name in args.files:
        if args.src:  # test files copied out beforehand (a machine without the JAX mirror)
            with open(os.path.join(args.src, f"{name}_test.py")) as f:
                src = f.read()
        else:
            src = subprocess.run(
                ["git", "--git-dir", args.jax_git, "show", f"{args.ref}:tests/{name}_test.py"],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        with open(os.path.join(work, f"{name}_test.py"), "w") as f:
            f.write(rewrite(src))


def run_file(args, work, name):
    out = os.path.join(os.path.abspath(args.out), f"{name}.jsonl")
    env = dict(os.environ, FXSWAP_RESULTS=out, FXSWAP_TIMEOUT=str(args.timeout))
    env.setdefault("JAX_ENABLE_X64", "0")
    env.setdefault("JAX_NUM_GENERATED_CASES", str(args.num_cases))
    env.setdefault("FUNCTX_CACHE_DIR", os.path.join(os.path.abspath(args.out), "functx-cache"))
    cmd = ["nice", sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"]
    cmd += ["-o", "addopts=", "-o", "filterwarnings=", "--rootdir", work, f"{name}_test.py"]
    if args.xdist > 1:
        cmd += ["-n", str(args.xdist)]
    if args.k:
        cmd += ["-k", args.k]
    t0 = time.time()
    proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
    tail = proc.stdout.strip().splitlines()[-1:] or proc.stderr.strip().splitlines()[-3:]
    print(f"{name}: {time.time() - t0:.0f} s, {' '.join(tail)}", flush=True)
    if proc.returncode not in (0, 1, 5):  # pytest itself failed: record the reason
        with open(out, "a") as f:
            f.write(json.dumps(dict(id=name, outcome="error", message=proc.stdout[-2000:])) + "\n")


def load(path):
    """(collected count or None, the case rows) of one results file, with its xdist workers'
    files (``path.gwN``: each worker collects every case and runs its share)."""
    collected, rows = None, []
    workers = sorted(glob.glob(glob.escape(path) + ".gw*"))
    for one in [path, *workers]:
        if not os.path.exists(one):
            continue
        with open(one) as f:
            for line in f:
                row = json.loads(line)
                if "collected" in row:
                    collected = max(collected or 0, row["collected"])
                elif one != path or not workers:
                    # (xdist's controller also sees every worker's report: counted once)
                    rows.append(row)
    return collected, rows


_MISSING = [
    re.compile(r"JAX's ([\w.]+) is not implemented in functx"),
    re.compile(r"functx lacks (jax[\w.]*)"),
    re.compile(r"module '([\w.]+)' has no attribute '(\w+)'"),
    re.compile(r"No module named '([\w.]+)'; '[\w.]+' is not a package"),
]


def cause(message):
    """A short key for what made a case fail (the error class and the message's gist)."""
    first = message.strip().splitlines()[0] if message.strip() else "(no message)"
    for pat in _MISSING:
        m = pat.search(first)
        if m:
            return "missing " + ".".join(m.groups()).replace("functx", "jax")
    first = re.sub(r"0x[0-9a-f]+", "0x..", first)
    first = re.sub(r"\b\d+(\.\d+)?\b", "N", first)
    first = re.sub(r"(float|int|uint|complex|bfloat)\d+", r"\1N", first)
    return first[:110]


def summary(args):
    total = collections.Counter()
    causes = collections.Counter()
    rows = []
    for name in args.files:
        # ``NAME@DIR`` takes that file's results from another --out folder (runs of other settings)
        name, _, where = name.partition("@")
        path = os.path.join(where or args.out, f"{name}.jsonl")
        if not glob.glob(glob.escape(path) + "*"):
            continue
        collected, res = load(path)
        c = collections.Counter(r["outcome"] for r in res)
        rows.append(
            (name, collected, len(res), c["passed"], c["failed"] + c["error"], c["skipped"])
        )
        total.update(c)
        total["collected"] += collected or 0
        total["ran"] += len(res)
        for r in res:
            if r["outcome"] in ("failed", "error"):
                causes[cause(r["message"])] += 1
    print("| file | cases | run | passed | failed | skipped |")
    print("| --- | --- | --- | --- | --- | --- |")
    for row in rows:
        print("| {} | {} | {} | {} | {} | {} |".format(*row))
    t = total
    print(
        f"| all | {t['collected']} | {t['ran']} | {t['passed']} | "
        f"{t['failed'] + t['error']} | {t['skipped']} |"
    )
    print()
    for key, n in causes.most_common(args.top):
        print(f"{n:5d}  {key}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jax-git", default="/work/.mirror/jax-ml+jax/repo")
    p.add_argument("--ref", default="jax-v0.10.2")
    p.add_argument("--out", default="/tmp/jaxtests")
    p.add_argument("--files", nargs="*", default=FILES, help="with --summary, NAME@DIR too")
    p.add_argument("--timeout", type=int, default=60, help="seconds per case")
    p.add_argument("--num-cases", type=int, default=10, help="JAX_NUM_GENERATED_CASES")
    p.add_argument("--summary", action="store_true", help="only summarise earlier results")
    p.add_argument("--top", type=int, default=40)
    p.add_argument("--src", help="a folder holding the <name>_test.py files (instead of git)")
    p.add_argument("--jobs", type=int, default=1, help="files run at once")
    p.add_argument("--xdist", type=int, default=1, help="pytest-xdist workers per file")
    p.add_argument("-k", help="pytest's -k: run only the cases whose names match")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if not args.summary:
        work = os.path.join(os.path.abspath(args.out), "work")
        prepare(args, work)
        with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
            list(pool.map(lambda name: run_file(args, work, name), args.files))
    summary(args)


if __name__ == "__main__":
    main()

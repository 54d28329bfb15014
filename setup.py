"""functx's build: the package as pyproject.toml describes it, plus one step, ``build_fxgemm``,
that compiles functx's fixed C++ libraries for this machine next to the package, as jaxlib ships
its kernels compiled (``functx/lowering/toolchain.py``'s ``LIBRARIES``: ``cpp/gemm.py``'s float32
product for AVX-512 CPUs and ``cpp/attention.py``'s flash-attention steps; ``cpp/native.py``):
without them, each new cache directory compiles them at run time (0.9 s of gcc for the product,
0.6 s for the attention steps of one head dimension), which a program's first run waits for. It
runs in ``pip install .`` and ``pip install -e .`` (in place, beside the source); where there is
no compiler, no AVX-512 or the compiler fails, the install goes on without them and functx builds
what a program needs in its cache as before. At run time a library is used only where its record
says it was built from the same source, with the same flags, for this CPU, and the files can be
trusted (``native.Library.prebuilt``)"""

import importlib.util
import os
from concurrent.futures import ThreadPoolExecutor

from setuptools import Command, Distribution, setup
from setuptools.command.build import build

ROOT = os.path.dirname(os.path.abspath(__file__))
CPP = os.path.join("functx", "lowering", "cpp")


def _toolchain():
    """``functx/lowering/toolchain.py`` loaded by its path (the standard library only: functx's
    dependencies may not be installed yet)."""
    path = os.path.join(ROOT, "functx", "lowering", "toolchain.py")
    spec = importlib.util.spec_from_file_location("_functx_toolchain", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class build_fxgemm(Command):  # noqa: N801 - (setuptools' command naming)
    description = "compile functx's fixed C++ libraries (lowering/cpp/native.py) for this machine"
    user_options = []

    def initialize_options(self):
        self.build_lib = None
        self.editable_mode = False
        self._outputs = []

    def finalize_options(self):
        self.set_undefined_options("build_py", ("build_lib", "build_lib"))

    def run(self):
        tc = _toolchain()
        if " avx512f" not in tc.cpu_flags():
            print("functx: no AVX-512 on this CPU: its fixed libraries are not built")
            return
        dest = os.path.join(ROOT if self.editable_mode else self.build_lib, CPP)

        def build_one(item):
            name, (file, flags) = item
            out = os.path.join(dest, name + ".so")
            return out, tc.build_library(os.path.join(ROOT, CPP, file), out, flags)

        with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
            for out, why in pool.map(build_one, tc.LIBRARIES.items()):
                if why is not None:
                    print(f"functx: {out} was not built ({why}); functx builds it at run time")
                elif not self.editable_mode:
                    self._outputs += [out, out[:-3] + ".json"]

    def get_outputs(self):
        return self._outputs

    def get_output_mapping(self):
        return {}


class BinaryDistribution(Distribution):
    """A wheel holding the library is for this platform, not every one."""

    def has_ext_modules(self):
        return True


build.sub_commands = [*build.sub_commands, ("build_fxgemm", None)]
setup(cmdclass={"build_fxgemm": build_fxgemm}, distclass=BinaryDistribution)

"""functx's build: the package as pyproject.toml describes it, plus one step, ``build_fxgemm``,
that compiles ``functx/lowering/cpp/fx_sgemm512.cpp`` (``cpp/gemm.py``'s float32 product for
AVX-512 CPUs) for this machine next to the package, as jaxlib ships its kernels compiled: without
it, each new cache directory compiles it at run time (0.9 s of gcc, which a program's first run
waits for). It runs in ``pip install .`` and ``pip install -e .`` (in place, beside the source);
where there is no compiler, no AVX-512 or the compiler fails, the install goes on without it and
functx builds the library in its cache as before. At run time the library is used only where its
record says it was built from the same source, with the same flags, for this CPU, and the files
can be trusted (``cpp/gemm.py``'s ``prebuilt``)."""

import importlib.util
import os

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
    description = "compile functx's AVX-512 float32 product library for this machine"
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
            print("functx: no AVX-512 on this CPU: the product library is not built")
            return
        dest = os.path.join(ROOT if self.editable_mode else self.build_lib, CPP)
        out = os.path.join(dest, "fx_sgemm512.so")
        why = tc.build_library(os.path.join(ROOT, CPP, "fx_sgemm512.cpp"), out)
        if why is not None:
            print(
                f"functx: the product library was not built ({why}); functx builds it at run time"
            )
            return
        print(f"functx: built {out}")
        if not self.editable_mode:
            self._outputs = [out, out[:-3] + ".json"]

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

"""The C++ backend: ``program.py`` (``CppProgram``, the kernel-kind table), ``emit.py`` (element
code), one module per kernel kind, and ``prelude.py`` (the inline helpers every unit includes)."""

"""The Triton backend: ``program.py`` (``TritonProgram``, the kernel-kind table,
``compile_triton``), ``emit.py`` (element code), ``blocks.py`` (block sizes), one module per
kernel kind, ``prelude.py`` (the head of every generated module), ``runtime.py`` (loading and
launching it) and ``interpreter.py`` (NumPy stand-ins for libdevice under
``TRITON_INTERPRET=1``)."""

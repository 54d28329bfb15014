// functx's call extension (lowering/runtime.py's fast_call): a CPython module, compiled as C
// when functx is installed (setup.py, toolchain.LIBRARIES) or else in the cache.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
typedef int (*fx_run_t)(void**);

// call(fn, arrays): pass the data pointers of C-contiguous buffers to fx_run; -2 if one is not.
static PyObject* call(PyObject* self, PyObject* args) {
  unsigned long long fn; PyObject* seq;
  if (!PyArg_ParseTuple(args, "KO", &fn, &seq)) return NULL;
  Py_ssize_t n = PyList_GET_SIZE(seq);
  void* stack_ptrs[64];
  void** ptrs = n <= 64 ? stack_ptrs : (void**)PyMem_Malloc(n * sizeof(void*));
  for (Py_ssize_t i = 0; i < n; ++i) {
    Py_buffer view;
    if (PyObject_GetBuffer(PyList_GET_ITEM(seq, i), &view, PyBUF_C_CONTIGUOUS) != 0) {
      PyErr_Clear(); if (ptrs != stack_ptrs) PyMem_Free(ptrs); return PyLong_FromLong(-2); }
    ptrs[i] = view.buf;
    PyBuffer_Release(&view);
  }
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = ((fx_run_t)fn)(ptrs);
  Py_END_ALLOW_THREADS
  if (ptrs != stack_ptrs) PyMem_Free(ptrs);
  return PyLong_FromLong(rc);
}
static PyMethodDef methods[] = {{"call", call, METH_VARARGS, "call a compiled program"},
                                {NULL, NULL, 0, NULL}};
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_fxcall", NULL, -1, methods};
PyMODINIT_FUNC PyInit__fxcall(void) { return PyModule_Create(&mod); }

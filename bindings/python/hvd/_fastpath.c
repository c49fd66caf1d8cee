/* The per-call path of the Python binding in C: one call starts an allreduce, a grouped
 * allreduce or a broadcast, polls or waits for a handle, with the options and the shape
 * built on the C stack. Through ctypes the same call builds an options Structure and a shape array
 * in Python and converts every argument, several microseconds per tensor, which a
 * training step pays once per gradient.
 *
 * It does not link libhvd. hvd._library chooses and loads the library (HVD_LIBRARY,
 * the launcher's MPI build, ...) and bind() receives the addresses of the functions
 * used here from that very library, so the fast path and ctypes always call the same
 * runtime. Only include/hvd/hvd.h, the ABI, is shared at build time.
 *
 * Errors: a failing libhvd call returns its status as a negative number (handles are
 * never negative); the caller reads hvd_last_error() on the same thread, as after any
 * ctypes call. Wrong Python argument types raise TypeError/OverflowError. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <limits.h>
#include <stdint.h>

#include "hvd/hvd.h"

typedef hvd_status_t (*allreduce_async_fn)(const void*, void*, int64_t, hvd_dtype_t,
                                           hvd_reduce_op_t, const char*,
                                           const hvd_op_options_t*, hvd_handle_t*);
typedef hvd_status_t (*broadcast_async_fn)(void*, int64_t, hvd_dtype_t, int, const char*,
                                           const hvd_op_options_t*, hvd_handle_t*);
typedef hvd_status_t (*grouped_allreduce_async_fn)(int, const void* const*, void* const*,
                                                   const int64_t*, hvd_dtype_t,
                                                   hvd_reduce_op_t, const char*,
                                                   const hvd_op_options_t*, hvd_handle_t*);
typedef hvd_status_t (*poll_fn)(hvd_handle_t, int*);
typedef hvd_status_t (*wait_fn)(hvd_handle_t);

static struct {
  allreduce_async_fn allreduce_async;
  broadcast_async_fn broadcast_async;
  grouped_allreduce_async_fn grouped_allreduce_async;
  poll_fn poll;
  wait_fn wait;
} hvd;

static int bound(void) {
  if (hvd.allreduce_async && hvd.broadcast_async && hvd.grouped_allreduce_async && hvd.poll &&
      hvd.wait)
    return 1;
  PyErr_SetString(PyExc_RuntimeError, "hvd._fastpath: bind() was not called");
  return 0;
}

static void* address_of(PyObject* value) {
  return value == Py_None ? NULL : PyLong_AsVoidPtr(value);
}

static PyObject* fast_bind(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  (void)self;
  if (nargs != 5) {
    PyErr_SetString(PyExc_TypeError,
                    "bind(allreduce_async, broadcast_async, grouped_allreduce_async, poll, "
                    "wait): 5 addresses");
    return NULL;
  }
  void* fns[5];
  for (int i = 0; i < 5; ++i) {
    fns[i] = PyLong_AsVoidPtr(args[i]);
    if (!fns[i]) {
      if (!PyErr_Occurred())
        PyErr_SetString(PyExc_ValueError, "bind: a function address is NULL");
      return NULL;
    }
  }
  hvd.allreduce_async = (allreduce_async_fn)fns[0];
  hvd.broadcast_async = (broadcast_async_fn)fns[1];
  hvd.grouped_allreduce_async = (grouped_allreduce_async_fn)fns[2];
  hvd.poll = (poll_fn)fns[3];
  hvd.wait = (wait_fn)fns[4];
  Py_RETURN_NONE;
}

/* The options every fast call fills: scales, device, process set, stream, shape. The
 * shape (a sequence of ints, a torch.Size, or None) lands in `dims`, which must outlive
 * the libhvd call only (the library reads it during the call). */
static int fill_options(hvd_op_options_t* options, int64_t dims[HVD_MAX_NDIM],
                        PyObject* prescale, PyObject* postscale, PyObject* device,
                        PyObject* set_id, PyObject* stream, PyObject* shape) {
  options->prescale_factor = PyFloat_AsDouble(prescale);
  options->postscale_factor = PyFloat_AsDouble(postscale);
  options->device = (int32_t)PyLong_AsLong(device);
  options->process_set_id = (int32_t)PyLong_AsLong(set_id);
  options->stream = address_of(stream);
  if (PyErr_Occurred()) return 0;
  if (shape == Py_None) return 1;
  PyObject* seq = PySequence_Fast(shape, "shape must be a sequence of ints or None");
  if (!seq) return 0;
  Py_ssize_t ndim = PySequence_Fast_GET_SIZE(seq);
  /* Scalars, and tensors of more dimensions than libhvd describes, are compared by
   * element count only (as the ctypes path does). */
  int ok = 1;
  if (ndim > 0 && ndim <= HVD_MAX_NDIM) {
    for (Py_ssize_t i = 0; ok && i < ndim; ++i) {
      dims[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
      ok = !(dims[i] == -1 && PyErr_Occurred());
    }
    options->shape = dims;
    options->ndim = (int32_t)ndim;
  }
  Py_DECREF(seq);
  return ok;
}

static int name_of(PyObject* name, const char** out) {
  if (name == Py_None) {
    *out = NULL;
    return 1;
  }
  *out = PyBytes_AsString(name);
  return *out != NULL;
}

/* The arguments allreduce and grouped_allreduce end with: dtype, op, name, prescale,
 * postscale, device, set_id, stream, shape. */
static int parse_reduction(PyObject* const* args, int* dtype, int* op, const char** name,
                           hvd_op_options_t* options, int64_t dims[HVD_MAX_NDIM]) {
  *dtype = (int)PyLong_AsLong(args[0]);
  *op = (int)PyLong_AsLong(args[1]);
  return !PyErr_Occurred() && name_of(args[2], name) &&
         fill_options(options, dims, args[3], args[4], args[5], args[6], args[7], args[8]);
}

/* Every enqueue's first checks: the argument count, and a bound library. */
static int begin_call(const char* function, Py_ssize_t nargs, Py_ssize_t want) {
  if (nargs != want) {
    PyErr_Format(PyExc_TypeError, "%s takes %zd arguments (%zd given)", function, want, nargs);
    return 0;
  }
  return bound();
}

static PyObject* handle_or_status(hvd_status_t status, hvd_handle_t handle) {
  return PyLong_FromLongLong(status == HVD_SUCCESS ? (long long)handle : -(long long)status);
}

/* allreduce(send, recv, count, dtype, op, name, prescale, postscale, device, set_id,
 *           stream, shape) -> handle, or -status */
static PyObject* fast_allreduce(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  (void)self;
  if (!begin_call("allreduce", nargs, 12)) return NULL;
  hvd_op_options_t options = HVD_OP_OPTIONS_INITIALIZER;
  int64_t dims[HVD_MAX_NDIM];
  const char* name;
  int dtype, op;
  void* send = address_of(args[0]);
  void* recv = address_of(args[1]);
  long long count = PyLong_AsLongLong(args[2]);
  if (PyErr_Occurred() || !parse_reduction(args + 3, &dtype, &op, &name, &options, dims))
    return NULL;
  hvd_handle_t handle = 0;
  hvd_status_t status = hvd.allreduce_async(send, recv, (int64_t)count, (hvd_dtype_t)dtype,
                                            (hvd_reduce_op_t)op, name, &options, &handle);
  return handle_or_status(status, handle);
}

/* broadcast(buf, count, dtype, root_rank, name, device, set_id, stream, shape)
 *   -> handle, or -status */
static PyObject* fast_broadcast(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  (void)self;
  if (!begin_call("broadcast", nargs, 9)) return NULL;
  hvd_op_options_t options = HVD_OP_OPTIONS_INITIALIZER;
  int64_t dims[HVD_MAX_NDIM];
  const char* name;
  static PyObject* one = NULL;
  if (!one && !(one = PyFloat_FromDouble(1.0))) return NULL;
  void* buf = address_of(args[0]);
  long long count = PyLong_AsLongLong(args[1]);
  int dtype = (int)PyLong_AsLong(args[2]);
  int root = (int)PyLong_AsLong(args[3]);
  if (PyErr_Occurred() || !name_of(args[4], &name) ||
      !fill_options(&options, dims, one, one, args[5], args[6], args[7], args[8]))
    return NULL;
  hvd_handle_t handle = 0;
  hvd_status_t status = hvd.broadcast_async(buf, (int64_t)count, (hvd_dtype_t)dtype, root,
                                            name, &options, &handle);
  return handle_or_status(status, handle);
}

/* grouped_allreduce(sends, recvs, counts, dtype, op, name, prescale, postscale, device,
 *                   set_id, stream, shape) -> handle, or -status. sends, recvs, counts:
 * sequences of one length (addresses and element counts); shape: the shape of a group
 * of one, or None. */
static PyObject* fast_grouped_allreduce(PyObject* self, PyObject* const* args,
                                        Py_ssize_t nargs) {
  (void)self;
  if (!begin_call("grouped_allreduce", nargs, 12)) return NULL;
  PyObject* seqs[3] = {NULL, NULL, NULL};
  void** sends = NULL;
  int64_t* counts = NULL;
  PyObject* result = NULL;
  static const char* what[3] = {"sends must be a sequence of addresses",
                                "recvs must be a sequence of addresses",
                                "counts must be a sequence of ints"};
  for (int k = 0; k < 3; ++k)
    if (!(seqs[k] = PySequence_Fast(args[k], what[k]))) goto done;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seqs[0]);
  if (PySequence_Fast_GET_SIZE(seqs[1]) != n || PySequence_Fast_GET_SIZE(seqs[2]) != n) {
    PyErr_SetString(PyExc_ValueError, "sends, recvs and counts must have one length");
    goto done;
  }
  if (n > INT_MAX) {
    PyErr_SetString(PyExc_OverflowError, "too many tensors in one group");
    goto done;
  }
  /* Two arrays in one allocation: the addresses (sends, then recvs), the counts. */
  sends = PyMem_Malloc(sizeof(void*) * 2 * (size_t)(n ? n : 1));
  counts = PyMem_Malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  if (!sends || !counts) {
    PyErr_NoMemory();
    goto done;
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    sends[i] = address_of(PySequence_Fast_GET_ITEM(seqs[0], i));
    sends[n + i] = address_of(PySequence_Fast_GET_ITEM(seqs[1], i));
    counts[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seqs[2], i));
    if (PyErr_Occurred()) goto done;
  }
  hvd_op_options_t options = HVD_OP_OPTIONS_INITIALIZER;
  int64_t dims[HVD_MAX_NDIM];
  const char* name;
  int dtype, op;
  if (!parse_reduction(args + 3, &dtype, &op, &name, &options, dims)) goto done;
  hvd_handle_t handle = 0;
  hvd_status_t status = hvd.grouped_allreduce_async(
      (int)n, (const void* const*)sends, (void* const*)(sends + n), counts, (hvd_dtype_t)dtype,
      (hvd_reduce_op_t)op, name, &options, &handle);
  result = handle_or_status(status, handle);
done:
  PyMem_Free(sends);
  PyMem_Free(counts);
  for (int k = 0; k < 3; ++k) Py_XDECREF(seqs[k]);
  return result;
}

/* poll(handle) -> 1 done, 0 running, or -status */
static PyObject* fast_poll(PyObject* self, PyObject* arg) {
  (void)self;
  if (!bound()) return NULL;
  long long handle = PyLong_AsLongLong(arg);
  if (handle == -1 && PyErr_Occurred()) return NULL;
  int done = 0;
  hvd_status_t status = hvd.poll((hvd_handle_t)handle, &done);
  return PyLong_FromLong(status == HVD_SUCCESS ? done : -(long)status);
}

/* wait(handle) -> status. Other Python threads run meanwhile (the wait may be long). */
static PyObject* fast_wait(PyObject* self, PyObject* arg) {
  (void)self;
  if (!bound()) return NULL;
  long long handle = PyLong_AsLongLong(arg);
  if (handle == -1 && PyErr_Occurred()) return NULL;
  hvd_status_t status;
  Py_BEGIN_ALLOW_THREADS
  status = hvd.wait((hvd_handle_t)handle);
  Py_END_ALLOW_THREADS
  return PyLong_FromLong((long)status);
}

static PyMethodDef methods[] = {
    {"bind", (PyCFunction)(void (*)(void))fast_bind, METH_FASTCALL,
     "bind(allreduce_async, broadcast_async, grouped_allreduce_async, poll, wait): the "
     "loaded libhvd's functions"},
    {"allreduce", (PyCFunction)(void (*)(void))fast_allreduce, METH_FASTCALL,
     "allreduce(send, recv, count, dtype, op, name, prescale, postscale, device, set_id, "
     "stream, shape) -> handle, or -status"},
    {"broadcast", (PyCFunction)(void (*)(void))fast_broadcast, METH_FASTCALL,
     "broadcast(buf, count, dtype, root_rank, name, device, set_id, stream, shape) -> "
     "handle, or -status"},
    {"grouped_allreduce", (PyCFunction)(void (*)(void))fast_grouped_allreduce, METH_FASTCALL,
     "grouped_allreduce(sends, recvs, counts, dtype, op, name, prescale, postscale, device, "
     "set_id, stream, shape) -> handle, or -status"},
    {"poll", fast_poll, METH_O, "poll(handle) -> 1 done, 0 running, or -status"},
    {"wait", fast_wait, METH_O, "wait(handle) -> status (the GIL is released meanwhile)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fastpath",
    "libhvd's per-call path for the Python binding (see hvd/_fastpath.c)", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__fastpath(void) { return PyModule_Create(&module); }

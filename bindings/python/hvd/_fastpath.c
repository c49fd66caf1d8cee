/* The per-call path of the Python binding in C: one call starts an allreduce, a grouped
 * allreduce or a broadcast and returns its hvd.Handle (_handle.c), with the options and
 * the shape built on the C stack and the name checked and registered in C. Through
 * ctypes and Python the same call builds an options Structure, a shape array and two
 * Python objects per operation, several microseconds per tensor, which a training step
 * pays once per gradient.
 *
 * It does not link libhvd. hvd._library chooses and loads the library (HVD_LIBRARY,
 * the launcher's MPI build, ...) and bind() receives the addresses of the functions
 * used here from that very library, so the fast path and ctypes always call the same
 * runtime. Only include/hvd/hvd.h, the ABI, is shared at build time.
 *
 * Errors: a refused enqueue raises the HvdError that hvd.errors.check makes of its
 * status (bind_errors() hands those functions over), read on the same thread as the
 * failing call. poll() and wait() of a raw handle return statuses (negative for poll).
 * Wrong Python argument types raise TypeError/OverflowError. */
#include "_fastpath.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

struct fastpath_library hvd;

int fastpath_bound(void) {
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
  /* A tuple, or a subclass such as torch.Size, is read in place: PySequence_Fast
   * copies a subclass into a new list through its iterator (measured: about as long
   * as the whole enqueue in libhvd). */
  PyObject* seq = PyTuple_Check(shape) ? Py_NewRef(shape)
                                        : PySequence_Fast(shape, "shape must be a sequence of ints or None");
  if (!seq) return 0;
  int32_t ndim = 0;
  const int ok = read_shape(seq, dims, &ndim, NULL);
  if (ok && ndim > 0) {
    options->shape = dims;
    options->ndim = ndim;
  }
  Py_DECREF(seq);
  return ok;
}

int read_shape(PyObject* seq, int64_t dims[HVD_MAX_NDIM], int32_t* ndim, int64_t* count) {
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  /* Scalars, and tensors of more dimensions than libhvd describes, are compared by
   * element count only (as the ctypes path does). */
  const int described = n > 0 && n <= HVD_MAX_NDIM;
  *ndim = described ? (int32_t)n : 0;
  if (!described && !count) return 1;
  int64_t product = 1;
  for (Py_ssize_t i = 0; i < n; ++i) {
    const long long d = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
    if (d == -1 && PyErr_Occurred()) return 0;
    if (described) dims[i] = d;
    if (product >= 0 && (d < 0 || __builtin_mul_overflow(product, (int64_t)d, &product)))
      product = -1;
  }
  if (count) *count = product;
  return 1;
}

/* The keys of the global set's names, by the str the caller passed: a training step
 * names the same gradients every step, and encoding a name and building its key took
 * two allocations and a hash of the bytes a call. A cache, emptied when it holds
 * KEY_CACHE_LIMIT names, so a job that makes names up keeps a bounded set. */
#define KEY_CACHE_LIMIT 16384
static PyObject* global_keys; /* dict: str -> (HVD_GLOBAL_PROCESS_SET, bytes) */

/* A name the rule of hvd._raw.encode_name refuses (NUL, not UTF-8): its ValueError,
 * raised by that function so that both paths say the same. */
static int name_refused(PyObject* name) {
  PyObject* raw = PyImport_ImportModule("hvd._raw");
  PyObject* encoded = raw ? PyObject_CallMethod(raw, "encode_name", "O", name) : NULL;
  Py_XDECREF(raw);
  if (encoded) {
    Py_DECREF(encoded);
    PyErr_Format(PyExc_ValueError, "name %R is not UTF-8 text without NUL", name);
  }
  return 0;
}

static int name_build(struct call_name* n, PyObject* name, PyObject* set_id) {
  if (PyBytes_Check(name)) {
    PyObject* text = PyUnicode_DecodeUTF8(PyBytes_AS_STRING(name), PyBytes_GET_SIZE(name), "strict");
    if (!text) {
      PyErr_Clear();
      return name_refused(name);
    }
    Py_DECREF(text);
    n->bytes = Py_NewRef(name);
  } else if (PyUnicode_Check(name)) {
    n->bytes = PyUnicode_AsUTF8String(name);
  } else {
    PyObject* text = PyObject_Str(name);
    n->bytes = text ? PyUnicode_AsUTF8String(text) : NULL;
    Py_XDECREF(text);
  }
  if (!n->bytes) {
    if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) return 0;
    PyErr_Clear();
    return name_refused(name);
  }
  if (memchr(PyBytes_AS_STRING(n->bytes), 0, (size_t)PyBytes_GET_SIZE(n->bytes))) {
    Py_CLEAR(n->bytes);
    return name_refused(name);
  }
  n->key = PyTuple_Pack(2, set_id, n->bytes);
  return n->key != NULL;
}

int name_begin(struct call_name* n, PyObject* name, PyObject* set_id, int32_t set) {
  n->bytes = n->key = NULL;
  if (name == Py_None) return 1;
  /* Exact str only: a subclass may hash or compare differently from the name it encodes. */
  if (set != HVD_GLOBAL_PROCESS_SET || !PyUnicode_CheckExact(name))
    return name_build(n, name, set_id);
  if (!global_keys && !(global_keys = PyDict_New())) return 0;
  PyObject* key = PyDict_GetItemWithError(global_keys, name); /* borrowed */
  if (key) {
    n->key = Py_NewRef(key);
    n->bytes = Py_NewRef(PyTuple_GET_ITEM(key, 1));
    return 1;
  }
  if (PyErr_Occurred() || !name_build(n, name, set_id)) return 0;
  if (PyDict_GET_SIZE(global_keys) >= KEY_CACHE_LIMIT) PyDict_Clear(global_keys);
  return PyDict_SetItem(global_keys, name, n->key) == 0;
}

const char* name_text(const struct call_name* n) {
  return n->bytes ? PyBytes_AS_STRING(n->bytes) : NULL;
}

void name_end(struct call_name* n) {
  Py_CLEAR(n->bytes);
  Py_CLEAR(n->key);
}

/* The arguments allreduce and grouped_allreduce end with: dtype, op, name, prescale,
 * postscale, device, set_id, stream, shape. */
static int parse_reduction(PyObject* const* args, int* dtype, int* op, struct call_name* name,
                           hvd_op_options_t* options, int64_t dims[HVD_MAX_NDIM]) {
  *dtype = (int)PyLong_AsLong(args[0]);
  *op = (int)PyLong_AsLong(args[1]);
  return !PyErr_Occurred() &&
         fill_options(options, dims, args[3], args[4], args[5], args[6], args[7], args[8]) &&
         name_begin(name, args[2], args[6], options->process_set_id);
}

/* Every enqueue's first checks: the argument count, and a bound library. */
static int begin_call(const char* function, Py_ssize_t nargs, Py_ssize_t want) {
  if (nargs != want) {
    PyErr_Format(PyExc_TypeError, "%s takes %zd arguments (%zd given)", function, want, nargs);
    return 0;
  }
  return fastpath_bound();
}

/* The C functions' names, as errors and Handles show them (made once). */
static PyObject* function_name(PyObject** cached, const char* text) {
  if (!*cached) *cached = PyUnicode_InternFromString(text);
  return *cached;
}

/* What every enqueue ends with: the Handle of an accepted operation, or the library's
 * refusal raised. `tail`: keepalive, finish, result (see handle_new). */
static PyObject* handle_or_raise(hvd_status_t status, hvd_handle_t handle,
                                 const struct call_name* name, PyObject* function,
                                 PyObject* const* tail) {
  if (status != HVD_SUCCESS) return handle_raise_status(status, function);
  return handle_new((long long)handle, name->key, function, tail[0], tail[1], tail[2], NULL);
}

PyObject* enqueue_allreduce(void* send, void* recv, int64_t count, int dtype, int op,
                            struct call_name* name, const hvd_op_options_t* options,
                            PyObject* const* tail) {
  static PyObject* function;
  if (!function_name(&function, "hvd_allreduce") || handle_claim_name(name->key) != 0)
    return NULL;
  hvd_handle_t handle = 0;
  hvd_status_t status = hvd.allreduce_async(send, recv, count, (hvd_dtype_t)dtype,
                                            (hvd_reduce_op_t)op, name_text(name), options,
                                            &handle);
  return handle_or_raise(status, handle, name, function, tail);
}

/* allreduce(send, recv, count, dtype, op, name, prescale, postscale, device, set_id,
 *           stream, shape, keepalive, finish, result) -> Handle */
static PyObject* fast_allreduce(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  (void)self;
  if (!begin_call("allreduce", nargs, 15)) return NULL;
  hvd_op_options_t options = HVD_OP_OPTIONS_INITIALIZER;
  int64_t dims[HVD_MAX_NDIM];
  struct call_name name = {NULL, NULL};
  int dtype, op;
  void* send = address_of(args[0]);
  void* recv = address_of(args[1]);
  long long count = PyLong_AsLongLong(args[2]);
  PyObject* result = NULL;
  if (PyErr_Occurred()) return NULL;
  if (parse_reduction(args + 3, &dtype, &op, &name, &options, dims))
    result = enqueue_allreduce(send, recv, (int64_t)count, dtype, op, &name, &options,
                               args + 12);
  name_end(&name);
  return result;
}

/* broadcast(buf, count, dtype, root_rank, name, device, set_id, stream, shape,
 *           keepalive, finish, result) -> Handle */
static PyObject* fast_broadcast(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  (void)self;
  static PyObject* function;
  static PyObject* one = NULL;
  if (!begin_call("broadcast", nargs, 12) || !function_name(&function, "hvd_broadcast"))
    return NULL;
  if (!one && !(one = PyFloat_FromDouble(1.0))) return NULL;
  hvd_op_options_t options = HVD_OP_OPTIONS_INITIALIZER;
  int64_t dims[HVD_MAX_NDIM];
  struct call_name name;
  void* buf = address_of(args[0]);
  long long count = PyLong_AsLongLong(args[1]);
  int dtype = (int)PyLong_AsLong(args[2]);
  int root = (int)PyLong_AsLong(args[3]);
  PyObject* result = NULL;
  if (PyErr_Occurred() ||
      !fill_options(&options, dims, one, one, args[5], args[6], args[7], args[8]) ||
      !name_begin(&name, args[4], args[6], options.process_set_id))
    return NULL;
  if (handle_claim_name(name.key) == 0) {
    hvd_handle_t handle = 0;
    hvd_status_t status = hvd.broadcast_async(buf, (int64_t)count, (hvd_dtype_t)dtype, root,
                                              name_text(&name), &options, &handle);
    result = handle_or_raise(status, handle, &name, function, args + 9);
  }
  name_end(&name);
  return result;
}

/* grouped_allreduce(sends, recvs, counts, dtype, op, name, prescale, postscale, device,
 *                   set_id, stream, shape, keepalive, finish, result) -> Handle.
 * sends, recvs, counts: sequences of one length (addresses and element counts); shape:
 * the shape of a group of one, or None. */
static PyObject* fast_grouped_allreduce(PyObject* self, PyObject* const* args,
                                        Py_ssize_t nargs) {
  (void)self;
  static PyObject* function;
  if (!begin_call("grouped_allreduce", nargs, 15) ||
      !function_name(&function, "hvd_grouped_allreduce"))
    return NULL;
  PyObject* seqs[3] = {NULL, NULL, NULL};
  void** sends = NULL;
  int64_t* counts = NULL;
  PyObject* result = NULL;
  struct call_name name = {NULL, NULL};
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
  int dtype, op;
  if (!parse_reduction(args + 3, &dtype, &op, &name, &options, dims) ||
      handle_claim_name(name.key) < 0)
    goto done;
  hvd_handle_t handle = 0;
  hvd_status_t status = hvd.grouped_allreduce_async(
      (int)n, (const void* const*)sends, (void* const*)(sends + n), counts, (hvd_dtype_t)dtype,
      (hvd_reduce_op_t)op, name_text(&name), &options, &handle);
  result = handle_or_raise(status, handle, &name, function, args + 12);
done:
  name_end(&name);
  PyMem_Free(sends);
  PyMem_Free(counts);
  for (int k = 0; k < 3; ++k) Py_XDECREF(seqs[k]);
  return result;
}

/* poll(handle) -> 1 done, 0 running, or -status */
static PyObject* fast_poll(PyObject* self, PyObject* arg) {
  (void)self;
  if (!fastpath_bound()) return NULL;
  long long handle = PyLong_AsLongLong(arg);
  if (handle == -1 && PyErr_Occurred()) return NULL;
  int done = 0;
  hvd_status_t status = hvd.poll((hvd_handle_t)handle, &done);
  return PyLong_FromLong(status == HVD_SUCCESS ? done : -(long)status);
}

/* wait(handle) -> status. Other Python threads run meanwhile (the wait may be long). */
static PyObject* fast_wait(PyObject* self, PyObject* arg) {
  (void)self;
  if (!fastpath_bound()) return NULL;
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
     "stream, shape, keepalive, finish, result) -> Handle"},
    {"broadcast", (PyCFunction)(void (*)(void))fast_broadcast, METH_FASTCALL,
     "broadcast(buf, count, dtype, root_rank, name, device, set_id, stream, shape, "
     "keepalive, finish, result) -> Handle"},
    {"grouped_allreduce", (PyCFunction)(void (*)(void))fast_grouped_allreduce, METH_FASTCALL,
     "grouped_allreduce(sends, recvs, counts, dtype, op, name, prescale, postscale, device, "
     "set_id, stream, shape, keepalive, finish, result) -> Handle"},
    {"poll", fast_poll, METH_O, "poll(handle) -> 1 done, 0 running, or -status"},
    {"wait", fast_wait, METH_O, "wait(handle) -> status (the GIL is released meanwhile)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fastpath",
    "libhvd's per-call path for the Python binding (see hvd/_fastpath.c)", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__fastpath(void) {
  PyObject* m = PyModule_Create(&module);
  if (!m) return NULL;
  if (PyModule_AddFunctions(m, handle_module_methods) < 0 ||
      PyModule_AddFunctions(m, torch_calls_methods) < 0 || handle_module_init(m) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}

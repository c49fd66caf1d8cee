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

struct fastpath_library hvd;

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
  /* A tuple, or a subclass such as torch.Size, is read in place: PySequence_Fast
   * copies a subclass into a new list through its iterator (measured: about as long
   * as the whole enqueue in libhvd). */
  PyObject* seq = PyTuple_Check(shape) ? Py_NewRef(shape)
                                        : PySequence_Fast(shape, "shape must be a sequence of ints or None");
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

/* A call's name: the UTF-8 bytes libhvd reads (a str is encoded, any other object
 * but None and bytes goes through str()), and the (process set id, name) key the
 * registry holds it by while the operation is pending. */
struct call_name {
  PyObject* bytes;  /* or NULL: an unnamed call */
  PyObject* key;
};

static int name_begin(struct call_name* n, PyObject* name, PyObject* set_id) {
  n->bytes = n->key = NULL;
  if (name == Py_None) return 1;
  if (PyBytes_Check(name)) {
    n->bytes = Py_NewRef(name);
  } else if (PyUnicode_Check(name)) {
    n->bytes = PyUnicode_AsUTF8String(name);
  } else {
    PyObject* text = PyObject_Str(name);
    n->bytes = text ? PyUnicode_AsUTF8String(text) : NULL;
    Py_XDECREF(text);
  }
  if (!n->bytes) return 0;
  n->key = PyTuple_Pack(2, set_id, n->bytes);
  return n->key != NULL;
}

static const char* name_text(const struct call_name* n) {
  return n->bytes ? PyBytes_AS_STRING(n->bytes) : NULL;
}

static void name_end(struct call_name* n) {
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
         name_begin(name, args[2], args[6]);
}

/* Every enqueue's first checks: the argument count, and a bound library. */
static int begin_call(const char* function, Py_ssize_t nargs, Py_ssize_t want) {
  if (nargs != want) {
    PyErr_Format(PyExc_TypeError, "%s takes %zd arguments (%zd given)", function, want, nargs);
    return 0;
  }
  return bound();
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

/* allreduce(send, recv, count, dtype, op, name, prescale, postscale, device, set_id,
 *           stream, shape, keepalive, finish, result) -> Handle */
static PyObject* fast_allreduce(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  (void)self;
  static PyObject* function;
  if (!begin_call("allreduce", nargs, 15) || !function_name(&function, "hvd_allreduce"))
    return NULL;
  hvd_op_options_t options = HVD_OP_OPTIONS_INITIALIZER;
  int64_t dims[HVD_MAX_NDIM];
  struct call_name name = {NULL, NULL};
  int dtype, op;
  void* send = address_of(args[0]);
  void* recv = address_of(args[1]);
  long long count = PyLong_AsLongLong(args[2]);
  PyObject* result = NULL;
  if (PyErr_Occurred()) return NULL;
  if (parse_reduction(args + 3, &dtype, &op, &name, &options, dims) &&
      handle_claim_name(name.key) == 0) {
    hvd_handle_t handle = 0;
    hvd_status_t status = hvd.allreduce_async(send, recv, (int64_t)count, (hvd_dtype_t)dtype,
                                              (hvd_reduce_op_t)op, name_text(&name), &options,
                                              &handle);
    result = handle_or_raise(status, handle, &name, function, args + 12);
  }
  name_end(&name);
  return result;
}

/* A torch tensor's attributes, read through Python's protocol (no torch headers): the
 * in-place allreduce's common case (a dense, contiguous host tensor of a type libhvd
 * has) in one C call, where the torch layer spent about as long as the call itself in
 * helper functions reading the same attributes. */
static PyObject* tensor_attribute(PyObject* tensor, PyObject** name, const char* text,
                                  int call) {
  if (!*name && !(*name = PyUnicode_InternFromString(text))) return NULL;
  return call ? PyObject_CallMethodNoArgs(tensor, *name) : PyObject_GetAttr(tensor, *name);
}

/* 1 when the attribute is True, 0 when False, -1 with an exception set. */
static int tensor_flag(PyObject* tensor, PyObject** name, const char* text, int call) {
  PyObject* value = tensor_attribute(tensor, name, text, call);
  if (!value) return -1;
  const int truth = PyObject_IsTrue(value);
  Py_DECREF(value);
  return truth;
}

/* tensor_allreduce_(tensor, name, op, prescale, postscale, set_id, dtype_codes)
 *   -> Handle, or None where the tensor is not a dense contiguous host tensor of a type
 * in dtype_codes (torch dtype -> libhvd type), or not a tensor at all: the caller's
 * general path then takes it, with its checks and messages. The Handle's result is
 * the tensor. */
static PyObject* fast_tensor_allreduce_(PyObject* self, PyObject* const* args,
                                        Py_ssize_t nargs) {
  (void)self;
  static PyObject *is_cpu, *is_sparse, *is_contiguous, *dtype_name, *data_ptr, *numel_name,
      *shape_name, *host;
  if (!begin_call("tensor_allreduce_", nargs, 7)) return NULL;
  if (!host && !(host = PyLong_FromLong(HVD_DEVICE_CPU))) return NULL;
  PyObject* tensor = args[0];
  if (tensor_flag(tensor, &is_cpu, "is_cpu", 0) != 1 ||
      tensor_flag(tensor, &is_sparse, "is_sparse", 0) != 0 ||
      tensor_flag(tensor, &is_contiguous, "is_contiguous", 1) != 1) {
    PyErr_Clear(); /* not a tensor this path takes: the general path says why */
    Py_RETURN_NONE;
  }
  PyObject* dtype = tensor_attribute(tensor, &dtype_name, "dtype", 0);
  PyObject* code = dtype ? PyDict_GetItemWithError(args[6], dtype) : NULL; /* borrowed */
  Py_XDECREF(dtype);
  if (!code) {
    PyErr_Clear();
    Py_RETURN_NONE;
  }
  PyObject* address = tensor_attribute(tensor, &data_ptr, "data_ptr", 1);
  PyObject* numel = address ? tensor_attribute(tensor, &numel_name, "numel", 1) : NULL;
  PyObject* shape = numel ? tensor_attribute(tensor, &shape_name, "shape", 0) : NULL;
  PyObject* result = NULL;
  if (shape) {
    /* allreduce()'s arguments: in place, on the host, the tensor kept and returned. */
    PyObject* call[15] = {address, address, numel,  code,    args[2], args[1], args[3], args[4],
                          host,    args[5], Py_None, shape, tensor,  Py_None, tensor};
    result = fast_allreduce(NULL, call, 15);
  }
  Py_XDECREF(address);
  Py_XDECREF(numel);
  Py_XDECREF(shape);
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
      !name_begin(&name, args[4], args[6]))
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
     "stream, shape, keepalive, finish, result) -> Handle"},
    {"tensor_allreduce_", (PyCFunction)(void (*)(void))fast_tensor_allreduce_, METH_FASTCALL,
     "tensor_allreduce_(tensor, name, op, prescale, postscale, set_id, dtype_codes) -> "
     "Handle, or None where the tensor is not a dense contiguous host tensor"},
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
  if (PyModule_AddFunctions(m, handle_module_methods) < 0 || handle_module_init(m) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}

/* torch's per-gradient calls in C: allreduce_async_ and synchronize with Horovod's
 * signatures, the functions hvd.torch (and so horovod.torch) exports where
 * hvd._fastpath was built.
 *
 * An optimizer, or a training script's own loop, calls allreduce_async_ once per
 * gradient. Through a Python function that called a C one, a gradient paid two
 * frames, the keyword handling and seven torch attribute reads; here the common case
 * (a dense, contiguous host tensor of a type libhvd has, without the negative bit, the
 * global set or a process set id, an op code, float scales) is read and enqueued in
 * this one call, with six attribute reads (the element count is the shape's product, and a sparse tensor has
 * no data pointer). Every other call goes, unchanged, to the Python function
 * (hvd/torch/async_ops.py), which checks it and says what is wrong; so does every
 * call while hvd._raw.fast is not this module (the tests swap it for ctypes).
 *
 * torch is read through Python's attribute protocol: no torch headers, no libtorch
 * link, nothing to rebuild when torch changes. */
#include "_fastpath.h"

#include <string.h>

/* What bind_torch() hands over, once (async_ops.py at import). */
static PyObject* general_allreduce_async_; /* the Python function: every other case */
static PyObject* dtype_codes;              /* dict: torch dtype -> libhvd dtype */
static PyObject* raw_namespace;            /* hvd._raw's __dict__, for its `fast` */
static PyObject* process_set_type;         /* hvd.ProcessSet */

static PyObject* torch_bind(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  (void)self;
  if (nargs != 4 || !PyCallable_Check(args[0]) || !PyDict_Check(args[1]) ||
      !PyModule_Check(args[2]) || !PyType_Check(args[3])) {
    PyErr_SetString(PyExc_TypeError,
                    "bind_torch(general_allreduce_async_, dtype_codes, hvd._raw module, "
                    "ProcessSet type)");
    return NULL;
  }
  PyObject* namespace = PyModule_GetDict(args[2]); /* borrowed */
  if (!namespace) return NULL;
  Py_XSETREF(general_allreduce_async_, Py_NewRef(args[0]));
  Py_XSETREF(dtype_codes, Py_NewRef(args[1]));
  Py_XSETREF(raw_namespace, Py_NewRef(namespace));
  Py_XSETREF(process_set_type, Py_NewRef(args[3]));
  Py_RETURN_NONE;
}

/* An attribute (call: a method called without arguments), its name interned once. */
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

/* What an in-place host allreduce needs of a tensor. */
struct host_tensor {
  void* data;
  int64_t count;
  int dtype;
  int64_t dims[HVD_MAX_NDIM];
  int32_t ndim; /* 0: compared by element count only (a scalar, or too many dims) */
};

/* 1 with `t` filled when `tensor` is a dense, contiguous host tensor of a type libhvd
 * has; 0 for anything else, with no exception left set (the general path then takes
 * the call, and says what is wrong where something is). -1: out of memory and such. */
static int read_host_tensor(PyObject* tensor, struct host_tensor* t) {
  static PyObject *is_cpu, *is_contiguous, *is_neg, *dtype_name, *data_ptr, *shape_name;
  /* A tensor with the negative bit (x.conj().imag, x._neg_view()) holds the negated
   * values in memory: the general path reduces a resolved copy. (The conjugate bit
   * is on complex tensors alone, which have no libhvd type.) */
  if (tensor_flag(tensor, &is_cpu, "is_cpu", 0) != 1 ||
      tensor_flag(tensor, &is_contiguous, "is_contiguous", 1) != 1 ||
      tensor_flag(tensor, &is_neg, "is_neg", 1) != 0)
    goto another_case;
  PyObject* dtype = tensor_attribute(tensor, &dtype_name, "dtype", 0);
  PyObject* code = dtype ? PyDict_GetItemWithError(dtype_codes, dtype) : NULL; /* borrowed */
  Py_XDECREF(dtype);
  if (!code) goto another_case;
  t->dtype = (int)PyLong_AsLong(code);
  /* A sparse (or any storage-less) tensor has no data pointer: data_ptr() raises. */
  PyObject* address = tensor_attribute(tensor, &data_ptr, "data_ptr", 1);
  if (!address) goto another_case;
  t->data = PyLong_AsVoidPtr(address);
  Py_DECREF(address);
  PyObject* shape = tensor_attribute(tensor, &shape_name, "shape", 0);
  if (!shape) goto another_case;
  /* A torch.Size: a tuple, read in place. */
  const int ok = PyTuple_Check(shape) && read_shape(shape, t->dims, &t->ndim, &t->count);
  Py_DECREF(shape);
  if (!ok || t->count < 0) goto another_case;
  return 1;
another_case:
  if (PyErr_Occurred()) {
    if (PyErr_ExceptionMatches(PyExc_MemoryError)) return -1;
    PyErr_Clear();
  }
  return 0;
}

/* allreduce_async_'s parameters, in Horovod's order. */
enum { A_TENSOR, A_AVERAGE, A_NAME, A_OP, A_PRESCALE, A_POSTSCALE, A_PROCESS_SET, A_COUNT };
static const char* const parameter_names[A_COUNT] = {
    "tensor", "average", "name", "op", "prescale_factor", "postscale_factor", "process_set"};

/* Sorts positional and keyword arguments into `out` (NULL: not given). 0 for a call
 * this path does not take (too many, unknown or repeated keywords): the general path
 * then raises Python's own TypeError. */
static int sort_arguments(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
                          PyObject* out[A_COUNT]) {
  static PyObject* interned[A_COUNT];
  if (nargs > A_COUNT) return 0;
  for (int i = 0; i < A_COUNT; ++i) {
    out[i] = i < nargs ? args[i] : NULL;
    if (!interned[i] && !(interned[i] = PyUnicode_InternFromString(parameter_names[i])))
      return -1;
  }
  const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    PyObject* keyword = PyTuple_GET_ITEM(kwnames, k);
    int slot = -1;
    for (int i = 0; i < A_COUNT && slot < 0; ++i)
      if (keyword == interned[i]) slot = i; /* keywords in source code are interned */
    for (int i = 0; i < A_COUNT && slot < 0; ++i)
      if (PyUnicode_CompareWithASCIIString(keyword, parameter_names[i]) == 0) slot = i;
    if (slot < 0 || out[slot]) return 0;
    out[slot] = args[nargs + k];
  }
  return out[A_TENSOR] != NULL;
}

/* The process set's id for a call this path takes: None, an int, or a registered
 * hvd.ProcessSet. -2: another case (the general path checks it). */
static long long process_set_of(PyObject* process_set) {
  static PyObject* id_name;
  if (!process_set || process_set == Py_None) return HVD_GLOBAL_PROCESS_SET;
  if (PyLong_CheckExact(process_set)) {
    const long long id = PyLong_AsLongLong(process_set);
    return id >= 0 && id <= INT32_MAX ? id : (PyErr_Clear(), -2);
  }
  if (Py_TYPE(process_set) != (PyTypeObject*)process_set_type) return -2;
  if (!id_name && !(id_name = PyUnicode_InternFromString("process_set_id"))) return -1;
  PyObject* id = PyObject_GetAttr(process_set, id_name);
  long long value = -2;
  if (id && PyLong_CheckExact(id)) {
    value = PyLong_AsLongLong(id);
    if (value < 0 || value > INT32_MAX) value = -2;
  }
  Py_XDECREF(id);
  PyErr_Clear();
  return value;
}

/* A scale this path takes (absent, a float or an int); 0 for another case. */
static int scale_of(PyObject* value, double* scale) {
  if (!value) {
    *scale = 1.0;
    return 1;
  }
  if (!PyFloat_CheckExact(value) && !PyLong_CheckExact(value)) return 0;
  *scale = PyFloat_AsDouble(value);
  return !PyErr_Occurred() || (PyErr_Clear(), 0);
}

/* allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
 *                  postscale_factor=1.0, process_set=None) -> Handle */
static PyObject* torch_allreduce_async_(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                                        PyObject* kwnames) {
  static PyObject* fast_name;
  if (!general_allreduce_async_) {
    PyErr_SetString(PyExc_RuntimeError, "hvd._fastpath: bind_torch() was not called");
    return NULL;
  }
  if (!fast_name && !(fast_name = PyUnicode_InternFromString("fast"))) return NULL;
  PyObject* in_use = PyDict_GetItemWithError(raw_namespace, fast_name); /* borrowed */
  PyObject* given[A_COUNT];
  int taken = in_use == self && fastpath_bound() ? sort_arguments(args, nargs, kwnames, given)
                                                 : 0;
  if (taken < 0) return NULL;
  PyErr_Clear(); /* fastpath_bound's: the general path reports an unbound library */
  long op = 0; /* hvd.Average, the default */
  double prescale = 1.0, postscale = 1.0;
  long long set = HVD_GLOBAL_PROCESS_SET;
  if (taken) {
    PyObject* op_given = given[A_OP];
    taken = (!given[A_AVERAGE] || given[A_AVERAGE] == Py_None) &&
            (!op_given || op_given == Py_None || PyLong_CheckExact(op_given)) &&
            scale_of(given[A_PRESCALE], &prescale) && scale_of(given[A_POSTSCALE], &postscale);
    if (taken && op_given && op_given != Py_None) {
      op = PyLong_AsLong(op_given); /* hvd.Average .. hvd.Product: 0 .. 5 */
      taken = op >= 0 && op <= 5;
      PyErr_Clear();
    }
    if (taken && (set = process_set_of(given[A_PROCESS_SET])) == -1) return NULL;
    taken = taken && set >= 0;
  }
  struct host_tensor t;
  if (taken && (taken = read_host_tensor(given[A_TENSOR], &t)) < 0) return NULL;
  if (!taken) return PyObject_Vectorcall(general_allreduce_async_, args, (size_t)nargs, kwnames);

  hvd_op_options_t options = HVD_OP_OPTIONS_INITIALIZER;
  options.prescale_factor = prescale;
  options.postscale_factor = postscale;
  options.process_set_id = (int32_t)set;
  if (t.ndim > 0) {
    options.shape = t.dims;
    options.ndim = t.ndim;
  }
  PyObject* set_id = PyLong_FromLongLong(set);
  if (!set_id) return NULL;
  struct call_name name;
  PyObject* result = NULL;
  PyObject* name_given = given[A_NAME] ? given[A_NAME] : Py_None;
  if (name_begin(&name, name_given, set_id, (int32_t)set)) {
    /* In place; the tensor is kept until completed and is the result. */
    PyObject* tail[3] = {given[A_TENSOR], Py_None, given[A_TENSOR]};
    result = enqueue_allreduce(t.data, t.data, t.count, t.dtype, (int)op, &name, &options,
                               tail);
    name_end(&name);
    Py_DECREF(set_id);
    return result;
  }
  name_end(&name);
  Py_DECREF(set_id);
  /* A name refused (or one that failed to encode): the general path raises the same
   * error and announces the refusal to the peers, as this path cannot. */
  PyErr_Clear();
  return PyObject_Vectorcall(general_allreduce_async_, args, (size_t)nargs, kwnames);
}

/* synchronize(handle) -> the operation's output (Horovod's torch synchronize). */
static PyObject* torch_synchronize(PyObject* self, PyObject* handle) {
  (void)self;
  return handle_synchronize(handle);
}

PyMethodDef torch_calls_methods[] = {
    {"bind_torch", (PyCFunction)(void (*)(void))torch_bind, METH_FASTCALL,
     "bind_torch(general_allreduce_async_, dtype_codes, hvd._raw module, ProcessSet type): "
     "what allreduce_async_ hands every other case to, and reads"},
    {"allreduce_async_", (PyCFunction)(void (*)(void))torch_allreduce_async_,
     METH_FASTCALL | METH_KEYWORDS,
     "allreduce_async_($module, /, tensor, average=None, name=None, op=None, "
     "prescale_factor=1.0, postscale_factor=1.0, process_set=None)\n--\n\n"
     "Starts an in-place allreduce of `tensor`; synchronize(handle) returns it."},
    {"synchronize", torch_synchronize, METH_O,
     "synchronize($module, handle, /)\n--\n\n"
     "Waits for `handle` and returns the operation's output."},
    {NULL, NULL, 0, NULL},
};

/* What the files of hvd._fastpath share: the libhvd functions bind() received and the
 * enqueue (_fastpath.c), the Handle and the registry of operations in flight
 * (_handle.c), and torch's per-gradient calls built on both (_torch_calls.c). */
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

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

/* The loaded libhvd's functions (see bind() in _fastpath.c). */
struct fastpath_library {
  allreduce_async_fn allreduce_async;
  broadcast_async_fn broadcast_async;
  grouped_allreduce_async_fn grouped_allreduce_async;
  poll_fn poll;
  wait_fn wait;
};
extern struct fastpath_library hvd;

/* 1 once bind() gave the functions above; else 0 with an exception set. */
int fastpath_bound(void);

/* A call's name: the UTF-8 bytes libhvd reads (a str is encoded, any other object
 * but None and bytes goes through str()), and the (process set id, name) key the
 * registry holds it by while the operation is pending. */
struct call_name {
  PyObject* bytes; /* or NULL: an unnamed call */
  PyObject* key;
};

/* Fills `n` for `name` (None: unnamed) in process set `set` (`set_id`, the same as a
 * Python int). 1, or 0 with an exception set; name_end() releases it either way. */
int name_begin(struct call_name* n, PyObject* name, PyObject* set_id, int32_t set);
const char* name_text(const struct call_name* n);
void name_end(struct call_name* n);

/* Reads a shape (a tuple, or a sequence PySequence_Fast made) into dims: *ndim is its
 * length where that is 1..HVD_MAX_NDIM, else 0 (scalars, and tensors of more
 * dimensions than libhvd describes, are compared by element count only). `count`, if
 * not NULL, gets the product of every dimension, -1 where one is negative or the
 * product overflows. 1, or 0 with an exception set for an item that is not an int. */
int read_shape(PyObject* seq, int64_t dims[HVD_MAX_NDIM], int32_t* ndim, int64_t* count);

/* Claims the name and starts hvd_allreduce_async; the Handle, or NULL with the
 * refusal raised. `tail`: keepalive, finish, result (see handle_new). */
PyObject* enqueue_allreduce(void* send, void* recv, int64_t count, int dtype, int op,
                            struct call_name* name, const hvd_op_options_t* options,
                            PyObject* const* tail);

/* Sets the registry up (module init); 0 on success, -1 with an exception set. */
int handle_module_init(PyObject* module);

/* The check before an enqueue: no operation of this process holds `key` (a
 * (process set id, name) tuple, or NULL for an unnamed operation). Also reaps
 * completed operations whose Handle was dropped. 0, or -1 with an exception set
 * (DuplicateNameError for a taken name). */
int handle_claim_name(PyObject* key);

/* A Handle for an operation libhvd accepted as `raw`, registered in flight. It keeps
 * `keepalive` until the operation completed; its result is finish() (a callable), or
 * `result` where finish is None; `cleanup` (or None) runs once it completed. `function`
 * names the C call in errors. New reference, or NULL with an exception set. */
PyObject* handle_new(long long raw, PyObject* key, PyObject* function, PyObject* keepalive,
                     PyObject* finish, PyObject* result, PyObject* cleanup);

/* Raises the HvdError of a failed libhvd call (hvd.errors.check). Returns NULL. */
PyObject* handle_raise_status(hvd_status_t status, PyObject* function);

/* handle.wait() for an hvd.Handle without a method lookup; any other object's wait(). */
PyObject* handle_synchronize(PyObject* handle);

extern PyMethodDef handle_module_methods[];

/* torch's per-gradient calls (_torch_calls.c). */
extern PyMethodDef torch_calls_methods[];

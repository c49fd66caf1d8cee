/* hvd.Handle in C, and the registry of operations in flight.
 *
 * An enqueue creates two objects: the Operation, which holds what libhvd reads or
 * writes until the operation completed (the buffers' owners) and makes the result,
 * and the Handle the caller gets, which only points at it. The registry holds every
 * pending Operation, so a caller may drop its Handle at once: the Handle's dealloc
 * then queues the Operation as an orphan, and later enqueues (or shutdown) complete
 * it, which frees libhvd's handle and lets go of the buffers.
 *
 * In Python the same took two objects with __init__ methods, a lock and several
 * calls per operation, about a microsecond of every gradient's allreduce; here it is
 * a few allocations. The semantics are those of the ctypes-only fallback in
 * hvd/_pyhandle.py, which tests/python/test_handle_lifetime.py runs against both.
 *
 * Threads: everything runs under the GIL except libhvd's wait, for which the GIL is
 * released. The Operation's state says who completes it: the first thread to wait
 * marks it WAITING, a second waiter sleeps until it is DONE, and poll answers "not
 * yet" meanwhile (libhvd frees its handle when the first wait returns). */
#include "_fastpath.h"

#include <time.h>

enum op_state { OP_PENDING, OP_WAITING, OP_DONE };

typedef struct {
  PyObject_HEAD
  long long raw;        /* libhvd's hvd_handle_t */
  PyObject* key;        /* (process set id, name) or NULL: the name it holds */
  PyObject* function;   /* the C function's name, for errors */
  PyObject* keepalive;  /* owners of the memory libhvd uses, until completed */
  PyObject* finish;     /* makes the result, or NULL: then `result` is it */
  PyObject* cleanup;    /* runs once completed, or NULL */
  PyObject* result;
  PyObject* error;      /* the exception a wait raises, or NULL */
  int state;            /* enum op_state; read without the GIL by a second waiter */
} Operation;

typedef struct {
  PyObject_HEAD
  Operation* op;
} Handle;

static PyTypeObject OperationType;
static PyTypeObject HandleType;

/* The registry (one per process: the module is initialised once). */
static PyObject* live;      /* set of pending Operations */
static PyObject* names;     /* dict: key -> the pending Operation holding it */
static PyObject* orphans;   /* collections.deque of Operations whose Handle was dropped */
static PyObject* error_for; /* hvd.errors.error_for and hvd.errors.check */
static PyObject* check;

/* Orphans found still running before reap() stops looking (they mostly complete in
 * the order they were started, so the oldest tell). */
#define REAP_MISSES 4

static int errors_bound(void) {
  if (error_for && check) return 1;
  PyErr_SetString(PyExc_RuntimeError, "hvd._fastpath: bind_errors() was not called");
  return 0;
}

PyObject* handle_raise_status(hvd_status_t status, PyObject* function) {
  if (!errors_bound()) return NULL;
  PyObject* r = PyObject_CallFunction(check, "iO", (int)status, function);
  if (r) {  /* check() raises for every failed status; keep the contract if it did not */
    Py_DECREF(r);
    PyErr_Format(PyExc_RuntimeError, "libhvd status %d", (int)status);
  }
  return NULL;
}

/* The pending exception as an instance with its traceback, taken out of the thread
 * state (what `except BaseException as exc` keeps). */
static PyObject* take_exception(void) {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  if (tb && value) PyException_SetTraceback(value, tb);
  Py_XDECREF(type);
  Py_XDECREF(tb);
  return value;
}

static void forget(Operation* op) {
  if (PySet_Discard(live, (PyObject*)op) < 0) PyErr_Clear();
  if (op->key) {
    PyObject* holder = PyDict_GetItemWithError(names, op->key);
    if (holder == (PyObject*)op && PyDict_DelItem(names, op->key) < 0) PyErr_Clear();
    if (!holder) PyErr_Clear();
  }
}

/* Waits for the operation (freeing libhvd's handle), makes its result or error, lets
 * go of its buffers and of its name. Idempotent. The failure of the operation itself
 * is kept in op->error, not raised. */
static void complete(Operation* op) {
  if (op->state == OP_DONE) return;
  if (op->state == OP_WAITING) {  /* another thread completes it: sleep until it has */
    Py_BEGIN_ALLOW_THREADS
    const struct timespec nap = {0, 50 * 1000};
    while (__atomic_load_n(&op->state, __ATOMIC_ACQUIRE) != OP_DONE) nanosleep(&nap, NULL);
    Py_END_ALLOW_THREADS
    return;
  }
  op->state = OP_WAITING;
  Py_INCREF(op); /* the registry's reference goes in forget() below */
  hvd_status_t status;
  const hvd_handle_t raw = (hvd_handle_t)op->raw;
  Py_BEGIN_ALLOW_THREADS
  status = hvd.wait(raw);
  Py_END_ALLOW_THREADS
  if (status != HVD_SUCCESS) {
    op->error = errors_bound() ? PyObject_CallFunction(error_for, "iO", (int)status,
                                                       op->function)
                               : NULL;
    if (!op->error) op->error = take_exception();
  } else if (op->finish) {
    PyObject* made = PyObject_CallNoArgs(op->finish);
    if (made)
      Py_XSETREF(op->result, made);
    else
      op->error = take_exception();
  }
  if (op->cleanup) {
    PyObject* r = PyObject_CallNoArgs(op->cleanup);
    if (r)
      Py_DECREF(r);
    else if (!op->error)
      op->error = take_exception();
    else
      PyErr_Clear();
  }
  Py_CLEAR(op->keepalive);
  Py_CLEAR(op->finish);
  Py_CLEAR(op->cleanup);
  __atomic_store_n(&op->state, OP_DONE, __ATOMIC_RELEASE);
  forget(op);
  Py_DECREF(op);
}

/* 1 done, 0 running, -1 with the poll's HvdError set. */
static int poll(Operation* op) {
  if (op->state != OP_PENDING) return op->state == OP_DONE;
  int done = 0;
  const hvd_status_t status = hvd.poll((hvd_handle_t)op->raw, &done);
  if (status != HVD_SUCCESS) {
    static PyObject* function;
    if (!function && !(function = PyUnicode_InternFromString("poll"))) return -1;
    handle_raise_status(status, function);
    return -1;
  }
  return done == 1;
}

/* Completes the orphans that are done, keeping the others for a later reap. Called on
 * every enqueue, so it stays cheap with thousands of orphans: it looks at the oldest
 * and stops after a few still running, sending those to the back. */
static int reap(int block) {
  Py_ssize_t n = PyObject_Size(orphans);
  if (n <= 0) return n < 0 ? -1 : 0;
  int misses = 0;
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (PyObject_Size(orphans) <= 0) break;  /* another thread took them meanwhile */
    PyObject* op = PyObject_CallMethod(orphans, "popleft", NULL);
    if (!op) return -1;
    int done = block ? 1 : poll((Operation*)op);
    if (done < 0) {  /* libhvd refuses the poll: its wait reports the failure, and frees */
      PyErr_Clear();
      done = 1;
    }
    if (done) {
      complete((Operation*)op);
      Py_DECREF(op);
      continue;
    }
    PyObject* r = PyObject_CallMethod(orphans, "append", "O", op);
    Py_DECREF(op);
    if (!r) return -1;
    Py_DECREF(r);
    if (++misses >= REAP_MISSES) break;
  }
  return 0;
}

static PyObject* duplicate_name_error(PyObject* key) {
  PyObject* name = PyTuple_GET_ITEM(key, 1);
  PyObject* text = PyUnicode_DecodeUTF8(PyBytes_AS_STRING(name), PyBytes_GET_SIZE(name),
                                        "replace");
  if (!text) return NULL;
  PyObject* detail = PyUnicode_FromFormat(
      "an operation named '%U' is still pending in this process (its handle was not "
      "synchronized yet): names must be unique among pending operations",
      text);
  Py_DECREF(text);
  if (!detail) return NULL;
  PyObject* error = PyObject_CallFunction(error_for, "iOO", (int)HVD_ERR_DUPLICATE_NAME,
                                          Py_None, detail);
  Py_DECREF(detail);
  if (error) {
    PyErr_SetObject((PyObject*)Py_TYPE(error), error);
    Py_DECREF(error);
  }
  return NULL;
}

int handle_claim_name(PyObject* key) {
  const int taken = key ? PyDict_Contains(names, key) : 0;
  if (taken < 0) return -1;
  /* Every enqueue also releases what dropped handles left behind (after the check, so
   * a dropped operation keeps its name until the next call): a loop of
   * fire-and-forget calls holds only the operations still running. */
  if (reap(0) < 0) return -1;
  if (!taken) return 0;
  if (!errors_bound()) return -1;
  if (!PyTuple_Check(key) || PyTuple_GET_SIZE(key) != 2 ||
      !PyBytes_Check(PyTuple_GET_ITEM(key, 1))) {
    PyErr_SetString(PyExc_TypeError, "a name key is (process set id, name as bytes)");
    return -1;
  }
  duplicate_name_error(key);
  return -1;
}

PyObject* handle_new(long long raw, PyObject* key, PyObject* function, PyObject* keepalive,
                     PyObject* finish, PyObject* result, PyObject* cleanup) {
  Operation* op = PyObject_GC_New(Operation, &OperationType);
  if (!op) return NULL;
  op->raw = raw;
  op->key = key == Py_None ? NULL : Py_XNewRef(key);
  op->function = Py_NewRef(function);
  op->keepalive = Py_XNewRef(keepalive);
  op->finish = finish == Py_None ? NULL : Py_XNewRef(finish);
  op->cleanup = cleanup == Py_None ? NULL : Py_XNewRef(cleanup);
  op->result = Py_XNewRef(result);
  op->error = NULL;
  op->state = OP_PENDING;
  PyObject_GC_Track(op);
  Handle* handle = PyObject_GC_New(Handle, &HandleType);
  if (!handle || PySet_Add(live, (PyObject*)op) < 0 ||
      (op->key && PyDict_SetItem(names, op->key, (PyObject*)op) < 0)) {
    /* Out of memory, and libhvd runs the operation already: leak it (its buffers stay
     * valid) rather than free memory the library may still write; untracked, so the
     * collector never clears it either. */
    PyObject_GC_UnTrack(op);
    Py_XDECREF(handle);
    return NULL;
  }
  handle->op = op;
  PyObject_GC_Track(handle);
  return (PyObject*)handle;
}

/* --- Operation: the registry's half ------------------------------------------------ */

static int operation_traverse(Operation* op, visitproc visit, void* arg) {
  Py_VISIT(op->key);
  Py_VISIT(op->function);
  Py_VISIT(op->keepalive);
  Py_VISIT(op->finish);
  Py_VISIT(op->cleanup);
  Py_VISIT(op->result);
  Py_VISIT(op->error);
  return 0;
}

static int operation_clear(Operation* op) {
  /* Only a completed operation can be unreachable (the registry holds pending ones),
   * so its buffers are no longer libhvd's. */
  Py_CLEAR(op->key);
  Py_CLEAR(op->function);
  Py_CLEAR(op->keepalive);
  Py_CLEAR(op->finish);
  Py_CLEAR(op->cleanup);
  Py_CLEAR(op->result);
  Py_CLEAR(op->error);
  return 0;
}

static void operation_dealloc(Operation* op) {
  PyObject_GC_UnTrack(op);
  operation_clear(op);
  PyObject_GC_Del(op);
}

static PyTypeObject OperationType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hvd._fastpath.Operation",
    .tp_doc = "An operation in flight as the registry holds it (see hvd.Handle)",
    .tp_basicsize = sizeof(Operation),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)operation_traverse,
    .tp_clear = (inquiry)operation_clear,
    .tp_dealloc = (destructor)operation_dealloc,
};

/* --- Handle: the caller's half ----------------------------------------------------- */

static PyObject* handle_tp_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  (void)type;
  static char* keywords[] = {"raw", "name_key", "function", "keepalive", "finish", "cleanup",
                             NULL};
  long long raw;
  PyObject *key, *function, *keepalive, *finish, *cleanup = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "LOOOO|O:Handle", keywords, &raw, &key,
                                   &function, &keepalive, &finish, &cleanup))
    return NULL;
  return handle_new(raw, key, function, keepalive, finish, NULL, cleanup);
}

static int handle_traverse(Handle* self, visitproc visit, void* arg) {
  Py_VISIT(self->op);
  return 0;
}

static int handle_clear(Handle* self) {
  Py_CLEAR(self->op);
  return 0;
}

static void handle_dealloc(Handle* self) {
  PyObject_GC_UnTrack(self);
  Operation* op = self->op;
  /* Dropped before it completed: a later enqueue or shutdown completes it. This may
   * run inside garbage collection, on any thread: a deque append, nothing more. */
  if (op && op->state != OP_DONE && orphans) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject* r = PyObject_CallMethod(orphans, "append", "O", (PyObject*)op);
    if (r)
      Py_DECREF(r);
    else
      PyErr_WriteUnraisable((PyObject*)self);
    PyErr_Restore(type, value, tb);
  }
  Py_CLEAR(self->op);
  PyObject_GC_Del(self);
}

static PyObject* handle_wait(Handle* self, PyObject* unused) {
  (void)unused;
  Operation* op = self->op;
  if (!op) {
    PyErr_SetString(PyExc_RuntimeError, "this Handle was cleared");
    return NULL;
  }
  complete(op);
  if (PyErr_Occurred()) return NULL;
  if (op->error) {
    PyErr_SetObject((PyObject*)Py_TYPE(op->error), op->error);
    return NULL;
  }
  return Py_NewRef(op->result ? op->result : Py_None);
}

PyObject* handle_synchronize(PyObject* handle) {
  if (Py_TYPE(handle) == &HandleType) return handle_wait((Handle*)handle, NULL);
  static PyObject* wait;
  if (!wait && !(wait = PyUnicode_InternFromString("wait"))) return NULL;
  PyObject* method = PyObject_GetAttr(handle, wait); /* a SparseHandle, a group's... */
  if (!method) {
    if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return NULL;
    PyErr_Clear();
    /* The words of hvd.errors.not_a_handle, which the Python synchronize raises. */
    const int is_int = PyLong_Check(handle) && !PyBool_Check(handle);
    PyErr_Format(is_int ? PyExc_ValueError : PyExc_TypeError,
                 "synchronize(handle): expected the handle an *_async call returned (an "
                 "hvd.Handle), got %s %R%s",
                 Py_TYPE(handle)->tp_name, handle,
                 is_int ? ": libhvd's handles are objects, not Horovod's integers; pass the "
                          "object the *_async call returned"
                        : "");
    return NULL;
  }
  PyObject* result = PyObject_CallNoArgs(method);
  Py_DECREF(method);
  return result;
}

static PyObject* handle_poll(Handle* self, PyObject* unused) {
  (void)unused;
  if (!self->op) Py_RETURN_TRUE;
  const int done = poll(self->op);
  if (done < 0) return NULL;
  return PyBool_FromLong(done);
}

static PyObject* handle_raw(Handle* self, void* closure) {
  (void)closure;
  return PyLong_FromLongLong(self->op ? self->op->raw : 0);
}

static PyObject* handle_repr(Handle* self) {
  if (!self->op) return PyUnicode_FromString("<hvd.Handle cleared>");
  return PyUnicode_FromFormat("<hvd.Handle %lld %S %s>", self->op->raw, self->op->function,
                              self->op->state == OP_DONE ? "done" : "pending");
}

static PyMethodDef handle_methods[] = {
    {"wait", (PyCFunction)handle_wait, METH_NOARGS,
     "Waits for the operation and returns its result, or raises its HvdError; waiting "
     "again returns the same result"},
    {"poll", (PyCFunction)handle_poll, METH_NOARGS, "True once the operation completed"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef handle_getset[] = {
    {"raw", (getter)handle_raw, NULL, "the hvd_handle_t value", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject HandleType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "hvd.Handle",
    .tp_doc = "An operation in flight: poll() says whether it completed, wait() returns its "
              "result (or raises its HvdError). Waiting twice returns the same result. "
              "Dropping a Handle without waiting is safe: the operation completes in the "
              "background.\n\nHandle(raw, name_key, function, keepalive, finish, cleanup=None) "
              "registers an operation libhvd accepted (for the package's own calls).",
    .tp_basicsize = sizeof(Handle),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = handle_tp_new,
    .tp_traverse = (traverseproc)handle_traverse,
    .tp_clear = (inquiry)handle_clear,
    .tp_dealloc = (destructor)handle_dealloc,
    .tp_repr = (reprfunc)handle_repr,
    .tp_methods = handle_methods,
    .tp_getset = handle_getset,
};

/* --- the registry's module functions ----------------------------------------------- */

static PyObject* fast_bind_errors(PyObject* self, PyObject* args) {
  (void)self;
  PyObject *make, *raise;
  if (!PyArg_ParseTuple(args, "OO:bind_errors", &make, &raise)) return NULL;
  Py_XSETREF(error_for, Py_NewRef(make));
  Py_XSETREF(check, Py_NewRef(raise));
  Py_RETURN_NONE;
}

static PyObject* fast_name_taken(PyObject* self, PyObject* key) {
  (void)self;
  const int taken = PyDict_Contains(names, key);
  return taken < 0 ? NULL : PyBool_FromLong(taken);
}

static PyObject* fast_claim_name(PyObject* self, PyObject* key) {
  (void)self;
  if (handle_claim_name(key == Py_None ? NULL : key) < 0) return NULL;
  Py_RETURN_NONE;
}

static PyObject* fast_reap(PyObject* self, PyObject* args) {
  (void)self;
  int block = 0;
  if (!PyArg_ParseTuple(args, "|p:reap", &block)) return NULL;
  if (reap(block) < 0) return NULL;
  Py_RETURN_NONE;
}

static PyObject* fast_in_flight(PyObject* self, PyObject* unused) {
  (void)self;
  (void)unused;
  return PyLong_FromSsize_t(PySet_GET_SIZE(live));
}

/* After hvd_shutdown every operation has completed (with HVD_ERR_SHUT_DOWN if it had
 * not run): wait for all of them, so no libhvd handle outlives the runtime and a later
 * wait() on a kept Handle reports that error without calling into C. */
static PyObject* fast_complete_all(PyObject* self, PyObject* unused) {
  (void)self;
  (void)unused;
  PyObject* pending = PySequence_List(live); /* other threads may add or forget meanwhile */
  if (!pending) return NULL;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(pending); ++i)
    complete((Operation*)PyList_GET_ITEM(pending, i));
  Py_DECREF(pending);
  PyObject* r = PyObject_CallMethod(orphans, "clear", NULL);
  if (!r) return NULL;
  Py_DECREF(r);
  Py_RETURN_NONE;
}

PyMethodDef handle_module_methods[] = {
    {"bind_errors", fast_bind_errors, METH_VARARGS,
     "bind_errors(error_for, check): hvd.errors' functions, for failures"},
    {"name_taken", fast_name_taken, METH_O,
     "name_taken(key) -> True while a pending operation of this process holds the name"},
    {"claim_name", fast_claim_name, METH_O,
     "claim_name(key): raises DuplicateNameError while a pending operation holds the "
     "name (key None: an unnamed operation); reaps dropped operations that are done"},
    {"reap", fast_reap, METH_VARARGS,
     "reap(block=False): completes dropped operations that are done (with block, all)"},
    {"in_flight", fast_in_flight, METH_NOARGS,
     "in_flight() -> the number of operations whose buffers are still held"},
    {"complete_all", fast_complete_all, METH_NOARGS,
     "complete_all(): after hvd_shutdown, completes every operation"},
    {NULL, NULL, 0, NULL},
};

int handle_module_init(PyObject* module) {
  if (PyType_Ready(&OperationType) < 0 || PyType_Ready(&HandleType) < 0) return -1;
  PyObject* collections = PyImport_ImportModule("collections");
  if (!collections) return -1;
  orphans = PyObject_CallMethod(collections, "deque", NULL);
  Py_DECREF(collections);
  live = PySet_New(NULL);
  names = PyDict_New();
  if (!orphans || !live || !names) return -1;
  Py_INCREF(&HandleType);
  if (PyModule_AddObject(module, "Handle", (PyObject*)&HandleType) < 0) {
    Py_DECREF(&HandleType);
    return -1;
  }
  return 0;
}

/* Helpers shared by the multi-rank tests: typed element access for every hvd dtype
 * (16-bit floats included), expected values, and CMocka glue. */
#ifndef HVD_TESTS_MPI_TEST_UTIL_H
#define HVD_TESTS_MPI_TEST_UTIL_H

#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <cmocka.h>

#include <hvd/hvd.h>

static const hvd_dtype_t kAllDtypes[] = {HVD_UINT8,   HVD_INT8,     HVD_UINT16,  HVD_INT16,
                                         HVD_INT32,   HVD_INT64,    HVD_FLOAT16, HVD_BFLOAT16,
                                         HVD_FLOAT32, HVD_FLOAT64,  HVD_BOOL};
#define NUM_DTYPES ((int)(sizeof kAllDtypes / sizeof kAllDtypes[0]))

/* The job's size or this process's rank as the launcher tells it before MPI is up
 * (Hydra's PMI_*, Open MPI's OMPI_COMM_WORLD_*); fallback when neither is set. */
static inline int tu_launcher_env(const char* mpich_name, const char* ompi_name, int fallback) {
  const char* env = getenv(mpich_name);
  if (!env) env = getenv(ompi_name);
  return env ? atoi(env) : fallback;
}
static inline int tu_launcher_size(void) {
  return tu_launcher_env("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", 1);
}
static inline int tu_launcher_rank(void) {
  return tu_launcher_env("PMI_RANK", "OMPI_COMM_WORLD_RANK", 0);
}

static inline size_t tu_dtype_size(hvd_dtype_t d) {
  switch (d) {
    case HVD_UINT8: case HVD_INT8: case HVD_BOOL: return 1;
    case HVD_UINT16: case HVD_INT16: case HVD_FLOAT16: case HVD_BFLOAT16: return 2;
    case HVD_INT32: case HVD_FLOAT32: return 4;
    default: return 8;
  }
}

static inline int tu_is_float(hvd_dtype_t d) {
  return d == HVD_FLOAT16 || d == HVD_BFLOAT16 || d == HVD_FLOAT32 || d == HVD_FLOAT64;
}

static inline float tu_half_to_float(uint16_t h) {
  int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  float v;
  if (exp == 0) v = ldexpf((float)mant, -24);
  else if (exp == 31) v = mant ? NAN : INFINITY;
  else v = ldexpf((float)(mant | 0x400), exp - 25);
  return sign ? -v : v;
}

/* Exact for the small integers and halves the tests use; rounds otherwise. */
static inline uint16_t tu_float_to_half(float f) {
  uint16_t sign = f < 0 ? 0x8000 : 0;
  float a = fabsf(f);
  if (a == 0) return sign;
  int e;
  float m = frexpf(a, &e); /* a = m * 2^e, m in [0.5, 1) */
  int exp = e + 14;
  if (exp <= 0) return (uint16_t)(sign | (uint16_t)lrintf(ldexpf(a, 24)));
  if (exp >= 31) return (uint16_t)(sign | 0x7c00);
  int mant = (int)lrintf((m * 2 - 1) * 1024);
  if (mant == 1024) { mant = 0; ++exp; }
  return (uint16_t)(sign | (exp << 10) | mant);
}

static inline float tu_bf16_to_float(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

static inline uint16_t tu_float_to_bf16(float f) {
  uint32_t bits;
  memcpy(&bits, &f, 4);
  bits += 0x7fff + ((bits >> 16) & 1);
  return (uint16_t)(bits >> 16);
}

static inline void tu_set(void* buf, hvd_dtype_t d, int64_t i, double v) {
  switch (d) {
    case HVD_UINT8: ((uint8_t*)buf)[i] = (uint8_t)v; break;
    case HVD_INT8: ((int8_t*)buf)[i] = (int8_t)v; break;
    case HVD_UINT16: ((uint16_t*)buf)[i] = (uint16_t)v; break;
    case HVD_INT16: ((int16_t*)buf)[i] = (int16_t)v; break;
    case HVD_INT32: ((int32_t*)buf)[i] = (int32_t)v; break;
    case HVD_INT64: ((int64_t*)buf)[i] = (int64_t)v; break;
    case HVD_FLOAT16: ((uint16_t*)buf)[i] = tu_float_to_half((float)v); break;
    case HVD_BFLOAT16: ((uint16_t*)buf)[i] = tu_float_to_bf16((float)v); break;
    case HVD_FLOAT32: ((float*)buf)[i] = (float)v; break;
    case HVD_FLOAT64: ((double*)buf)[i] = v; break;
    case HVD_BOOL: ((uint8_t*)buf)[i] = v != 0; break;
  }
}

static inline double tu_get(const void* buf, hvd_dtype_t d, int64_t i) {
  switch (d) {
    case HVD_UINT8: return ((const uint8_t*)buf)[i];
    case HVD_INT8: return ((const int8_t*)buf)[i];
    case HVD_UINT16: return ((const uint16_t*)buf)[i];
    case HVD_INT16: return ((const int16_t*)buf)[i];
    case HVD_INT32: return ((const int32_t*)buf)[i];
    case HVD_INT64: return (double)((const int64_t*)buf)[i];
    case HVD_FLOAT16: return tu_half_to_float(((const uint16_t*)buf)[i]);
    case HVD_BFLOAT16: return tu_bf16_to_float(((const uint16_t*)buf)[i]);
    case HVD_FLOAT32: return ((const float*)buf)[i];
    case HVD_FLOAT64: return ((const double*)buf)[i];
    case HVD_BOOL: return ((const uint8_t*)buf)[i] != 0;
  }
  return 0;
}

/* Relative tolerance of a dtype's rounding. */
static inline double tu_tolerance(hvd_dtype_t d) {
  switch (d) {
    case HVD_FLOAT16: return 2e-3;
    case HVD_BFLOAT16: return 1.6e-2;
    case HVD_FLOAT32: return 1e-6;
    case HVD_FLOAT64: return 1e-12;
    default: return 0;
  }
}

static inline int tu_close(double got, double want, hvd_dtype_t d) {
  if (!tu_is_float(d)) return got == want;
  return fabs(got - want) <= tu_tolerance(d) * fmax(1.0, fabs(want));
}

/* Asserts a status with the library's message in the failure text. */
#define assert_hvd_ok(expr)                                                          \
  do {                                                                               \
    hvd_status_t st_ = (expr);                                                       \
    if (st_ != HVD_SUCCESS)                                                          \
      fail_msg("%s -> %d (%s): %s", #expr, (int)st_, hvd_status_string(st_),          \
               hvd_last_error());                                                    \
  } while (0)

#define assert_hvd_status(expr, want)                                                \
  do {                                                                               \
    hvd_status_t st_ = (expr);                                                       \
    if (st_ != (want))                                                               \
      fail_msg("%s -> %d (%s), expected %d: %s", #expr, (int)st_,                    \
               hvd_status_string(st_), (int)(want), hvd_last_error());               \
  } while (0)

static inline void* tu_alloc(size_t bytes) {
  void* p = malloc(bytes ? bytes : 1);
  assert_non_null(p);
  return p;
}

/* The hierarchical tests' inputs: small values so that every reduction is exact in
 * every dtype, and the result every rank expects over the job's ranks. */
static inline double tu_hier_input(int q, int64_t i, hvd_reduce_op_t op) {
  return (double)((i + q) % 2 + (op == HVD_OP_PRODUCT ? 1 : q % 3));
}

static inline double tu_hier_expected(int64_t i, hvd_dtype_t d, hvd_reduce_op_t op) {
  const int size = hvd_size();
  double acc = op == HVD_OP_PRODUCT ? 1 : op == HVD_OP_MIN ? 1e300 : op == HVD_OP_MAX ? -1e300 : 0;
  for (int q = 0; q < size; ++q) {
    double x = tu_hier_input(q, i, op);
    if (d == HVD_BOOL) x = x != 0;
    if (op == HVD_OP_SUM || op == HVD_OP_AVERAGE) acc += x;
    else if (op == HVD_OP_MIN) acc = fmin(acc, x);
    else if (op == HVD_OP_MAX) acc = fmax(acc, x);
    else acc *= x;
  }
  if (op == HVD_OP_AVERAGE) acc /= size;
  if (d == HVD_BOOL) acc = acc != 0;
  return acc;
}

/* This rank's traffic counters since init. */
static inline hvd_counters_t tu_counters(void) {
  hvd_counters_t c;
  memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  assert_hvd_ok(hvd_get_counters(&c));
  return c;
}

/* How many of this process's threads carry `name` (Linux: /proc/self/task/T/comm);
 * *last (when not NULL) gets the kernel id of the last one listed, 0 if none. -1 when
 * the list cannot be read. */
static inline int tu_threads_named(const char* name, pid_t* last) {
  if (last) *last = 0;
  DIR* tasks = opendir("/proc/self/task");
  if (!tasks) return -1;
  int found = 0;
  for (struct dirent* e; (e = readdir(tasks));) {
    if (e->d_name[0] == '.') continue;
    char path[300], comm[64] = "";
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    FILE* f = fopen(path, "r");
    if (!f) continue; /* the thread ended meanwhile */
    if (fgets(comm, sizeof comm, f)) comm[strcspn(comm, "\n")] = 0;
    fclose(f);
    if (strcmp(comm, name) != 0) continue;
    ++found;
    if (last) *last = (pid_t)atoi(e->d_name);
  }
  closedir(tasks);
  return found;
}

/* Data collectives this rank has run since init (to see how many tensors fused). */
static inline uint64_t tu_collectives(void) { return tu_counters().collectives; }

/* Scaled-sum tests (prescale 2, postscale 3): rank q's element i of tensor t is a small
 * integer, exact in every dtype, and what SUM or AVERAGE of every rank's makes of it
 * (integers average by truncating before the postscale). */
static inline double tu_scaled_input(int q, int t, int64_t i) { return (double)((i + t) % 5 + q); }
static inline double tu_scaled_expected(int size, int t, int64_t i, hvd_reduce_op_t op,
                                        hvd_dtype_t dtype) {
  double sum = 0;
  for (int q = 0; q < size; ++q) sum += 2.0 * tu_scaled_input(q, t, i);
  if (op != HVD_OP_AVERAGE) return sum * 3.0;
  return tu_is_float(dtype) ? sum / size * 3.0 : floor(sum / size) * 3.0;
}

/* A process set of ranks 1.. (its rank 0 is global rank 1, so a set-relative root or
 * first block differs from the global one); *opts names it for this rank's operations.
 * Returns its id, for hvd_remove_process_set. Needs 3 or more ranks. */
static inline int32_t tu_add_set_without_rank0(hvd_op_options_t* opts) {
  const int size = hvd_size();
  int members[64];
  assert_true(size >= 3 && size <= 65);
  for (int r = 1; r < size; ++r) members[r - 1] = r;
  int32_t id = -1;
  assert_hvd_ok(hvd_add_process_set(members, size - 1, &id));
  assert_hvd_ok(hvd_op_options_init(opts));
  opts->process_set_id = id;
  return id;
}

/* One step of such a test: every tensor t (count_of(t) elements, named
 * "<prefix>.<t>") filled with this rank's inputs (an out-of-place output poisoned
 * first), pushed asynchronously with prescale 2 and postscale 3, as a framework's
 * gradients are, then each waited for and checked: the result against
 * tu_scaled_expected, an out-of-place input left as it was. */
static inline void tu_scaled_allreduce_step(int n, void* const* sends, void* const* recvs,
                                            int64_t (*count_of)(int), hvd_dtype_t dtype,
                                            hvd_reduce_op_t op, const char* prefix) {
  const int rank = hvd_rank(), size = hvd_size();
  for (int t = 0; t < n; ++t)
    for (int64_t i = 0; i < count_of(t); ++i) {
      tu_set(sends[t], dtype, i, tu_scaled_input(rank, t, i));
      if (recvs[t] != sends[t]) tu_set(recvs[t], dtype, i, -7.0); /* not an input */
    }
  hvd_op_options_t opts;
  assert_hvd_ok(hvd_op_options_init(&opts));
  opts.prescale_factor = 2.0;
  opts.postscale_factor = 3.0;
  hvd_handle_t* h = (hvd_handle_t*)tu_alloc((size_t)n * sizeof(hvd_handle_t));
  for (int t = 0; t < n; ++t) {
    char name[96];
    snprintf(name, sizeof name, "%s.%d", prefix, t);
    assert_hvd_ok(hvd_allreduce_async(sends[t], recvs[t], count_of(t), dtype, op, name, &opts, &h[t]));
  }
  for (int t = 0; t < n; ++t) assert_hvd_ok(hvd_wait(h[t]));
  free(h);
  for (int t = 0; t < n; ++t)
    for (int64_t i = 0; i < count_of(t); ++i) {
      const double want = tu_scaled_expected(size, t, i, op, dtype);
      const double got = tu_get(recvs[t], dtype, i);
      if (!tu_close(got, want, dtype))
        fail_msg("rank %d %s tensor %d element %lld: %g, want %g", rank, prefix, t, (long long)i,
                 got, want);
      if (sends[t] != recvs[t] &&
          !tu_close(tu_get(sends[t], dtype, i), tu_scaled_input(rank, t, i), dtype))
        fail_msg("rank %d %s tensor %d element %lld: the input changed", rank, prefix, t,
                 (long long)i);
    }
}

static inline int tu_group_init(void** state) {
  (void)state;
  return hvd_init() == HVD_SUCCESS ? 0 : -1;
}

static inline int tu_group_shutdown(void** state) {
  (void)state;
  return hvd_shutdown() == HVD_SUCCESS ? 0 : -1;
}

/* CMocka prints per process; prefix the group name with the rank so logs read well. */
static inline int tu_run(const char* name, const struct CMUnitTest* tests, size_t n,
                         CMFixtureFunction setup, CMFixtureFunction teardown) {
  return _cmocka_run_group_tests(name, tests, n, setup, teardown);
}

#endif

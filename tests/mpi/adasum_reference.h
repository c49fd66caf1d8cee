/* The Adasum tests' reference: inputs every rank can compute for every rank, and the
 * pairwise combination over the binary tree of ranks in order, in double, written
 * out plainly (no halving, no distance doubling) to check the library's against. */
#ifndef HVD_TESTS_ADASUM_REFERENCE_H
#define HVD_TESTS_ADASUM_REFERENCE_H

#include <float.h>

#include "test_util.h"

static inline int is_power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

/* A component shared by every rank plus one of the rank's own: the angle between
 * ranks' tensors is neither 0 nor 90 degrees. Rank (t % size) gives zeros for every
 * third tensor. */
static inline double mixed_input(int rank, int t, int64_t i) {
  if (t % 3 == 0 && rank == t % hvd_size()) return 0.0;
  const double common = sin(0.37 * (double)i + 1.3 * t);
  const double own = cos(0.91 * (double)i * (rank + 1) + 0.7 * t + 2.1 * rank);
  return (1.0 + 0.25 * rank) * (common + 0.6 * own);
}

/* The value as the dtype holds it. */
static inline double rounded(double v, hvd_dtype_t d) {
  unsigned char cell[8];
  tu_set(cell, d, 0, v);
  return tu_get(cell, d, 0);
}

/* out = Adasum of ranks [lo, hi) (in set order: members[lo..hi)) of input(rank, i). */
typedef double (*InputFn)(int rank, int t, int64_t i);
static inline void reference(const int* members, int lo, int hi, int t, int64_t n, hvd_dtype_t d,
                      InputFn input, double* out) {
  if (hi - lo == 1) {
    for (int64_t i = 0; i < n; ++i) out[i] = rounded(input(members[lo], t, i), d);
    return;
  }
  const int mid = lo + (hi - lo) / 2;
  double* b = tu_alloc((size_t)n * sizeof(double));
  reference(members, lo, mid, t, n, d, input, out);
  reference(members, mid, hi, t, n, d, input, b);
  double dot = 0, aa = 0, bb = 0;
  for (int64_t i = 0; i < n; ++i) {
    dot += out[i] * b[i];
    aa += out[i] * out[i];
    bb += b[i] * b[i];
  }
  const double tiny = sqrt(DBL_MIN);
  const double ca = aa >= tiny ? 1.0 - dot / aa / 2 : 1.0;
  const double cb = bb >= tiny ? 1.0 - dot / bb / 2 : 1.0;
  for (int64_t i = 0; i < n; ++i) out[i] = ca * out[i] + cb * b[i];
  free(b);
}

/* Relative error in norm, as Horovod's Adasum tests measure it, with room for the
 * rounding of each level in 16-bit types. */
static inline double norm_tolerance(hvd_dtype_t d) {
  switch (d) {
    case HVD_FLOAT16: return 5e-3;
    case HVD_BFLOAT16: return 4e-2;
    case HVD_FLOAT32: return 1e-6;
    default: return 1e-13;
  }
}

static inline void assert_matches(const void* got, const double* want, int64_t n, hvd_dtype_t d,
                           double scale, const char* what, int t) {
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double w = want[i] * scale;
    diff += (tu_get(got, d, i) - w) * (tu_get(got, d, i) - w);
    norm += w * w;
  }
  if (norm == 0 ? diff != 0 : sqrt(diff / norm) > norm_tolerance(d))
    fail_msg("rank %d: %s, tensor %d (%lld elements, dtype %d): relative error %g", hvd_rank(), what,
             t, (long long)n, (int)d, norm == 0 ? sqrt(diff) : sqrt(diff / norm));
}

#endif

/*
 * Data-parallel training of a linear model with libhvd.
 *
 * Each rank generates its own shard of a synthetic regression data set
 * (y = x . w_true + noise), computes the gradient of the mean squared error on its
 * shard, and averages the gradients of all ranks with hvd_allreduce before every
 * SGD step: the pattern of every data-parallel training loop. Rank 0's initial
 * weights are broadcast first so every rank starts from the same point.
 *
 *   mpiexec -n 2 build/examples/c/train_linear          (or: hvdrun -np 2 ...)
 *
 * Exits non-zero if the model did not converge or the ranks' weights differ.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hvd/hvd.h>

enum { FEATURES = 32, SAMPLES_PER_RANK = 4096, EPOCHS = 60, BATCH = 256 };

#define CHECK(call)                                                              \
  do {                                                                           \
    hvd_status_t status_ = (call);                                               \
    if (status_ != HVD_SUCCESS) {                                                \
      fprintf(stderr, "%s failed: %s (%s)\n", #call, hvd_status_string(status_), \
              hvd_last_error());                                                 \
      exit(1);                                                                   \
    }                                                                            \
  } while (0)

/* A small deterministic generator, so each rank's shard depends only on its rank. */
static double uniform(unsigned long long* state) {
  *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(*state >> 11) / 9007199254740992.0;
}

static double gaussian(unsigned long long* state) {
  double u = uniform(state) + 1e-12, v = uniform(state);
  return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

int main(void) {
  CHECK(hvd_init());
  const int rank = hvd_rank(), size = hvd_size();

  /* The true weights are the same everywhere; the samples differ per rank. */
  double w_true[FEATURES];
  unsigned long long shared_seed = 42;
  for (int j = 0; j < FEATURES; ++j) w_true[j] = gaussian(&shared_seed);

  float* x = malloc(sizeof(float) * SAMPLES_PER_RANK * FEATURES);
  float* y = malloc(sizeof(float) * SAMPLES_PER_RANK);
  unsigned long long seed = 1000 + (unsigned long long)rank;
  for (int i = 0; i < SAMPLES_PER_RANK; ++i) {
    double dot = 0;
    for (int j = 0; j < FEATURES; ++j) {
      x[i * FEATURES + j] = (float)gaussian(&seed);
      dot += x[i * FEATURES + j] * w_true[j];
    }
    y[i] = (float)(dot + 0.01 * gaussian(&seed));
  }

  /* Rank 0 draws the initial weights; everyone starts from them. */
  float w[FEATURES];
  unsigned long long init_seed = 7 + (unsigned long long)rank;
  for (int j = 0; j < FEATURES; ++j) w[j] = (float)(0.1 * gaussian(&init_seed));
  CHECK(hvd_broadcast(w, FEATURES, HVD_FLOAT32, 0, "initial_weights"));

  const float lr = 0.05f;
  float grad[FEATURES];
  for (int epoch = 1; epoch <= EPOCHS; ++epoch) {
    double epoch_loss = 0;
    for (int start = 0; start < SAMPLES_PER_RANK; start += BATCH) {
      memset(grad, 0, sizeof grad);
      for (int i = start; i < start + BATCH; ++i) {
        float err = -y[i];
        for (int j = 0; j < FEATURES; ++j) err += x[i * FEATURES + j] * w[j];
        epoch_loss += 0.5 * err * err;
        for (int j = 0; j < FEATURES; ++j) grad[j] += err * x[i * FEATURES + j] / BATCH;
      }
      /* The gradient of the global batch: the average over ranks. */
      CHECK(hvd_allreduce(grad, grad, FEATURES, HVD_FLOAT32, HVD_OP_AVERAGE, "gradient"));
      for (int j = 0; j < FEATURES; ++j) w[j] -= lr * grad[j];
    }
    double loss = epoch_loss / SAMPLES_PER_RANK;
    CHECK(hvd_allreduce(&loss, &loss, 1, HVD_FLOAT64, HVD_OP_AVERAGE, "loss"));
    if (rank == 0 && (epoch == 1 || epoch % 10 == 0))
      printf("epoch %3d  loss %.6f\n", epoch, loss);
  }

  /* Every rank must hold the same weights: compare the element-wise min and max. */
  float lo[FEATURES], hi[FEATURES];
  CHECK(hvd_allreduce(w, lo, FEATURES, HVD_FLOAT32, HVD_OP_MIN, "weights.min"));
  CHECK(hvd_allreduce(w, hi, FEATURES, HVD_FLOAT32, HVD_OP_MAX, "weights.max"));
  int identical = memcmp(lo, hi, sizeof lo) == 0;
  double distance = 0;
  for (int j = 0; j < FEATURES; ++j) distance += (w[j] - w_true[j]) * (w[j] - w_true[j]);
  distance = sqrt(distance);
  if (rank == 0)
    printf("%d ranks: weights %s on every rank; distance to the true weights %.4f\n", size,
           identical ? "identical" : "DIFFER", distance);
  CHECK(hvd_shutdown());
  free(x);
  free(y);
  return identical && distance < 0.05 ? 0 : 1;
}

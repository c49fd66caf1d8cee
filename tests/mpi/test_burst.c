#define _GNU_SOURCE /* usleep, setenv, sched_getaffinity */
/* Bursts (HVD_BURST_GAP_US): while a rank's requests keep arriving, the background
 * thread waits for the rest of the burst, so that one negotiation round and one fused
 * collective take it whole; a lone repeat of the last round's only tensor does not
 * wait, named or not. The gap is made long here (hundreds of milliseconds) and the pushes a few
 * milliseconds apart, so what is checked does not depend on how fast the machine is:
 * without the wait, each push would start a round of its own. */
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

#include "test_util.h"

enum { kTensors = 24, kCount = 256, kPushGapUs = 3000 };

static void reinit(const char* gap_us) {
  assert_hvd_ok(hvd_shutdown());
  setenv("HVD_BURST_GAP_US", gap_us, 1);
  setenv("HOROVOD_CYCLE_TIME", "10000", 1); /* the cap on a burst's wait: 10 s */
  assert_hvd_ok(hvd_init());
  unsetenv("HVD_BURST_GAP_US");
  unsetenv("HOROVOD_CYCLE_TIME");
}

/* One step: kTensors allreduces of `count` floats pushed kPushGapUs apart (the caller
 * sleeping between pushes, or with `busy`, keeping its CPU busy), then all waited and
 * checked. Returns the data collectives the step ran. */
static uint64_t burst(const char* prefix, int step, int count, int busy) {
  const int rank = hvd_rank(), size = hvd_size();
  float* data = test_malloc(sizeof(float) * kTensors * (size_t)count);
  hvd_handle_t handles[kTensors];
  const uint64_t before = tu_collectives();
  for (int t = 0; t < kTensors; ++t) {
    float* x = data + (size_t)t * count;
    for (int i = 0; i < count; ++i) x[i] = (float)(rank + t + (i & 255) + step);
    char name[64];
    snprintf(name, sizeof name, "%s.%d", prefix, t);
    assert_hvd_ok(hvd_allreduce_async(x, x, count, HVD_FLOAT32, HVD_OP_SUM, name, NULL, &handles[t]));
    if (!busy) {
      usleep(kPushGapUs);
      continue;
    }
    const double until = MPI_Wtime() + kPushGapUs * 1e-6;
    while (MPI_Wtime() < until) {
    }
  }
  for (int t = 0; t < kTensors; ++t) assert_hvd_ok(hvd_wait(handles[t]));
  for (int t = 0; t < kTensors; ++t)
    for (int i = 0; i < count; ++i) {
      const float want = (float)(size * (t + (i & 255) + step) + size * (size - 1) / 2);
      const float got = data[(size_t)t * count + i];
      if (got != want) fail_msg("%s.%d[%d] = %g, expected %g", prefix, t, i, got, want);
    }
  test_free(data);
  return tu_collectives() - before;
}

static uint64_t slow_burst(const char* prefix, int step) { return burst(prefix, step, kCount, 0); }

/* Step 0 negotiates the names; every later step of a whole burst is one collective. */
static void expect_whole(int step, uint64_t ran) {
  if (hvd_size() > 1 && step > 0 && ran != 1)
    fail_msg("step %d ran %llu collectives, expected 1", step, (unsigned long long)ran);
}

/* Pushes spread over ~70 ms, a gap of 400 ms: every step is one fused collective. */
static void a_slow_burst_is_one_collective(void** state) {
  (void)state;
  reinit("400000");
  for (int step = 0; step < 3; ++step) expect_whole(step, slow_burst("burst.on", step));
}

/* A caller that waits has finished its burst: the wait ends the background thread's
 * nap at once. Steps of pushes spread over ~70 ms under a 400 ms gap take about 70 ms
 * each (a nap of the gap, then longer ones while the queue grew, would take over a
 * second each), and are still one collective each; blocking calls under new names
 * (no repeat: each would nap the gap) take milliseconds. */
static void a_wait_ends_the_burst(void** state) {
  (void)state;
  reinit("400000");
  double start = MPI_Wtime();
  for (int step = 0; step < 5; ++step) expect_whole(step, slow_burst("burst.flush", step));
  double elapsed = MPI_Wtime() - start;
  if (elapsed >= 2.0) fail_msg("5 bursts took %.2f s: the waits did not end the naps", elapsed);
  float x[4] = {1, 2, 3, 4};
  start = MPI_Wtime();
  for (int k = 0; k < 10; ++k) {
    char name[48];
    snprintf(name, sizeof name, "burst.blocking.%d", k);
    assert_hvd_ok(hvd_allreduce(x, x, 4, HVD_FLOAT32, HVD_OP_MAX, name));
  }
  elapsed = MPI_Wtime() - start;
  if (elapsed >= 2.0) fail_msg("10 blocking calls took %.2f s: they napped", elapsed);
}

/* The same pushes without the wait: rounds start on the first push, and the step is
 * split (this is what the test above would see if the wait did nothing). */
static void without_the_wait_the_burst_is_split(void** state) {
  (void)state;
  reinit("0");
  uint64_t ran = 0;
  for (int step = 0; step < 3; ++step) ran = slow_burst("burst.off", step);
  if (hvd_size() > 1) assert_true(ran > 1);
}

/* The CPUs this rank has to itself, as libhvd counts them (topo/pin.h cpus_per_rank):
 * its allowed CPUs, shared with the node's other ranks when they are every CPU. */
static double cpus_per_rank(void) {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  assert_int_equal(sched_getaffinity(0, sizeof mask, &mask), 0);
  const int allowed = CPU_COUNT(&mask);
  const int local = hvd_local_size();
  if (allowed >= sysconf(_SC_NPROCESSORS_ONLN) && local > 1) return (double)allowed / local;
  return allowed;
}

/* The cycle time caps a burst's wait where the background thread has a CPU of its
 * own or a GPU transfers (a first round's transfers then overlap the rest of the
 * pushes); where it shares the caller's CPU and the CPU transfers, the cap is ten
 * times longer, since no overlap is possible and a split only costs. Pushes spread
 * over ~70 ms under a 20 ms cycle time: split with a CPU to spare or a GPU, one
 * collective without (checked with two ranks or more: a rank alone runs its rounds
 * differently). The placement's judgement alone (HVD_BURST_CAP_MEASURE=0): the
 * measured one depends on what else runs on the machine, and has a test below. */
static void the_cap_is_longer_without_a_spare_cpu(void** state) {
  (void)state;
  cpu_set_t all;
  CPU_ZERO(&all);
  assert_int_equal(sched_getaffinity(0, sizeof all, &all), 0);
  for (int shared = 0; shared < 2; ++shared) {
    if (shared) { /* this process on one CPU: its background thread shares it */
      cpu_set_t one;
      CPU_ZERO(&one);
      const int cpu = sched_getcpu();
      CPU_SET(cpu >= 0 && CPU_ISSET(cpu, &all) ? cpu : 0, &one);
      assert_int_equal(sched_setaffinity(0, sizeof one, &one), 0);
    }
    assert_hvd_ok(hvd_shutdown());
    setenv("HVD_BURST_GAP_US", "400000", 1);
    setenv("HOROVOD_CYCLE_TIME", "20", 1);
    setenv("HVD_BURST_CAP_MEASURE", "0", 1);
    assert_hvd_ok(hvd_init());
    unsetenv("HVD_BURST_GAP_US");
    unsetenv("HOROVOD_CYCLE_TIME");
    unsetenv("HVD_BURST_CAP_MEASURE");
    const int spare = cpus_per_rank() >= 2 || hvd_gpu_device() >= 0;
    uint64_t ran = 0;
    for (int step = 0; step < 3; ++step) ran = slow_burst(shared ? "burst.cap1" : "burst.cap", step);
    if (hvd_size() > 1) {
      if (spare) assert_true(ran > 1);
      else assert_int_equal(ran, 1);
    }
    if (shared && hvd_gpu_device() < 0) assert_false(spare);
  }
  assert_int_equal(sched_setaffinity(0, sizeof all, &all), 0);
}

/* A caller that keeps its CPU busy between pushes, and tensors of 240 KB (under
 * HVD_INPLACE_MIN_BYTES: fused), so that a round started before the burst ends has
 * milliseconds of transfers to do (a round of a few small tensors is over before the
 * scheduler would make anyone wait, and costs the caller nothing). */
static uint64_t busy_burst(const char* prefix, int step) { return burst(prefix, step, 60000, 1); }

static atomic_int hogs_spin;

static void* hog(void* arg) {
  (void)arg;
  while (atomic_load_explicit(&hogs_spin, memory_order_relaxed)) {
  }
  return NULL;
}

/* A caller that keeps its CPU busy while it pushes, on CPUs that the placement counts
 * as free (each rank counts the machine's as its own, as on separate nodes) but that
 * other threads hold (here a spinning thread per CPU in every rank, and the other
 * ranks' callers; elsewhere another job, another rank on the same cores): a round that
 * starts before its burst ends and the pushes take turns, the threads wait for a CPU,
 * and after a few such rounds the cap is long on every rank, so a step is one
 * collective again, whatever the placement said. Without the measurement
 * (HVD_BURST_CAP_MEASURE=0) every step stays split. */
static void busy_cpus_make_the_cap_long(void** state) {
  (void)state;
  if (hvd_size() < 2 || hvd_gpu_device() >= 0) skip();
  cpu_set_t mask;
  CPU_ZERO(&mask);
  assert_int_equal(sched_getaffinity(0, sizeof mask, &mask), 0);
  enum { kMaxHogs = 256 };
  pthread_t hogs[kMaxHogs];
  const int n_hogs = CPU_COUNT(&mask) < kMaxHogs ? CPU_COUNT(&mask) : kMaxHogs;
  assert_hvd_ok(hvd_shutdown());
  setenv("HVD_BURST_GAP_US", "400000", 1);
  /* A step's pushes take about 100 ms of wall time (72 of them spinning), more when the
   * suite runs other jobs beside this one: the long cap (ten cycle times, 400 ms) leaves
   * them room; the short one (40 ms) still ends a round before the burst does. */
  setenv("HOROVOD_CYCLE_TIME", "40", 1);
  char threshold[32];  /* the suite's 1 MiB would split a step of 24 x 240 KB anyway */
  snprintf(threshold, sizeof threshold, "%s", getenv("HOROVOD_FUSION_THRESHOLD") ? getenv("HOROVOD_FUSION_THRESHOLD") : "");
  setenv("HOROVOD_FUSION_THRESHOLD", "67108864", 1);
  assert_hvd_ok(hvd_init());
  unsetenv("HVD_BURST_GAP_US");
  unsetenv("HOROVOD_CYCLE_TIME");
  if (threshold[0]) setenv("HOROVOD_FUSION_THRESHOLD", threshold, 1);
  else unsetenv("HOROVOD_FUSION_THRESHOLD");
  /* Early rounds, if the placement allows them, until those of 10 ms or more together
   * waited a fifth of their time for a CPU (measured here: after 1 to 10 steps); then
   * whole steps (the 32nd long burst would probe: far off). */
  enum { kSteps = 24 };
  uint64_t ran[kSteps];
  atomic_store(&hogs_spin, 1);
  for (int i = 0; i < n_hogs; ++i) assert_int_equal(pthread_create(&hogs[i], NULL, hog, NULL), 0);
  for (int step = 0; step < kSteps; ++step) ran[step] = busy_burst("burst.busy", step);
  atomic_store(&hogs_spin, 0);
  for (int i = 0; i < n_hogs; ++i) pthread_join(hogs[i], NULL);
  char history[kSteps * 24] = "";
  for (int step = 0; step < kSteps; ++step)
    snprintf(history + strlen(history), sizeof history - strlen(history), " %llu",
             (unsigned long long)ran[step]);
  /* Most of the last steps are whole: one step that a load spike stretched past even
   * the long cap (seen once in a full suite run: "... 1 1 2 1") is the machine, not the
   * cap; with the cap short, every step is split. */
  enum { kLastSteps = 8, kWholeAtLeast = 6 };
  int whole = 0;
  for (int step = kSteps - kLastSteps; step < kSteps; ++step) whole += ran[step] == 1;
  if (whole < kWholeAtLeast)
    fail_msg("only %d of the last %d steps ran as one collective with every CPU busy (each "
             "step's:%s): the cap stayed short", whole, kLastSteps, history);
}

/* A loop of one blocking allreduce: each call repeats the last round's only tensor and
 * must not nap (10 naps of 400 ms would take 4 s; the loop takes milliseconds). */
static void a_lone_repeat_does_not_wait(void** state) {
  (void)state;
  reinit("400000");
  float x[4] = {1, 2, 3, 4};
  assert_hvd_ok(hvd_allreduce(x, x, 4, HVD_FLOAT32, HVD_OP_MAX, "burst.lone"));
  const double start = MPI_Wtime(); /* libhvd started MPI */
  for (int k = 0; k < 10; ++k) {
    for (int i = 0; i < 4; ++i) x[i] = (float)(hvd_rank() * 10 + i);
    assert_hvd_ok(hvd_allreduce(x, x, 4, HVD_FLOAT32, HVD_OP_MAX, "burst.lone"));
    for (int i = 0; i < 4; ++i) assert_true(x[i] == (float)((hvd_size() - 1) * 10 + i));
  }
  const double elapsed = MPI_Wtime() - start;
  if (elapsed >= 2.0) fail_msg("10 lone repeated allreduces took %.2f s: they napped", elapsed);
}

/* The same loop without a name: libhvd names each call anew ("allreduce.noname.<n>"),
 * and the repeat is the same kind of call (operation, type, count, set). A call of
 * another kind after it is not a repeat and may wait; the loop after that is again. */
static void an_unnamed_lone_repeat_does_not_wait(void** state) {
  (void)state;
  reinit("400000");
  float x[4] = {1, 2, 3, 4};
  double y[2] = {0, 0};
  assert_hvd_ok(hvd_allreduce(x, x, 4, HVD_FLOAT32, HVD_OP_MAX, NULL));
  double start = MPI_Wtime();
  for (int k = 0; k < 10; ++k) {
    for (int i = 0; i < 4; ++i) x[i] = (float)(hvd_rank() * 10 + i);
    assert_hvd_ok(hvd_allreduce(x, x, 4, HVD_FLOAT32, HVD_OP_MAX, NULL));
    for (int i = 0; i < 4; ++i) assert_true(x[i] == (float)((hvd_size() - 1) * 10 + i));
  }
  double elapsed = MPI_Wtime() - start;
  if (elapsed >= 2.0)
    fail_msg("10 unnamed lone repeated allreduces took %.2f s: they napped", elapsed);
  assert_hvd_ok(hvd_allreduce(y, y, 2, HVD_FLOAT64, HVD_OP_SUM, NULL)); /* another kind */
  start = MPI_Wtime();
  for (int k = 0; k < 10; ++k) assert_hvd_ok(hvd_allreduce(y, y, 2, HVD_FLOAT64, HVD_OP_SUM, NULL));
  elapsed = MPI_Wtime() - start;
  if (elapsed >= 2.0)
    fail_msg("10 unnamed lone repeats of a new kind took %.2f s: they napped", elapsed);
}

/* Ranks whose bursts differ in length and timing still agree, and nothing is lost. */
static void ranks_with_different_bursts(void** state) {
  (void)state;
  reinit("2000");
  const int rank = hvd_rank(), size = hvd_size();
  enum { kMany = 300 };
  static int32_t v[kMany];
  hvd_handle_t h[kMany];
  for (int step = 0; step < 4; ++step) {
    for (int t = 0; t < kMany; ++t) {
      v[t] = rank + t;
      char name[48];
      snprintf(name, sizeof name, "burst.mixed.%d", t);
      assert_hvd_ok(hvd_allreduce_async(&v[t], &v[t], 1, HVD_INT32, HVD_OP_SUM, name, NULL, &h[t]));
      /* Rank r pauses after every (r + 2)-th push: bursts of different lengths. */
      if (t % (rank + 2) == 0) usleep(500 * (unsigned)(rank + 1));
    }
    for (int t = 0; t < kMany; ++t) {
      assert_hvd_ok(hvd_wait(h[t]));
      assert_int_equal(v[t], size * t + size * (size - 1) / 2);
    }
  }
}

/* argv[1], where given: the tests to leave out (a cmocka pattern), in the runs whose
 * layout proves nothing about them that another run does not (tests/mpi/meson.build). */
int main(int argc, char** argv) {
  if (argc > 1) cmocka_set_skip_filter(argv[1]);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_slow_burst_is_one_collective),
      cmocka_unit_test(a_wait_ends_the_burst),
      cmocka_unit_test(without_the_wait_the_burst_is_split),
      cmocka_unit_test(the_cap_is_longer_without_a_spare_cpu),
      cmocka_unit_test(busy_cpus_make_the_cap_long),
      cmocka_unit_test(a_lone_repeat_does_not_wait),
      cmocka_unit_test(an_unnamed_lone_repeat_does_not_wait),
      cmocka_unit_test(ranks_with_different_bursts),
  };
  return cmocka_run_group_tests_name("burst", tests, tu_group_init, tu_group_shutdown);
}

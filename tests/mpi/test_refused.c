/* A call that one rank refuses (a bad argument) while the others make it correctly:
 * the refusing rank gets its own error at once, every other rank's operation fails
 * with a message naming the refusing rank and its reason (never a wait for ever),
 * and the name can be used again at once, by every rank. The highest rank refuses,
 * so that the others are ahead of it or behind it in turn. */
#include <mpi.h>

#include "test_util.h"

static int refuser(void) { return hvd_size() - 1; }
static int refusing(void) { return hvd_rank() == refuser(); }

static void assert_last_error_mentions(const char* a, const char* b) {
  const char* text = hvd_last_error();
  if (!strstr(text, a) || (b && !strstr(text, b)))
    fail_msg("last error '%s' should mention '%s'%s%s", text, a, b ? " and " : "", b ? b : "");
}

/* What a rank that made the call correctly sees: a mismatch naming the tensor, the
 * refusing rank and (part of) its reason. */
static void assert_peer_refused(hvd_status_t status, const char* name, const char* reason) {
  assert_int_equal(status, HVD_ERR_MISMATCH);
  char who[32];
  snprintf(who, sizeof who, "rank %d", refuser());
  assert_last_error_mentions(name, who);
  assert_last_error_mentions("refused", reason);
}

static void sum_works(const char* name) {
  float v[3] = {1, 2, 3};
  assert_hvd_ok(hvd_allreduce(v, v, 3, HVD_FLOAT32, HVD_OP_SUM, name));
  for (int i = 0; i < 3; ++i) assert_float_equal(v[i], (float)(i + 1) * hvd_size(), 0);
}

static void refused_allreduce_fails_everywhere(void** state) {
  (void)state;
  if (hvd_size() == 1) skip();
  float v[3] = {1, 2, 3};
  if (refusing()) {
    assert_int_equal(hvd_allreduce(NULL, v, 3, HVD_FLOAT32, HVD_OP_SUM, "ref.ar"), HVD_ERR_INVALID_ARGUMENT);
    assert_last_error_mentions("sendbuf", NULL);
  } else {
    assert_peer_refused(hvd_allreduce(v, v, 3, HVD_FLOAT32, HVD_OP_SUM, "ref.ar"), "ref.ar", "sendbuf");
  }
  sum_works("ref.ar");  /* the name again, on every rank */
}

/* The refusing rank calls again under the name before the others have made the call
 * it refused: the new call waits for the refused one to fail, then matches the
 * others' next call. */
static void refusing_rank_calls_again_first(void** state) {
  (void)state;
  if (hvd_size() == 1) skip();
  float v[3] = {1, 2, 3};
  hvd_handle_t h;
  if (refusing()) {
    assert_int_equal(hvd_allreduce(v, v, 3, (hvd_dtype_t)99, HVD_OP_SUM, "ref.again"), HVD_ERR_INVALID_ARGUMENT);
    assert_hvd_ok(hvd_allreduce_async(v, v, 3, HVD_FLOAT32, HVD_OP_SUM, "ref.again", NULL, &h));
  }
  MPI_Barrier(MPI_COMM_WORLD);  /* the others call only now */
  if (!refusing()) {
    assert_peer_refused(hvd_allreduce(v, v, 3, HVD_FLOAT32, HVD_OP_SUM, "ref.again"), "ref.again", "dtype");
    assert_hvd_ok(hvd_allreduce_async(v, v, 3, HVD_FLOAT32, HVD_OP_SUM, "ref.again", NULL, &h));
  }
  assert_hvd_ok(hvd_wait(h));
  for (int i = 0; i < 3; ++i) assert_float_equal(v[i], (float)(i + 1) * hvd_size(), 0);
}

/* A tensor the response cache knows: the others' requests wait on its cache slot,
 * which the refusal drops, so they meet it by name. */
static void refused_cached_tensor(void** state) {
  (void)state;
  if (hvd_size() == 1) skip();
  for (int step = 0; step < 3; ++step) sum_works("ref.cached");
  float v[3] = {1, 2, 3};
  if (refusing()) {
    assert_int_equal(hvd_allreduce(v, v, -3, HVD_FLOAT32, HVD_OP_SUM, "ref.cached"), HVD_ERR_INVALID_ARGUMENT);
  } else {
    assert_peer_refused(hvd_allreduce(v, v, 3, HVD_FLOAT32, HVD_OP_SUM, "ref.cached"), "ref.cached", "count");
  }
  for (int step = 0; step < 3; ++step) sum_works("ref.cached");
}

/* Unnamed calls: the refused one fails everywhere and later ones stay matched. */
static void refused_unnamed_call(void** state) {
  (void)state;
  if (hvd_size() == 1) skip();
  float v[3] = {1, 2, 3};
  if (refusing())
    assert_int_equal(hvd_allreduce(v, NULL, 3, HVD_FLOAT32, HVD_OP_SUM, NULL), HVD_ERR_INVALID_ARGUMENT);
  else
    assert_peer_refused(hvd_allreduce(v, v, 3, HVD_FLOAT32, HVD_OP_SUM, NULL), "noname", "recvbuf");
  sum_works(NULL);
}

/* Each kind of collective, refused on one rank. */
static void refused_other_collectives(void** state) {
  (void)state;
  if (hvd_size() == 1) skip();
  const int size = hvd_size();
  float v[64] = {0};
  int64_t shape[1] = {size};
  void* out = NULL;
  int64_t dim0 = 0;
  hvd_status_t st;

  st = hvd_broadcast(v, 4, HVD_FLOAT32, refusing() ? size + 5 : 0, "ref.bcast");
  if (refusing()) assert_int_equal(st, HVD_ERR_INVALID_ARGUMENT);
  else assert_peer_refused(st, "ref.bcast", "root");

  st = hvd_allgather(v, 1, shape, HVD_FLOAT32, refusing() ? NULL : &out, &dim0, NULL, "ref.gather", NULL);
  if (refusing()) assert_int_equal(st, HVD_ERR_INVALID_ARGUMENT);
  else assert_peer_refused(st, "ref.gather", "recvbuf");
  hvd_free(out);
  out = NULL;

  int64_t splits[64];
  for (int q = 0; q < size; ++q) splits[q] = 1;
  if (refusing()) splits[0] = -1;
  st = hvd_alltoall(v, 1, shape, HVD_FLOAT32, splits, &out, &dim0, NULL, "ref.a2a", NULL);
  if (refusing()) assert_int_equal(st, HVD_ERR_INVALID_ARGUMENT);
  else assert_peer_refused(st, "ref.a2a", "send_splits");
  hvd_free(out);
  out = NULL;

  st = hvd_reducescatter(v, refusing() ? NULL : v, 1, shape, HVD_FLOAT32, HVD_OP_SUM, "ref.rs", NULL);
  if (refusing()) assert_int_equal(st, HVD_ERR_INVALID_ARGUMENT);
  else assert_peer_refused(st, "ref.rs", "recvbuf");
  sum_works(NULL);
}

/* A group refused on one rank: every member fails on every other rank. */
static void refused_group(void** state) {
  (void)state;
  if (hvd_size() == 1) skip();
  float a[2] = {1, 1}, b[3] = {1, 1, 1};
  const void* sends[2] = {a, b};
  void* recvs[2] = {a, b};
  const int64_t counts[2] = {2, 3};
  hvd_status_t st = hvd_grouped_allreduce(2, sends, refusing() ? NULL : recvs, counts, HVD_FLOAT32,
                                          HVD_OP_SUM, "ref.group", NULL);
  if (refusing()) assert_int_equal(st, HVD_ERR_INVALID_ARGUMENT);
  else assert_peer_refused(st, "ref.group", "recvbufs");
  assert_hvd_ok(hvd_grouped_allreduce(2, sends, recvs, counts, HVD_FLOAT32, HVD_OP_SUM, "ref.group", NULL));
  assert_float_equal(b[2], hvd_size(), 0);
}

/* Every rank refuses: each gets its own error, and nothing is left waiting. */
static void refused_everywhere(void** state) {
  (void)state;
  float v[3] = {1, 2, 3};
  for (int i = 0; i < 3; ++i)
    assert_int_equal(hvd_allreduce(NULL, v, 3, HVD_FLOAT32, HVD_OP_SUM, "ref.all"), HVD_ERR_INVALID_ARGUMENT);
  sum_works("ref.all");
}

/* A name that is not UTF-8 is refused with the offset of its first bad byte, and
 * announced with U+FFFD for each bad byte: a peer that called with that text fails at
 * once. Every rank passing a bad name (a lone surrogate's bytes, an overlong '/', a
 * truncated sequence) gets its own error. Valid text of every length works. */
static void name_that_is_not_utf8(void** state) {
  (void)state;
  float v[3] = {1, 2, 3};
  if (hvd_size() > 1) {
    if (refusing()) {
      assert_int_equal(hvd_allreduce(v, v, 3, HVD_FLOAT32, HVD_OP_SUM, "ref.utf8\xff"),
                       HVD_ERR_INVALID_ARGUMENT);
      assert_last_error_mentions("UTF-8", "offset 8");
      assert_last_error_mentions("0xff", NULL);
    } else {
      assert_peer_refused(hvd_allreduce(v, v, 3, HVD_FLOAT32, HVD_OP_SUM, "ref.utf8\xef\xbf\xbd"),
                          "ref.utf8", "UTF-8");
    }
  }
  sum_works("ref.utf8\xef\xbf\xbd");
  static const char* const bad[] = {"ref.utf8.\xed\xb3\xbf", "ref.utf8.\xc0\xaf", "ref.utf8.\xe2\x82",
                                    "ref.utf8.\xf4\x90\x80\x80"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    assert_int_equal(hvd_broadcast(v, 3, HVD_FLOAT32, 0, bad[i]), HVD_ERR_INVALID_ARGUMENT);
    assert_last_error_mentions("offset 9", NULL);
  }
  sum_works("ref.utf8.\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");  /* e-acute, euro, emoji */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(refused_allreduce_fails_everywhere),
      cmocka_unit_test(refusing_rank_calls_again_first),
      cmocka_unit_test(refused_cached_tensor),
      cmocka_unit_test(refused_unnamed_call),
      cmocka_unit_test(refused_other_collectives),
      cmocka_unit_test(refused_group),
      cmocka_unit_test(refused_everywhere),
      cmocka_unit_test(name_that_is_not_utf8),
  };
  return cmocka_run_group_tests_name("refused", tests, tu_group_init, tu_group_shutdown);
}

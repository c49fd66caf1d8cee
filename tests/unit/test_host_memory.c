/* Host memory through the public ABI, without MPI: hvd_alloc_host's sizes, alignment
 * and release, hvd_advise_host's whole pages, and both functions' refusals. Whether the
 * kernel really gave huge pages is printed, not checked: it depends on free memory,
 * and meson's MALLOC_PERTURB_ makes malloc touch memory before the advice. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <hvd/hvd.h>

#define MIB ((size_t)1 << 20)

/* The kernel has transparent huge pages (madvise then accepts the advice). */
static int kernel_has_huge_pages(void) {
  return access("/sys/kernel/mm/transparent_hugepage/enabled", R_OK) == 0;
}

/* AnonHugePages (kB) of the mapping that holds `at`, from /proc/self/smaps; -1 unknown. */
static long huge_kb_at(const void* at) {
  FILE* f = fopen("/proc/self/smaps", "r");
  if (!f) return -1;
  char line[512];
  int inside = 0;
  long kb = -1;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
      inside = (uintptr_t)at >= lo && (uintptr_t)at < hi;
    } else if (inside && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1) {
      break;
    }
  }
  fclose(f);
  return kb;
}

static void small_sizes_are_plain_memory(void** state) {
  (void)state;
  void* p = (void*)1;
  assert_int_equal(hvd_alloc_host(0, &p), HVD_SUCCESS);
  assert_non_null(p);
  hvd_free(p);
  assert_int_equal(hvd_alloc_host(4096, &p), HVD_SUCCESS);
  memset(p, 7, 4096);
  hvd_free(p);
  hvd_free(NULL);
}

static void large_sizes_are_whole_aligned_huge_pages(void** state) {
  (void)state;
  const size_t sizes[] = {MIB, 2 * MIB, 8 * MIB + 3};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; ++i) {
    unsigned char* p = NULL;
    assert_int_equal(hvd_alloc_host(sizes[i], (void**)&p), HVD_SUCCESS);
    assert_int_equal((uintptr_t)p % (2 * MIB), 0);
    memset(p, 0x5a, sizes[i]);
    assert_int_equal(p[sizes[i] - 1], 0x5a);
    if (i == 2) {
      /* Rounded up to whole pages, so all of them could be huge. */
      long kb = huge_kb_at(p);
      print_message("8 MiB from hvd_alloc_host: %ld kB in huge pages\n", kb);
    }
    hvd_free(p);
  }
}

static void advice_covers_the_whole_pages_inside(void** state) {
  (void)state;
  unsigned char* p = NULL;
  assert_int_equal(hvd_alloc_host(8 * MIB, (void**)&p), HVD_SUCCESS);
  const size_t whole = kernel_has_huge_pages() ? 1 : 0;
  size_t advised = 99;
  assert_int_equal(hvd_advise_host(p, 8 * MIB, &advised), HVD_SUCCESS);
  assert_int_equal(advised, whole * 8 * MIB);
  /* From one byte in: the first page is partial, so [p + 2 MiB, p + 4 MiB) alone. */
  assert_int_equal(hvd_advise_host(p + 1, 4 * MIB, &advised), HVD_SUCCESS);
  assert_int_equal(advised, whole * 2 * MIB);
  /* No whole page inside: nothing advised, and no error. */
  assert_int_equal(hvd_advise_host(p + 1, 2 * MIB, &advised), HVD_SUCCESS);
  assert_int_equal(advised, 0);
  assert_int_equal(hvd_advise_host(p, MIB, NULL), HVD_SUCCESS);
  assert_int_equal(hvd_advise_host(NULL, 0, &advised), HVD_SUCCESS);
  assert_int_equal(advised, 0);
  hvd_free(p);
}

static void bad_arguments_are_refused(void** state) {
  (void)state;
  assert_int_equal(hvd_alloc_host(16, NULL), HVD_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(hvd_last_error(), "ptr is NULL"));
  size_t advised = 99;
  assert_int_equal(hvd_advise_host(NULL, 10, &advised), HVD_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(hvd_last_error(), "ptr is NULL"));
  assert_int_equal(advised, 0);
  void* p = (void*)1;
  assert_int_equal(hvd_alloc_host(SIZE_MAX, &p), HVD_ERR_NO_MEMORY);
  assert_null(p);
  assert_non_null(strstr(hvd_last_error(), "could not allocate"));
  assert_int_equal(hvd_alloc_host((size_t)1 << 62, &p), HVD_ERR_NO_MEMORY);
  assert_null(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(small_sizes_are_plain_memory),
      cmocka_unit_test(large_sizes_are_whole_aligned_huge_pages),
      cmocka_unit_test(advice_covers_the_whole_pages_inside),
      cmocka_unit_test(bad_arguments_are_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

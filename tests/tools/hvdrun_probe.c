/*
 * A job for hvdrun's tests: checks, on every rank, what hvdrun promised to deliver.
 *
 *   --size N | --local-size N | --cross-size N   the layout libhvd sees
 *   --env NAME=VALUE     NAME is set to exactly VALUE in this rank's environment
 *   --param NAME=VALUE   libhvd read its knob NAME as VALUE (hvd_param_get)
 *   --weird TEXT         TEXT arrived byte for byte equal to WEIRD_ARG below
 *   --exit-rank R CODE   rank R exits with CODE after a clean shutdown
 *   --early R CODE       (first, alone) the launcher's rank R exits with CODE before
 *                        hvd_init, the others go on into it; R = all: every rank
 *                        exits so (a script's --help: the library loaded, unused)
 *
 * Also runs one allreduce, so the ranks really form one job. Exits 1 with a
 * message naming the first check that failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hvd/hvd.h>

/* Spaces, both quotes, a shell metacharacter, a variable and a glob. */
static const char WEIRD_ARG[] = "it's a \"quoted\" arg;  with spaces & $HOME *";

static int rank_ = -1;

static void fail_check(const char* what, const char* expected, const char* actual) {
  fprintf(stderr, "rank %d: %s: expected [%s], got [%s]\n", rank_, what, expected,
          actual ? actual : "(unset)");
  exit(1);
}

static void check_int(const char* what, const char* expected, int actual) {
  char buf[32];
  snprintf(buf, sizeof buf, "%d", actual);
  if (strcmp(buf, expected) != 0) fail_check(what, expected, buf);
}

int main(int argc, char** argv) {
  if (argc == 4 && strcmp(argv[1], "--early") == 0) {
    const char* r = getenv("PMI_RANK");
    if (!r) r = getenv("OMPI_COMM_WORLD_RANK");
    if (strcmp(argv[2], "all") == 0 || (r && atoi(r) == atoi(argv[2]))) return atoi(argv[3]);
    argc = 1;
  }
  if (hvd_init() != HVD_SUCCESS) {
    fprintf(stderr, "hvd_init failed: %s\n", hvd_last_error());
    return 1;
  }
  rank_ = hvd_rank();
  int exit_code = 0;
  for (int i = 1; i < argc; ++i) {
    const char* opt = argv[i];
    if (i + 1 >= argc) fail_check("arguments", "a value after the option", opt);
    const char* value = argv[++i];
    if (strcmp(opt, "--size") == 0) {
      check_int("hvd_size()", value, hvd_size());
    } else if (strcmp(opt, "--local-size") == 0) {
      check_int("hvd_local_size()", value, hvd_local_size());
    } else if (strcmp(opt, "--cross-size") == 0) {
      check_int("hvd_cross_size()", value, hvd_cross_size());
    } else if (strcmp(opt, "--env") == 0 || strcmp(opt, "--param") == 0) {
      const char* eq = strchr(value, '=');
      if (!eq) fail_check(opt, "NAME=VALUE", value);
      char name[256];
      snprintf(name, sizeof name, "%.*s", (int)(eq - value), value);
      if (strcmp(opt, "--env") == 0) {
        const char* actual = getenv(name);
        if (!actual || strcmp(actual, eq + 1) != 0) fail_check(name, eq + 1, actual);
      } else {
        char actual[256];
        if (hvd_param_get(name, actual, sizeof actual) != HVD_SUCCESS)
          fail_check(name, eq + 1, hvd_last_error());
        if (strcmp(actual, eq + 1) != 0) fail_check(name, eq + 1, actual);
      }
    } else if (strcmp(opt, "--weird") == 0) {
      if (strcmp(value, WEIRD_ARG) != 0) fail_check("the argument with quotes", WEIRD_ARG, value);
    } else if (strcmp(opt, "--exit-rank") == 0) {
      if (i + 1 >= argc) fail_check("--exit-rank", "R CODE", value);
      if (atoi(value) == rank_) exit_code = atoi(argv[i + 1]);
      ++i;
    } else {
      fail_check("option", "a known option", opt);
    }
  }

  int one = 1, total = 0;
  if (hvd_allreduce(&one, &total, 1, HVD_INT32, HVD_OP_SUM, "probe") != HVD_SUCCESS) {
    fprintf(stderr, "rank %d: allreduce failed: %s\n", rank_, hvd_last_error());
    return 1;
  }
  if (total != hvd_size()) {
    fprintf(stderr, "rank %d: allreduce gave %d, expected %d\n", rank_, total, hvd_size());
    return 1;
  }
  hvd_shutdown();
  printf("rank %d of %d: all checks passed\n", rank_, hvd_size());
  return exit_code;
}

/* CHECK(call): a libhvd call that must succeed in the timeline test programs; on
 * failure prints the call, its status and hvd_last_error(), and exits with 1. */
#pragma once

#include <stdio.h>
#include <stdlib.h>

#include <hvd/hvd.h>

#define CHECK(expr)                                                                       \
  do {                                                                                    \
    hvd_status_t st_ = (expr);                                                            \
    if (st_ != HVD_SUCCESS) {                                                             \
      fprintf(stderr, "%s failed: %s (%s)\n", #expr, hvd_status_string(st_), hvd_last_error()); \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)

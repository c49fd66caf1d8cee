// CHECK(cond) for test programs whose main() returns its status: on failure it prints
// the file, line and condition and returns 1 from the function it is in.
#pragma once

#include <cstdio>

#define CHECK(cond)                                                                 \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      return 1;                                                                     \
    }                                                                               \
  } while (0)

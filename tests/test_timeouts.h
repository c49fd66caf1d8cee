/* The suites' one knob for slow machines: HVD_TEST_TIMEOUT_MULTIPLIER (a whole number,
 * default 1) scales every timeout a test sets for itself, as it scales meson's own
 * (scripts/run-tests.sh passes it as --timeout-multiplier), so that a loaded machine
 * makes tests slower, not failed. */
#ifndef HVD_TEST_TIMEOUTS_H
#define HVD_TEST_TIMEOUTS_H

#include <stdlib.h>

static inline unsigned test_timeout_seconds(unsigned seconds) {
  const char* text = getenv("HVD_TEST_TIMEOUT_MULTIPLIER");
  long factor = text ? strtol(text, NULL, 10) : 1;
  return seconds * (unsigned)(factor > 1 ? factor : 1);
}

#endif

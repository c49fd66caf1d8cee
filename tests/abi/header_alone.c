/* hvd.h compiles on its own as strict C99 (built with -std=c99 -pedantic-errors). */
#include <hvd/hvd.h>

int main(void) {
  hvd_op_options_t options = HVD_OP_OPTIONS_INITIALIZER;
  return (int)hvd_status_string(HVD_SUCCESS)[0] - 's' + (int)options.device + 1;
}

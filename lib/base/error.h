// Internal errors: a status and the sentence that explains it. Nothing below lib/api
// throws across threads; failures travel as Error values and end up in a handle or in
// the calling thread's last-error text.
#pragma once

#include <string>

#include "hvd/hvd.h"

namespace hvd {

struct Error {
  hvd_status_t status = HVD_SUCCESS;
  std::string message;

  bool ok() const { return status == HVD_SUCCESS; }
  static Error success() { return {}; }
};

Error make_error(hvd_status_t status, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// The calling thread's last failure, as returned by hvd_last_error().
void set_last_error(const std::string& message);
const char* last_error();

// Records the error as this thread's last error and returns its status: the idiom of
// every exported function's failure path.
hvd_status_t fail(const Error& error);
hvd_status_t fail(hvd_status_t status, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

const char* status_text(hvd_status_t status);

}  // namespace hvd

// Inside libhvd: returns the Error from the enclosing function if expr failed.
#define HVD_RETURN_IF_ERROR(expr)                      \
  do {                                                 \
    ::hvd::Error hvd_return_error_ = (expr);           \
    if (!hvd_return_error_.ok()) return hvd_return_error_; \
  } while (0)

#include "base/error.h"

#include <cstdarg>
#include <cstdio>

namespace hvd {

namespace {
thread_local std::string t_last_error;

std::string vformat(const char* fmt, va_list args) {
  va_list copy;
  va_copy(copy, args);
  int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  if (n <= 0) return {};
  std::string out(static_cast<size_t>(n), '\0');
  std::vsnprintf(out.data(), out.size() + 1, fmt, args);
  return out;
}
}  // namespace

Error make_error(hvd_status_t status, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  Error e{status, vformat(fmt, args)};
  va_end(args);
  return e;
}

void set_last_error(const std::string& message) { t_last_error = message; }
const char* last_error() { return t_last_error.c_str(); }

hvd_status_t fail(const Error& error) {
  t_last_error = error.message;
  return error.status;
}

hvd_status_t fail(hvd_status_t status, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  t_last_error = vformat(fmt, args);
  va_end(args);
  return status;
}

const char* status_text(hvd_status_t status) {
  switch (status) {
#define HVD_STATUS_TEXT_CASE_(name, value, text) \
  case name:                                     \
    return text;
    HVD_STATUS_MAP(HVD_STATUS_TEXT_CASE_)
#undef HVD_STATUS_TEXT_CASE_
  }
  return "unknown status";
}

}  // namespace hvd

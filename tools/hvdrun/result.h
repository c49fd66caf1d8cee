// A value or an error message, for the launcher's parsing functions.
//
// The parsers never throw and never exit: a caller (the command line front end, a
// unit test, a fuzzer) decides what to do with the message.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace hvdrun {

template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  static Result failure(std::string message) {
    Result r;
    r.error_ = std::move(message);
    return r;
  }

  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  const T& value() const& { return *value_; }
  T& value() & { return *value_; }
  T&& value() && { return std::move(*value_); }
  const T* operator->() const { return &*value_; }
  const T& operator*() const { return *value_; }
  const std::string& error() const { return error_; }

 private:
  Result() = default;
  std::optional<T> value_;
  std::string error_;
};

// For functions that only succeed or fail.
struct Ok {};
using Status = Result<Ok>;
inline Status success() { return Ok{}; }

}  // namespace hvdrun

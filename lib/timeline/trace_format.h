// Chrome-trace JSON ("Trace Event Format") for timeline events. The file is an array
// of events; a separator goes before every event but the first, so a file cut short
// after any event lacks only the closing bracket, which chrome://tracing and Perfetto
// accept.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "timeline/trace_event.h"

namespace hvd {

// Appends s as a JSON string literal: quotes, backslashes and control characters are
// escaped, and bytes that are not valid UTF-8 become U+FFFD.
void append_json_string(std::string* out, std::string_view s);

class TraceFormatter {
 public:
  static constexpr std::string_view kHeader = "[\n";
  static constexpr std::string_view kFooter = "\n]\n";

  // Appends the JSON of every event in batch to out, learning its new strings first.
  void append(const TraceBatch& batch, std::string* out);

 private:
  std::string_view text(int32_t id) const;
  void separator(std::string* out);

  std::vector<std::string> strings_;
  bool first_ = true;
};

}  // namespace hvd

// A small JSON reader: enough of RFC 8259 for the step summaries libhvd writes
// (objects, arrays, numbers, strings, true/false/null), and nothing more.
//
// Pure: no I/O, no exceptions, depth-limited, so that unit tests and fuzzers can feed
// it any bytes.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "result.h"

namespace hvdrun {

class JsonValue {
 public:
  enum class Type { Null, Bool, Number, String, Array, Object };

  Type type() const { return type_; }
  bool is_number() const { return type_ == Type::Number; }
  bool is_object() const { return type_ == Type::Object; }
  bool is_array() const { return type_ == Type::Array; }
  double number() const { return number_; }
  bool boolean() const { return boolean_; }
  const std::string& string() const { return string_; }
  const std::vector<JsonValue>& items() const { return items_; }
  // A member of an object; nullptr when absent (or when this is not an object).
  const JsonValue* find(const std::string& key) const;

 private:
  friend class JsonParser;
  Type type_ = Type::Null;
  double number_ = 0;
  bool boolean_ = false;
  std::string string_;
  std::vector<JsonValue> items_;
  std::map<std::string, JsonValue> members_;  // a key given twice keeps its last value
};

// Parses one JSON value (surrounded by optional white space). The error says where
// (byte offset) and what was expected.
Result<JsonValue> parse_json(std::string_view text);

}  // namespace hvdrun

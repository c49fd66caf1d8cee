#include "json.h"

#include <cmath>
#include <cstdio>

namespace hvdbench {

namespace {

std::string number(double value) {
  if (!std::isfinite(value)) return "null";  // JSON has no inf or nan
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", value);
  return buf;
}

}  // namespace

std::string json_quote(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

void JsonLine::key(const char* name) {
  if (!body_.empty()) body_ += ", ";
  body_ += json_quote(name) + ": ";
}

JsonLine& JsonLine::add(const char* name, const std::string& value) {
  key(name);
  body_ += json_quote(value);
  return *this;
}

JsonLine& JsonLine::add(const char* name, double value) {
  key(name);
  body_ += number(value);
  return *this;
}

JsonLine& JsonLine::add(const char* name, long long value) {
  key(name);
  body_ += std::to_string(value);
  return *this;
}

JsonLine& JsonLine::add(const char* name, bool value) {
  key(name);
  body_ += value ? "true" : "false";
  return *this;
}

JsonLine& JsonLine::add(const char* name, const Stats& s) {
  key(name);
  body_ += "{\"median\": " + number(s.median) + ", \"min\": " + number(s.min) +
           ", \"max\": " + number(s.max) + "}";
  return *this;
}

}  // namespace hvdbench

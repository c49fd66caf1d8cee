// One JSON object on one line, keys in the order they are added: the --json output
// that scripts read (keys and meanings are listed in docs/performance.md).
#pragma once

#include <string>

#include "stats.h"

namespace hvdbench {

class JsonLine {
 public:
  JsonLine& add(const char* key, const std::string& value);
  JsonLine& add(const char* key, const char* value) { return add(key, std::string(value)); }
  JsonLine& add(const char* key, double value);
  JsonLine& add(const char* key, long long value);
  JsonLine& add(const char* key, int value) { return add(key, static_cast<long long>(value)); }
  JsonLine& add(const char* key, long value) { return add(key, static_cast<long long>(value)); }
  JsonLine& add(const char* key, bool value);
  // {"median": .., "min": .., "max": ..}
  JsonLine& add(const char* key, const Stats& stats);
  std::string str() const { return "{" + body_ + "}"; }

 private:
  void key(const char* name);
  std::string body_;
};

std::string json_quote(const std::string& text);

}  // namespace hvdbench

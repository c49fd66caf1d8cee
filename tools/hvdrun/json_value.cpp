#include "json_value.h"

#include <charconv>
#include <cstdint>

namespace hvdrun {

const JsonValue* JsonValue::find(const std::string& key) const {
  if (type_ != Type::Object) return nullptr;
  auto it = members_.find(key);
  return it == members_.end() ? nullptr : &it->second;
}

// Recursive descent over the text; the first error stops it.
class JsonParser {
 public:
  explicit JsonParser(std::string_view text) : text_(text) {}

  Result<JsonValue> parse() {
    JsonValue value;
    skip_space();
    if (!parse_value(value, 0)) return Result<JsonValue>::failure(error_);
    skip_space();
    if (pos_ != text_.size()) {
      fail("unexpected text after the value");
      return Result<JsonValue>::failure(error_);
    }
    return value;
  }

 private:
  // Deeper nesting than any summary has is refused rather than overflowing the stack.
  static constexpr int kMaxDepth = 64;

  bool fail(const std::string& what) {
    if (error_.empty()) error_ = "JSON: " + what + " at byte " + std::to_string(pos_);
    return false;
  }
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }
  void skip_space() {
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r'))
      ++pos_;
  }
  bool literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return fail("expected a value");
    pos_ += word.size();
    return true;
  }

  bool parse_value(JsonValue& out, int depth) {
    if (depth > kMaxDepth) return fail("nesting deeper than 64 levels");
    switch (peek()) {
      case '{': return parse_object(out, depth);
      case '[': return parse_array(out, depth);
      case '"': out.type_ = JsonValue::Type::String; return parse_string(out.string_);
      case 't': out.type_ = JsonValue::Type::Bool; out.boolean_ = true; return literal("true");
      case 'f': out.type_ = JsonValue::Type::Bool; return literal("false");
      case 'n': return literal("null");
      default: return parse_number(out);
    }
  }

  bool parse_object(JsonValue& out, int depth) {
    out.type_ = JsonValue::Type::Object;
    ++pos_;
    skip_space();
    if (peek() == '}') { ++pos_; return true; }
    for (;;) {
      skip_space();
      if (peek() != '"') return fail("expected a key in quotes");
      std::string key;
      if (!parse_string(key)) return false;
      skip_space();
      if (peek() != ':') return fail("expected ':'");
      ++pos_;
      skip_space();
      JsonValue member;
      if (!parse_value(member, depth + 1)) return false;
      out.members_[key] = std::move(member);
      skip_space();
      if (peek() == ',') { ++pos_; continue; }
      if (peek() == '}') { ++pos_; return true; }
      return fail("expected ',' or '}'");
    }
  }

  bool parse_array(JsonValue& out, int depth) {
    out.type_ = JsonValue::Type::Array;
    ++pos_;
    skip_space();
    if (peek() == ']') { ++pos_; return true; }
    for (;;) {
      skip_space();
      JsonValue item;
      if (!parse_value(item, depth + 1)) return false;
      out.items_.push_back(std::move(item));
      skip_space();
      if (peek() == ',') { ++pos_; continue; }
      if (peek() == ']') { ++pos_; return true; }
      return fail("expected ',' or ']'");
    }
  }

  bool hex4(uint32_t& code) {
    if (pos_ + 4 > text_.size()) return fail("short \\u escape");
    code = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text_[pos_++];
      code <<= 4;
      if (c >= '0' && c <= '9') code |= static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f') code |= static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') code |= static_cast<uint32_t>(c - 'A' + 10);
      else return fail("bad hex digit in \\u escape");
    }
    return true;
  }

  static void append_utf8(std::string& out, uint32_t code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  bool parse_string(std::string& out) {
    ++pos_;  // the opening quote
    for (;;) {
      if (at_end()) return fail("unterminated string");
      char c = text_[pos_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return fail("control character in a string");
      if (c != '\\') { out += c; continue; }
      if (at_end()) return fail("unterminated string");
      char e = text_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t code = 0;
          if (!hex4(code)) return false;
          if (code >= 0xD800 && code < 0xDC00 && text_.substr(pos_, 2) == "\\u") {
            pos_ += 2;
            uint32_t low = 0;
            if (!hex4(low)) return false;
            if (low < 0xDC00 || low >= 0xE000) return fail("bad surrogate pair");
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
          }
          append_utf8(out, code);
          break;
        }
        default: return fail("bad escape in a string");
      }
    }
  }

  bool digits() {
    size_t start = pos_;
    while (!at_end() && peek() >= '0' && peek() <= '9') ++pos_;
    return pos_ > start;
  }

  bool parse_number(JsonValue& out) {
    size_t start = pos_;
    if (peek() == '-') ++pos_;
    if (peek() == '0') ++pos_;
    else if (!digits()) return fail("expected a value");
    if (peek() == '.') {
      ++pos_;
      if (!digits()) return fail("expected digits after '.'");
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!digits()) return fail("expected digits in the exponent");
    }
    const char* first = text_.data() + start;
    auto [end, ec] = std::from_chars(first, text_.data() + pos_, out.number_);
    if (ec != std::errc() || end != text_.data() + pos_) {
      pos_ = start;
      return fail("number out of range");
    }
    out.type_ = JsonValue::Type::Number;
    return true;
  }

  std::string_view text_;
  size_t pos_ = 0;
  std::string error_;
};

Result<JsonValue> parse_json(std::string_view text) { return JsonParser(text).parse(); }

}  // namespace hvdrun

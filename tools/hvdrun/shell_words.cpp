#include "shell_words.h"

namespace hvdrun {

Result<std::vector<std::string>> split_shell_words(std::string_view text) {
  using R = Result<std::vector<std::string>>;
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;  // distinguishes '' (an empty word) from no word at all
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      ++i;
    } else if (c == '\'') {
      size_t close = text.find('\'', i + 1);
      if (close == std::string_view::npos)
        return R::failure("unterminated single quote in \"" + std::string(text) + "\"");
      word.append(text.substr(i + 1, close - i - 1));
      in_word = true;
      i = close + 1;
    } else if (c == '"') {
      // Inside double quotes a backslash escapes only \ " $ ` and newline.
      ++i;
      bool closed = false;
      while (i < text.size()) {
        char d = text[i];
        if (d == '"') {
          closed = true;
          ++i;
          break;
        }
        if (d == '\\' && i + 1 < text.size()) {
          char e = text[i + 1];
          if (e == '\\' || e == '"' || e == '$' || e == '`') {
            word += e;
            i += 2;
            continue;
          }
          if (e == '\n') {
            i += 2;
            continue;
          }
        }
        word += d;
        ++i;
      }
      if (!closed)
        return R::failure("unterminated double quote in \"" + std::string(text) + "\"");
      in_word = true;
    } else if (c == '\\') {
      if (i + 1 >= text.size())
        return R::failure("trailing backslash in \"" + std::string(text) + "\"");
      if (text[i + 1] != '\n') {
        word += text[i + 1];
        in_word = true;
      }
      i += 2;
    } else {
      word += c;
      in_word = true;
      ++i;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

std::string shell_quote(std::string_view word) {
  if (word.empty()) return "''";
  bool safe = true;
  for (char c : word) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.' || c == '/' || c == ':' || c == ',' || c == '=' ||
              c == '+' || c == '@' || c == '%';
    if (!ok) {
      safe = false;
      break;
    }
  }
  if (safe) return std::string(word);
  std::string out = "'";
  for (char c : word) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

std::string shell_join(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) {
    if (!out.empty()) out += ' ';
    out += shell_quote(w);
  }
  return out;
}

}  // namespace hvdrun

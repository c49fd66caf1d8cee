// UTF-8 checks: a tensor name is text (every rank must mean the same tensor by it, and
// the messages print it), and the timeline writes JSON strings.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace hvd {

// The length of the well-formed UTF-8 sequence at text[i] (1 for ASCII), or 0 where
// the bytes there are none.
size_t utf8_sequence_length(std::string_view text, size_t i);

// The offset of the first byte that is not part of well-formed UTF-8 (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF), or std::string_view::npos.
size_t utf8_invalid_offset(std::string_view text);

// text with each byte that is not part of well-formed UTF-8 replaced by U+FFFD.
std::string utf8_replace_invalid(std::string_view text);

}  // namespace hvd

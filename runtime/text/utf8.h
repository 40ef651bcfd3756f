// runtime/text/utf8.h — UTF-8 helpers the tokenizer and the stream decoder share (lossy decoding, boundaries).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace dsv41::text {

// Length of the well-formed UTF-8 sequence at bytes[pos], or 0 if the bytes there are not one
// (ill-formed, or cut off by the end). `*maximal_subpart` gets how many bytes a lossy decoder replaces
// by one U+FFFD (the Unicode "maximal subpart" rule Rust's from_utf8_lossy and WHATWG follow).
size_t utf8_sequence_length(std::string_view bytes, size_t pos, size_t* maximal_subpart);

// Where a decoder fed these bytes so far must stop: the start of a trailing sequence that is
// well-formed but incomplete (more bytes could complete it), or bytes.size() if there is none.
size_t utf8_decodable_prefix(std::string_view bytes);

// Appends the UTF-8 encoding of a code point.
void append_utf8(std::string& out, uint32_t code_point);

}  // namespace dsv41::text

// Text from outside (a file, an environment variable, a command line) made safe to put in a message:
// valid UTF-8 is kept; control characters, invalid bytes, quotes and backslashes are escaped (\x0a,
// \"); beyond max_chars bytes the text is cut with "...". The public form is rayo::gguf::printable.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace rayo::detail {

[[nodiscard]] std::string printable(std::string_view text, std::size_t max_chars = 80);

}  // namespace rayo::detail

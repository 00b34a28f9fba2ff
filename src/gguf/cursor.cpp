#include "gguf/cursor.hpp"

namespace rayo::gguf::detail {

void format_error(std::string_view source, std::string_view field, std::uint64_t index, std::size_t at,
                  std::string const& problem) {
    std::string message = "GGUF ";
    message += source;
    message += ": ";
    message += field;
    if (index != Cursor::no_index) message += "[" + std::to_string(index) + "]";
    message += " at byte offset " + std::to_string(at) + ": " + problem;
    throw FormatError(message);
}

void Cursor::fail_at(std::size_t at, std::string_view field, std::uint64_t index, std::string const& problem) const {
    format_error(source_, field, index, at, problem);
}

}  // namespace rayo::gguf::detail

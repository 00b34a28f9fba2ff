// The backends' side of rayo::set_kernel_dump_directory (RAYO_DUMP_KERNELS): each writes a kernel
// here as it hands it to the driver.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

namespace rayo::detail {

// Writes `bytes` as NAME + `extension` into the dump directory, where one is set (characters of
// `name` other than letters, digits, '.', '-' and '_' become '_'). Throws rayo::Error naming the
// file when it cannot be written.
void dump_kernel(std::string_view name, std::string_view extension, std::span<std::byte const> bytes);

}  // namespace rayo::detail

// What a GPU kernel records when it meets an index out of range (a gather's id): 16 bytes in
// device memory that every such kernel of a device writes, and that the backend reads after the
// host next waits for the device (a download, synchronize()), then clears and raises as
// rayo::IndexError. Kernels never read out of bounds: they write zeros for the entry instead.
//
// Layout, four little-endian 32-bit words: the id, its position in the ids (flat), the rows the
// table has, and the op's code + 1 (0: nothing recorded). The CUDA kernels store words 0-1 and
// 2-3 as two 64-bit stores (each single-copy atomic), the shaders claim word 3 with an atomic
// compare-and-swap first: either way one faulting entry's words come out together.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "rayo/error.hpp"
#include "rayo/op_table.hpp"

namespace rayo::detail {

using DeviceFaultRecord = std::array<std::uint32_t, 4>;
inline constexpr std::size_t device_fault_record_bytes = sizeof(DeviceFaultRecord);

[[nodiscard]] inline bool raised(DeviceFaultRecord const& r) noexcept { return r[3] != 0; }

// The error a raised record stands for, found on `device` ("cuda:0").
[[nodiscard]] inline IndexError device_fault_error(DeviceFaultRecord const& r, std::string const& device) {
    std::uint32_t const code = r[3] - 1;
    std::string const op = code < op_table.size() ? std::string(to_string(static_cast<Op>(code))) : "a gather";
    return IndexError(op + ": id " + std::to_string(static_cast<std::int32_t>(r[0])) + " (ids[" + std::to_string(r[1]) +
                      "]) is out of range for a table of " + std::to_string(r[2]) + " rows; found on " + device +
                      " by a kernel queued before this host read or synchronize(), which wrote zeros for it");
}

}  // namespace rayo::detail

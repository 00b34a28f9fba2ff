// The dynamic shared memory that keeps a launch to a number of resident blocks a multiprocessor
// (cuda/residency.hpp), on the figures an H100/H200 reports and on edge cases.
#include <gtest/gtest.h>

#include <string>

#include "cuda/residency.hpp"

namespace rayo::test {
namespace {

using cuda::MultiprocessorSharedMemory;
using cuda::shared_bytes_limiting_residency;

constexpr MultiprocessorSharedMemory hopper{.bytes = 233472, .reserved_per_block = 1024};  // 228 KiB, 1 KiB a block

// blocks of `shared` (plus the reserve) fit, one more do not.
constexpr bool limits_to(unsigned blocks, unsigned shared, MultiprocessorSharedMemory sm) {
    return blocks * (shared + sm.reserved_per_block) <= sm.bytes &&
           (blocks + 1) * (shared + sm.reserved_per_block) > sm.bytes;
}

static_assert(shared_bytes_limiting_residency(5, hopper) == 38016);
static_assert(limits_to(5, 38016, hopper) && !limits_to(5, 38016 - 128, hopper));

TEST(CudaResidency, LimitsOneToThirtyTwoBlocksOnHopper) {
    for (unsigned blocks = 1; blocks <= 32; ++blocks) {
        unsigned const shared = shared_bytes_limiting_residency(blocks, hopper);
        SCOPED_TRACE("blocks " + std::to_string(blocks) + ", shared " + std::to_string(shared));
        ASSERT_NE(shared, 0u);
        EXPECT_EQ(shared % 128, 0u);
        EXPECT_TRUE(limits_to(blocks, shared, hopper));
        // The least such size: 128 bytes less lets one more block in.
        if (shared >= 128) {
            EXPECT_FALSE(limits_to(blocks, shared - 128, hopper));
        }
    }
}

TEST(CudaResidency, UnknownOrUnlimitableGivesZero) {
    EXPECT_EQ(shared_bytes_limiting_residency(5, {}), 0u);      // the runner does not know its device
    EXPECT_EQ(shared_bytes_limiting_residency(0, hopper), 0u);  // no blocks: nothing to keep to
    // 229 blocks' reserves alone exceed 228 KiB: 228 + 1 never fit, nothing to keep out.
    EXPECT_EQ(shared_bytes_limiting_residency(228, hopper), 0u);
    // 200 blocks fit up to 143 bytes each and 201 from 138: no 128-byte multiple does both.
    EXPECT_EQ(shared_bytes_limiting_residency(200, hopper), 0u);
    // Without a reserve, 1 block of 513 bytes keeps a second of the same size out of 1024 bytes.
    EXPECT_EQ(shared_bytes_limiting_residency(1, {.bytes = 1024, .reserved_per_block = 0}), 640u);
}

}  // namespace
}  // namespace rayo::test

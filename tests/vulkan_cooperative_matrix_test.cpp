// The cooperative-matrix GEMM's SPIR-V rewrite from VK_NV_cooperative_matrix to
// VK_KHR_cooperative_matrix (src/vulkan/spirv_cooperative_matrix.hpp), checked on the host against
// the module as built: every NV instruction has its KHR counterpart with the same ids, each matrix
// type the use its shape gives it, each load and store the layout of its NV column-major flag. No
// device is needed (lavapipe has neither extension); the H200 runs the rewritten shader through the
// f16 matmul tests.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "rayo/error.hpp"
#include "vulkan/spirv_cooperative_matrix.hpp"
#include "vulkan/diagnostics.hpp"

namespace rayo::test {
namespace {

using Instruction = std::vector<std::uint32_t>;  // [opcode, operands...]

std::vector<Instruction> instructions(std::vector<std::uint32_t> const& spirv) {
    EXPECT_GE(spirv.size(), 5u);
    EXPECT_EQ(spirv[0], 0x07230203u);
    std::vector<Instruction> out;
    std::size_t at = 5;
    while (at < spirv.size()) {
        std::uint32_t const words = spirv[at] >> 16;
        EXPECT_GT(words, 0u);
        EXPECT_LE(at + words, spirv.size());
        if (words == 0 || at + words > spirv.size()) break;
        Instruction ins{spirv[at] & 0xffffu};
        ins.insert(ins.end(), spirv.begin() + static_cast<std::ptrdiff_t>(at + 1),
                   spirv.begin() + static_cast<std::ptrdiff_t>(at + words));
        out.push_back(std::move(ins));
        at += words;
    }
    EXPECT_EQ(at, spirv.size()) << "the last instruction's word count overruns the module";
    return out;
}

std::vector<Instruction> with_opcode(std::vector<Instruction> const& module, std::uint32_t opcode) {
    std::vector<Instruction> out;
    for (auto const& ins : module)
        if (ins[0] == opcode) out.push_back(ins);
    return out;
}

std::string literal_string(Instruction const& ins) {
    std::string text(reinterpret_cast<char const*>(ins.data() + 1), (ins.size() - 1) * 4);
    return text.substr(0, text.find('\0'));
}

struct Constants {
    std::map<std::uint32_t, std::uint32_t> uint_value, float_width;
    std::set<std::uint32_t> true_ids, false_ids;
};

Constants constants(std::vector<Instruction> const& module) {
    Constants c;
    std::uint32_t uint_type = 0;
    for (auto const& ins : module) {
        if (ins[0] == 21 && ins[2] == 32 && ins[3] == 0) uint_type = ins[1];
        if (ins[0] == 22) c.float_width[ins[1]] = ins[2];
        if (ins[0] == 43 && ins[1] == uint_type) c.uint_value[ins[2]] = ins[3];
        if (ins[0] == 41) c.true_ids.insert(ins[2]);
        if (ins[0] == 42) c.false_ids.insert(ins[2]);
    }
    return c;
}

TEST(VulkanCooperativeMatrixKhr, RewritesEveryNvInstructionOfTheGemm) {
    auto const nv_words = vulkan::cooperative_matrix_gemm_spirv(false);
    auto const khr_words = vulkan::cooperative_matrix_gemm_spirv(true);
    auto const nv = instructions(nv_words), khr = instructions(khr_words);
    Constants const nv_c = constants(nv), khr_c = constants(khr);

    // Capability and extension.
    auto const capabilities = with_opcode(khr, 17);
    EXPECT_EQ(with_opcode(nv, 17).size(), capabilities.size());
    bool has_khr_capability = false;
    for (auto const& cap : capabilities) {
        EXPECT_NE(cap[1], 5357u) << "CooperativeMatrixNV left in";
        has_khr_capability |= cap[1] == 6022;
    }
    EXPECT_TRUE(has_khr_capability);
    std::set<std::string> extensions;
    for (auto const& ext : with_opcode(khr, 10)) extensions.insert(literal_string(ext));
    EXPECT_TRUE(extensions.count("SPV_KHR_cooperative_matrix"));
    EXPECT_FALSE(extensions.count("SPV_NV_cooperative_matrix"));
    for (std::uint32_t nv_opcode = 5358; nv_opcode <= 5362; ++nv_opcode)
        EXPECT_TRUE(with_opcode(khr, nv_opcode).empty()) << "NV opcode " << nv_opcode << " left in";

    // Types: the same ids, component, scope, rows and columns, plus the use the shape gives.
    auto const nv_types = with_opcode(nv, 5358), khr_types = with_opcode(khr, 4456);
    ASSERT_EQ(nv_types.size(), 3u);
    ASSERT_EQ(khr_types.size(), nv_types.size());
    std::set<std::string> seen;
    for (std::size_t i = 0; i < khr_types.size(); ++i) {
        Instruction const& t = khr_types[i];
        ASSERT_EQ(t.size(), 7u);
        EXPECT_EQ(Instruction(t.begin() + 1, t.begin() + 6), Instruction(nv_types[i].begin() + 1, nv_types[i].end()));
        ASSERT_TRUE(khr_c.uint_value.count(t[6])) << "the use is not a uint constant";
        std::ostringstream shape;
        shape << 'f' << khr_c.float_width.at(t[2]) << ' ' << khr_c.uint_value.at(t[4]) << 'x'
              << khr_c.uint_value.at(t[5]) << " use " << khr_c.uint_value.at(t[6]);
        seen.insert(shape.str());
    }
    EXPECT_EQ(seen, (std::set<std::string>{"f16 16x16 use 0", "f16 16x8 use 1", "f32 16x8 use 2"}));

    // Loads [type, id, pointer, stride, column-major] -> [type, id, pointer, layout, stride], and
    // stores [pointer, object, stride, column-major] -> [pointer, object, layout, stride], in order.
    auto const layout_of = [&](std::uint32_t flag) -> std::uint32_t {
        EXPECT_TRUE(nv_c.true_ids.count(flag) || nv_c.false_ids.count(flag));
        return nv_c.true_ids.count(flag) ? 1u : 0u;
    };
    auto const nv_loads = with_opcode(nv, 5359), khr_loads = with_opcode(khr, 4457);
    ASSERT_FALSE(nv_loads.empty());
    ASSERT_EQ(khr_loads.size(), nv_loads.size());
    std::set<std::uint32_t> layouts;
    for (std::size_t i = 0; i < nv_loads.size(); ++i) {
        Instruction const &n = nv_loads[i], &k = khr_loads[i];
        ASSERT_EQ(k.size(), n.size());
        EXPECT_EQ(Instruction(k.begin() + 1, k.begin() + 4), Instruction(n.begin() + 1, n.begin() + 4));
        EXPECT_EQ(khr_c.uint_value.at(k[4]), layout_of(n[5])) << "load " << i;
        EXPECT_EQ(k[5], n[4]) << "load " << i << "'s stride";
        layouts.insert(khr_c.uint_value.at(k[4]));
    }
    EXPECT_EQ(layouts, (std::set<std::uint32_t>{0, 1})) << "the shader loads both row- and column-major fragments";
    auto const nv_stores = with_opcode(nv, 5360), khr_stores = with_opcode(khr, 4458);
    ASSERT_FALSE(nv_stores.empty());
    ASSERT_EQ(khr_stores.size(), nv_stores.size());
    for (std::size_t i = 0; i < nv_stores.size(); ++i) {
        Instruction const &n = nv_stores[i], &k = khr_stores[i];
        ASSERT_EQ(k.size(), n.size());
        EXPECT_EQ(Instruction(k.begin() + 1, k.begin() + 3), Instruction(n.begin() + 1, n.begin() + 3));
        EXPECT_EQ(khr_c.uint_value.at(k[3]), layout_of(n[4])) << "store " << i;
        EXPECT_EQ(k[4], n[3]) << "store " << i << "'s stride";
    }

    // Products keep their operands.
    auto const nv_products = with_opcode(nv, 5361), khr_products = with_opcode(khr, 4459);
    ASSERT_FALSE(nv_products.empty());
    ASSERT_EQ(khr_products.size(), nv_products.size());
    for (std::size_t i = 0; i < nv_products.size(); ++i)
        EXPECT_EQ(Instruction(khr_products[i].begin() + 1, khr_products[i].end()),
                  Instruction(nv_products[i].begin() + 1, nv_products[i].end()));

    // Everything else is untouched, and the new constants fit the id bound.
    EXPECT_EQ(khr.size(), nv.size() + 3);
    EXPECT_EQ(khr_words[3], nv_words[3] + 3);
    for (auto const& [id, value] : khr_c.uint_value) EXPECT_LT(id, khr_words[3]);
}

TEST(VulkanCooperativeMatrixKhr, RejectsWhatItCannotRewrite) {
    namespace khr = vulkan::spirv;
    auto const nv = vulkan::cooperative_matrix_gemm_spirv(false);
    auto const message = [](auto&& f) -> std::string {
        try {
            f();
        } catch (Error const& e) {
            return e.what();
        }
        return "no exception";
    };
    // The header and the first word of the first instruction (OpCapability, two words).
    ASSERT_EQ(nv[5] >> 16, 2u);
    std::vector<std::uint32_t> truncated(nv.begin(), nv.begin() + 6);
    EXPECT_NE(message([&] {
                  (void)khr::cooperative_matrix_nv_to_khr(truncated, khr::gemm_matrix_types);
              }).find("runs past the module's end"),
              std::string::npos);
    std::vector<std::uint32_t> not_spirv(nv);
    not_spirv[0] = 0x12345678;
    EXPECT_NE(message([&] {
                  (void)khr::cooperative_matrix_nv_to_khr(not_spirv, khr::gemm_matrix_types);
              }).find("not a SPIR-V module"),
              std::string::npos);
    khr::MatrixType const without_b[] = {khr::gemm_matrix_types[0], khr::gemm_matrix_types[2]};
    EXPECT_NE(message([&] {
                  (void)khr::cooperative_matrix_nv_to_khr(nv, without_b);
              }).find("no use given for a 16x8 matrix of f16"),
              std::string::npos);
    auto const khr_module = vulkan::cooperative_matrix_gemm_spirv(true);
    EXPECT_NE(message([&] {
                  (void)khr::cooperative_matrix_nv_to_khr(khr_module, khr::gemm_matrix_types);
              }).find("has no VK_NV_cooperative_matrix type"),
              std::string::npos);
}

}  // namespace
}  // namespace rayo::test

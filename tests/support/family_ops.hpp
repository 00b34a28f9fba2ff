// The ops of one family, read from rayo::op_table: the lists the kernel tests walk to cover every
// op of a family, so that an op added to the table is tested without an edit here.
//   for (Op op : ops_of(OpFamily::binary)) expect_assembles(binary({.op = op}), Target::sm_90);
#pragma once

#include <rayo/op_table.hpp>

#include <vector>

namespace rayo::test {

// The family's ops, in op_table's order.
inline std::vector<Op> ops_of(OpFamily family) {
    std::vector<Op> ops;
    for (OpInfo const& row : op_table)
        if (row.family == family) ops.push_back(row.op);
    return ops;
}

}  // namespace rayo::test

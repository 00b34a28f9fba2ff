// What rayo::capture records: the capture running on this thread, which the dispatcher records ops
// into (the core's guards, core/capture_guard.hpp, keep the rest of a capture's body to its ops).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <vector>

#include "core/capture_guard.hpp"
#include "dispatch/backend.hpp"
#include "dispatch/dispatch.hpp"
#include "rayo/device.hpp"

namespace rayo::detail {

// One recorded op: its descriptor and views, and weak references to the storages behind them
// (the graph does not keep tensors alive).
struct CapturedOp {
    struct Operand {
        std::weak_ptr<Storage const> storage;  // expired: a destroyed tensor
        bool given = false;                    // false: an optional operand left out
    };
    OpDescriptor op;
    std::vector<TensorView> in, out;
    std::vector<Operand> operands;  // in's then out's
};

struct GraphState {
    explicit GraphState(Device d) noexcept : device(d) {}
    Device device;
    Backend* backend = nullptr;
    bool records_natively = false;  // the backend records its queued work (begin_capture said so)
    std::vector<CapturedOp> ops;
    std::vector<std::uintptr_t> written;  // the buffers the ops write, each once
    std::unique_ptr<NativeGraph> native;
};

// The capture running on this thread, or nullptr.
[[nodiscard]] GraphState* active_capture() noexcept;

// The dispatcher's part: records an op the capture's backend runs natively (and on a backend that
// records natively, has it queue the op's work now, into the recording). Throws rayo::Error for an
// op of another device and for one that would fall back to the CPU.
void capture_op(GraphState& graph, Device device, OpDescriptor const& op, Support const& support,
                std::initializer_list<OpArg> inputs, std::initializer_list<OpArg> outputs, OpViews const& views);

}  // namespace rayo::detail

// GPU time by kernel, from events recorded around each launch: what a profile of a workload on a
// CUDA device shows (RAYO_CUDA_PROFILE=1 prints its table to stderr when the device closes, at
// exit; docs/backends/cuda.md). A kernel's time runs from the event before its launch to the one
// after it, so the events order the kernels they separate: kernels launched to start early do not
// overlap while profiling. A replayed graph is timed whole, as the row graph_replay; launches recorded into a
// graph are not timed. Not thread-safe: the backend's mutex guards it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "cuda/context.hpp"
#include "cuda/driver_api.hpp"

namespace rayo::cuda {

class KernelProfile {
public:
    // Launches timed before their events are read (the stream is waited for then).
    static constexpr std::size_t pending_max = 4096;

    KernelProfile(PrimaryContext const& context, CUstream stream) : context_(context), stream_(stream) {}
    ~KernelProfile();
    KernelProfile(KernelProfile const&) = delete;
    KernelProfile& operator=(KernelProfile const&) = delete;

    // Whether RAYO_CUDA_PROFILE=1.
    [[nodiscard]] static bool requested() noexcept;

    // Records the event before a launch on the stream; end() the one after it, under `name`. Call
    // with the context current.
    [[nodiscard]] CUevent begin();
    void end(std::string_view name, CUevent start);

    // Waits for the launches timed so far and returns the table: one row per name, most time first.
    [[nodiscard]] std::string table();

private:
    struct Pending {
        std::string name;
        CUevent start, end;
    };
    struct Total {
        std::uint64_t count = 0;
        double ms = 0;
    };
    [[nodiscard]] CUevent event();
    void read_pending();

    PrimaryContext const& context_;
    CUstream stream_;
    std::vector<CUevent> free_;  // events whose times were read, for reuse
    std::vector<Pending> pending_;
    std::map<std::string, Total, std::less<>> totals_;
};

}  // namespace rayo::cuda

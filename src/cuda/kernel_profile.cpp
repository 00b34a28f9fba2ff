#include "cuda/kernel_profile.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "core/logging.hpp"

namespace rayo::cuda {

bool KernelProfile::requested() noexcept {
    char const* env = std::getenv("RAYO_CUDA_PROFILE");
    return env && std::strcmp(env, "1") == 0;
}

KernelProfile::~KernelProfile() {
    Driver const& d = context_.driver();
    for (Pending const& p : pending_) free_.insert(free_.end(), {p.start, p.end});
    for (CUevent e : free_) (void)d.cuEventDestroy(e);  // at exit the driver may be gone: nothing to free
}

CUevent KernelProfile::event() {
    if (!free_.empty()) {
        CUevent const e = free_.back();
        free_.pop_back();
        return e;
    }
    CUevent e = nullptr;
    check(context_.driver().cuEventCreate(&e, 0), context_.label() + ": cuEventCreate (profile)");
    return e;
}

CUevent KernelProfile::begin() {
    if (pending_.size() >= pending_max) read_pending();
    CUevent const start = event();
    check(context_.driver().cuEventRecord(start, stream_), context_.label() + ": cuEventRecord (profile)");
    return start;
}

void KernelProfile::end(std::string_view name, CUevent start) {
    CUevent const stop = event();
    check(context_.driver().cuEventRecord(stop, stream_), context_.label() + ": cuEventRecord (profile)");
    pending_.push_back({std::string(name), start, stop});
}

void KernelProfile::read_pending() {
    Driver const& d = context_.driver();
    if (pending_.empty()) return;
    check(d.cuEventSynchronize(pending_.back().end), context_.label() + ": cuEventSynchronize (profile)");
    for (Pending& p : pending_) {
        float ms = 0;
        check(d.cuEventElapsedTime(&ms, p.start, p.end), context_.label() + ": cuEventElapsedTime");
        Total& t = totals_[p.name];
        ++t.count;
        t.ms += ms;
        free_.insert(free_.end(), {p.start, p.end});
    }
    pending_.clear();
}

std::string KernelProfile::table() {
    read_pending();
    std::vector<std::pair<std::string, Total>> rows(totals_.begin(), totals_.end());
    std::sort(rows.begin(), rows.end(), [](auto const& a, auto const& b) { return a.second.ms > b.second.ms; });
    double total = 0;
    for (auto const& [name, t] : rows) total += t.ms;
    std::string out = context_.label() + " GPU time by kernel (RAYO_CUDA_PROFILE)\n";
    char line[256];
    std::snprintf(line, sizeof line, "%-64s %10s %12s %8s\n", "kernel", "launches", "ms", "share");
    out += line;
    for (auto const& [name, t] : rows) {
        std::snprintf(line, sizeof line, "%-64s %10llu %12.3f %7.1f%%\n", name.c_str(),
                      static_cast<unsigned long long>(t.count), t.ms, total > 0 ? 100.0 * t.ms / total : 0.0);
        out += line;
    }
    std::snprintf(line, sizeof line, "%-64s %10s %12.3f\n", "total", "", total);
    out += line;
    return out;
}

}  // namespace rayo::cuda

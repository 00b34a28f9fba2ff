// Progress of a long operation (quantizing a large tensor, loading one from a GGUF file).
#pragma once

#include <cstdint>
#include <functional>

namespace rayo {

// Called on the calling thread with the work done so far and the whole, in the operation's own
// unit (values quantized, bytes loaded): first with done = 0, last with done = total, and a few
// dozen times between, never decreasing. Throwing from it stops the operation and reaches its
// caller; an output it was writing is then left partly written.
using ProgressCallback = std::function<void(std::uint64_t done, std::uint64_t total)>;

}  // namespace rayo

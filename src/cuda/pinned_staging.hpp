// Page-locked host memory through which uploads and downloads move: two 16 MiB chunks used in
// turn, so the host fills (or drains) one while the device copies the other. Transfers larger
// than a chunk are cut into pieces; small ones share a chunk until it is full. The chunks are
// allocated on the first transfer, so a process that never uses the device pins nothing.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <span>

#include "cuda/stream.hpp"

namespace rayo::cuda {

// Not thread-safe: the backend's device mutex guards it.
class PinnedStaging {
public:
    static constexpr std::size_t chunk_bytes = std::size_t{16} << 20;

    explicit PinnedStaging(Stream const& stream);
    ~PinnedStaging();
    PinnedStaging(PinnedStaging const&) = delete;
    PinnedStaging& operator=(PinnedStaging const&) = delete;

    // Enqueues the copy of `src` to device memory at `dst` and returns as soon as `src` has been
    // read (the device may still be copying from the staging chunks).
    void upload(CUdeviceptr dst, std::span<std::byte const> src);
    // Enqueues the copy of device memory at `src` after the work already on the stream, waits for
    // it and fills `dst`.
    void download(CUdeviceptr src, std::span<std::byte> dst);

private:
    struct Chunk {
        std::byte* host = nullptr;
        std::size_t used = 0;
        std::optional<Event> copies_done;  // recorded after each copy that reads or writes the chunk
    };
    // Up to `want` bytes of staging memory no pending copy touches, in the current chunk; moves to
    // the other chunk (waiting for its copies) when the current one is full.
    std::span<std::byte> take(std::size_t want);
    Chunk& current() noexcept { return chunks_[current_]; }

    Stream const& stream_;
    std::array<Chunk, 2> chunks_;
    std::size_t current_ = 0;
};

}  // namespace rayo::cuda

#include "cuda/pinned_staging.hpp"

#include <algorithm>
#include <cstring>
#include <exception>
#include <string>

#include "core/logging.hpp"

namespace rayo::cuda {

namespace {

// Pieces start on 256-byte boundaries, which the copy engines move fastest.
constexpr std::size_t piece_alignment = 256;

}  // namespace

PinnedStaging::PinnedStaging(Stream const& stream) : stream_(stream) {}

PinnedStaging::~PinnedStaging() {
    PrimaryContext const& context = stream_.context();
    for (Chunk& c : chunks_) {
        if (!c.host) continue;
        try {
            ScopedCurrent const current(context);
            c.copies_done->wait();
            CUresult const result = context.driver().cuMemFreeHost(c.host);
            if (result != CUresult::success && result != CUresult::deinitialized)
                detail::log(LogLevel::error, "rayo: " + context.label() + ": cuMemFreeHost: " + describe(result));
        } catch (std::exception const& e) {  // the driver is gone at exit: so is the memory
            detail::log(LogLevel::debug, "rayo: " + context.label() + ": freeing staging memory: " + e.what());
        }
    }
}

std::span<std::byte> PinnedStaging::take(std::size_t want) {
    if (!chunks_.back().host) {  // the first transfer, or a retry after a failed allocation
        PrimaryContext const& context = stream_.context();
        for (Chunk& c : chunks_) {
            if (c.host) continue;
            if (!c.copies_done) c.copies_done.emplace(context);
            void* host = nullptr;
            check(context.driver().cuMemHostAlloc(&host, chunk_bytes, 0),
                  context.label() + ": cuMemHostAlloc of " + std::to_string(chunk_bytes) + " bytes of staging memory");
            c.host = static_cast<std::byte*>(host);
        }
    }
    if (current().used == chunk_bytes) {
        current_ ^= 1;
        current().copies_done->wait();
        current().used = 0;
    }
    Chunk& c = current();
    std::size_t const n = std::min(want, chunk_bytes - c.used);
    std::span<std::byte> const piece(c.host + c.used, n);
    c.used = std::min(chunk_bytes, (c.used + n + piece_alignment - 1) / piece_alignment * piece_alignment);
    return piece;
}

void PinnedStaging::upload(CUdeviceptr dst, std::span<std::byte const> src) {
    PrimaryContext const& context = stream_.context();
    ScopedCurrent const current_context(context);
    Driver const& d = context.driver();
    while (!src.empty()) {
        std::span<std::byte> const piece = take(src.size());
        std::memcpy(piece.data(), src.data(), piece.size());
        if (CUresult const r = d.cuMemcpyHtoDAsync(dst, piece.data(), piece.size(), stream_.handle());
            r != CUresult::success)
            throw_error(r, context.label() + ": cuMemcpyHtoDAsync of " + std::to_string(piece.size()) + " bytes");
        current().copies_done->record(stream_);
        dst += piece.size();
        src = src.subspan(piece.size());
    }
}

void PinnedStaging::download(CUdeviceptr src, std::span<std::byte> dst) {
    PrimaryContext const& context = stream_.context();
    ScopedCurrent const current_context(context);
    Driver const& d = context.driver();
    // Piece k is drained while piece k + 1 is copied; the pieces alternate chunks, so take() never
    // hands out memory of a piece not yet drained.
    struct Pending {
        std::span<std::byte const> staged;
        std::byte* out;
        Event const* done;
    };
    std::optional<Pending> pending;
    auto drain = [&] {
        pending->done->wait();
        std::memcpy(pending->out, pending->staged.data(), pending->staged.size());
    };
    while (!dst.empty()) {
        std::span<std::byte> const piece = take(dst.size());
        if (CUresult const r = d.cuMemcpyDtoHAsync(piece.data(), src, piece.size(), stream_.handle());
            r != CUresult::success)
            throw_error(r, context.label() + ": cuMemcpyDtoHAsync of " + std::to_string(piece.size()) + " bytes");
        current().copies_done->record(stream_);
        if (pending) drain();
        pending = Pending{piece, dst.data(), &*current().copies_done};
        src += piece.size();
        dst = dst.subspan(piece.size());
    }
    if (pending) drain();
}

}  // namespace rayo::cuda

// rayo::llm (CMake: find_package(rayo COMPONENTS llm), target rayo::llm): Llama-family language
// models from GGUF files on any rayo device, on rayo's public API.
//
//   auto file = rayo::gguf::File::open("model.gguf");
//   rayo::llm::Model model(file, rayo::Device::best());
//   rayo::FTensor logits = model.forward(prompt, 0);   // [vocab]: the last token's logits
//
// The hyper-parameters and tensor names are llama.cpp's (`llama.*` keys, `blk.N.attn_q`, ...).
// The weights load once onto the device straight from the mapped file, the KV cache lives on the
// device, and a forward pass is embedding → per layer (rms_norm, q/k/v, rope, attention, output
// projection, rms_norm, SwiGLU feed-forward) → rms_norm → logits. llama.cpp's converter reorders
// the rows of each head of Q and K so that its rope on adjacent pairs reproduces Hugging Face's
// rotate_half rope; so the model rotates adjacent pairs (RopeStyle::adjacent) on the file's
// weights as they are.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "rayo/device.hpp"
#include "rayo/error.hpp"
#include "rayo/export.hpp"
#include "rayo/gguf.hpp"
#include "rayo/tensor.hpp"

namespace rayo::llm {

// What is wrong with a model file or a request: a missing key, a shape that disagrees with the
// hyper-parameters, an architecture or weight type rayo::llm does not run, a token outside the
// vocabulary, more tokens than the context holds.
class RAYO_API ModelError : public Error {
public:
    using Error::Error;
};

// The architectures rayo::llm runs (`general.architecture`): Llama 1-3 and Mistral ("llama"),
// Qwen 2 / 2.5 ("qwen2": q, k and v with biases) and Qwen 3 ("qwen3": q and k RMS-normed per head
// before rope). The Qwen files' rope turns the halves of each head (RopeStyle::halves), Llama's
// adjacent pairs, as llama.cpp's converter writes each.
enum class Architecture { llama, qwen2, qwen3 };

struct Hyperparameters {
    Architecture architecture = Architecture::llama;
    std::size_t layers = 0, width = 0, ffn_width = 0, heads = 0, kv_heads = 0, head_dim = 0;
    std::size_t rope_dims = 0, context = 0, vocab = 0;
    // Each query sees only the last `sliding_window` keys, its own included (0: all of them).
    std::size_t sliding_window = 0;
    float rope_base = 10000.0f, rms_eps = 1e-5f;
};

// The `ARCH.*` keys (`llama.*`, `qwen2.*`, `qwen3.*`) as llama.cpp reads them, checked against
// each other and the file's tensors: ModelError naming the key otherwise, or the architecture
// when it is none of the above. The vocabulary's size comes from the token table (`token_embd`),
// which every file has; head_dim is `ARCH.attention.key_length` where the file has it (Qwen 3),
// else width / heads; `ARCH.attention.sliding_window` gives sliding_window.
[[nodiscard]] RAYO_API Hyperparameters read_hyperparameters(gguf::File const& file);

// Reports the bytes loaded so far out of the total, for a progress line.
using LoadProgress = std::function<void(std::uint64_t done, std::uint64_t total)>;

class RAYO_API Model {
public:
    // Loads every weight onto `device` (f32, f16, bf16, q8_0, q4_0, q4_k, q5_k and q6_k matrices;
    // f32 norms and biases) and allocates a KV cache of the model's context length, or of
    // `context` tokens when that is smaller and not 0. A cache the device cannot hold is OutOfMemory, naming its size.
    Model(gguf::File const& file, Device device, LoadProgress progress = {}, std::size_t context = 0);
    ~Model();
    Model(Model&&) noexcept;
    Model& operator=(Model&&) noexcept;

    [[nodiscard]] Hyperparameters const& hyperparameters() const noexcept;
    [[nodiscard]] Device device() const noexcept;
    // The bytes the weights take on the device.
    [[nodiscard]] std::size_t weight_bytes() const noexcept;
    // The bytes the KV cache takes on the device: keys and values of every layer for the whole context.
    [[nodiscard]] std::size_t cache_bytes() const noexcept;

    // Runs `tokens` at positions pos, pos + 1, ... (their keys and values join the cache) and
    // returns the logits f32 [tokens, vocab] (all_logits) or [vocab] of the last token. One token
    // without all_logits is a decode step: its ops run in place on buffers kept between steps.
    Tensor<float> forward(std::span<std::int32_t const> tokens, std::size_t pos, bool all_logits = false);

    // Whether a GPU's decode steps replay from captures (rayo::capture: one for each 256
    // positions, its attentions reading the position from the device) or issue every op (the
    // default). A device that cannot record one is said once on stderr, and its steps issue ops.
    void set_decode_capture(bool on);

private:
    class Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace rayo::llm

// libFuzzer target: any bytes as a GGUF file, run as rayo-llama runs a model on the CPU: the
// tokenizer (every token's text, texts encoded and decoded), the hyper-parameters, the model with its KV cache capped
// at a few tokens, then a prompt of two tokens and one decode step. A file either runs or is refused with
// rayo::llm::ModelError or a rayo::Error whose message is printable and short. Once a model is built, its forward pass
// must run (anything but OutOfMemory is a finding: a file the loader accepted that the ops refuse), and bad requests (a
// token outside the vocabulary, a prompt past the context) must raise ModelError. Anything else, or a sanitizer report,
// is a finding. Half the mutations are structure-aware (gguf_mutator.hpp): they change the hyper-parameters, the
// vocabulary and the tensor table of files that parse.
#include <rayo/rayo.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <iostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gguf_mutator.hpp"
#include <rayo/llm.hpp>

extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size, std::size_t max_size);

namespace {

constexpr std::size_t context_cap = 8;
constexpr std::size_t max_message = 1000;

[[noreturn]] void finding(std::string_view what) {
    std::cerr << "llama_fuzz: " << what << "\n";
    std::abort();
}

void check_message(std::exception const& e) {
    std::string_view const message = e.what();
    if (message.empty()) finding("empty message");
    if (message.size() > max_message) finding("message longer than " + std::to_string(max_message) + " bytes");
    for (char c : message)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
            finding("control character in message: " + std::string(message));
}

template <class Run>
void expect_model_error(std::string_view request, Run run) {
    try {
        run();
    } catch (rayo::llm::ModelError const& e) {
        check_message(e);
        return;
    } catch (std::exception const& e) {
        finding(std::string(request) + " raised something else than ModelError: " + e.what());
    }
    finding(std::string(request) + " ran");
}

// The file's tokenizer, if it has one rayo runs: every token's text, and texts (broken UTF-8 and
// special tokens among them) encoded to ids inside the vocabulary and decoded back.
std::size_t read_vocabulary(rayo::gguf::File const& file) {
    std::optional<rayo::llm::Tokenizer> tokenizer;
    try {
        tokenizer = rayo::llm::Tokenizer::from_gguf(file);
    } catch (rayo::Error const& e) {
        check_message(e);
        return 0;
    }
    std::size_t sink = 0;
    auto const n = static_cast<std::int32_t>(std::min<std::size_t>(tokenizer->vocab_size(), 4096));
    for (std::int32_t id = 0; id < n; ++id) sink += tokenizer->token_text(id, true).size();
    for (std::string_view text :
         {"Hello, world! 12345", " \xff\xc3( caf\xc3\xa9\n\n\t  ", "<s><|eot_id|>a<|im_start|>"}) {
        std::vector<std::int32_t> const ids = tokenizer->encode(text, true, true);
        for (std::int32_t id : ids)
            if (id < 0 || static_cast<std::size_t>(id) >= tokenizer->vocab_size())
                finding("encode gave id " + std::to_string(id));
        sink += tokenizer->decode(ids, true).size();
    }
    return sink;
}

void expect_logits(rayo::FTensor const& logits, rayo::Shape const& shape) {
    if (logits.shape() != shape)
        finding("logits of shape " + logits.shape().to_string() + ", expected " + shape.to_string());
    (void)logits.to_vector();
}

// The checks a built model must pass: a prompt, a decode step, and the requests it must refuse.
void run_model(rayo::llm::Model& model, rayo::llm::Hyperparameters const& file_hp) {
    rayo::llm::Hyperparameters const& hp = model.hyperparameters();
    if (hp.context != std::min(file_hp.context, context_cap) || hp.vocab != file_hp.vocab)
        finding("the model's hyper-parameters differ from the file's");
    auto const last = static_cast<std::int32_t>(hp.vocab - 1);
    std::vector<std::int32_t> const prompt{0, last};
    std::size_t const n = std::min<std::size_t>(prompt.size(), hp.context);
    auto const vocab = static_cast<std::int64_t>(hp.vocab);
    try {
        expect_logits(model.forward(std::span(prompt).first(n), 0), rayo::Shape{vocab});
        if (n < hp.context) {
            std::int32_t const next = last / 2;
            expect_logits(model.forward(std::span(&next, 1), n, true), rayo::Shape{1, vocab});
        }
    } catch (rayo::OutOfMemory const& e) {
        check_message(e);
        return;
    } catch (std::exception const& e) {
        finding(std::string("the forward pass of a model that loaded failed: ") + e.what());
    }
    std::int32_t const outside = last + 1, negative = -1;
    expect_model_error("a token outside the vocabulary", [&] { (void)model.forward(std::span(&outside, 1), 0); });
    expect_model_error("a negative token", [&] { (void)model.forward(std::span(&negative, 1), 0); });
    expect_model_error("no tokens", [&] { (void)model.forward({}, 0); });
    expect_model_error("a token past the context", [&] { (void)model.forward(std::span(&last, 1), hp.context); });
}

void run_file(rayo::gguf::File const& file) {
    try {
        (void)read_vocabulary(file);
    } catch (rayo::llm::ModelError const& e) {
        check_message(e);
    }
    rayo::llm::Hyperparameters const hp = rayo::llm::read_hyperparameters(file);
    rayo::llm::Model model(file, rayo::Device::cpu(), {}, context_cap);
    run_model(model, hp);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    rayo::set_num_threads(1);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
    std::span<std::byte const> const bytes(reinterpret_cast<std::byte const*>(data), size);
    try {
        rayo::gguf::File const file = rayo::gguf::File::from_memory(bytes, "fuzz");
        run_file(file);
    } catch (rayo::llm::ModelError const& e) {
        check_message(e);
    } catch (rayo::Error const& e) {
        check_message(e);
    }
    return 0;
}

extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size, std::size_t max_size,
                                               unsigned seed) {
    if (seed % 2 == 0) {
        auto const out = rayo::fuzz::GgufMutator(seed).mutate(
            std::span<std::byte const>(reinterpret_cast<std::byte const*>(data), size));
        if (out && !out->empty() && out->size() <= max_size) {
            std::memcpy(data, out->data(), out->size());
            return out->size();
        }
    }
    return LLVMFuzzerMutate(data, size, max_size);
}

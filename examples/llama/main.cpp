// rayo-llama: greedy generation with a Llama-family GGUF model on any rayo device.
//
//   rayo-llama MODEL.gguf --prompt-tokens 1,15043,3186 [--n-predict 32] [--device cuda:0]
//
// Prints the generated token ids (and their text when the file has a vocabulary), then the load
// time, the prefill and decode rates, then the device's peak memory beside what the weights and the
// KV cache take. Bad input (a file of another architecture, a missing tensor, a token outside the
// vocabulary, a prompt longer than the context) is a message and exit code 2.
#include <rayo/rayo.hpp>

#include <cctype>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <fstream>
#include <iterator>
#include <iostream>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "llama_model.hpp"
#include "../progress_line.hpp"

namespace {

struct Options {
    std::string model;
    std::string device;
    std::vector<std::int32_t> prompt;
    std::size_t n_predict = 16;
    std::size_t context = 0;
    std::string logits_file;  // every prompt position's logits, one value a line
    // How K-quant linear layers round the activations (rayo::KQuantActivations; unset: rayo's
    // default or RAYO_KQUANT_ACTIVATIONS). q8_k is llama.cpp's rounding: on a CPU, whose decode the
    // integer dot products bound, half the work of the default pair of blocks, at ~0.5% error.
    std::optional<rayo::KQuantActivations> activations;
    // Decode steps on a GPU replay from rayo::capture (one capture for 256 positions).
    bool capture = false;
};

constexpr char const* usage =
    "usage: rayo-llama MODEL.gguf (--prompt-tokens ID,ID,... | --prompt-file FILE) [--n-predict N]\n"
    "                  [--device cpu|vulkan[:N]|cuda[:N]] [--context N] [--logits FILE]\n"
    "                  [--activations q8_k|q8_k_residual] [--capture]\n";

std::vector<std::int32_t> parse_tokens(std::string const& text) {
    std::vector<std::int32_t> ids;
    std::string item;
    std::istringstream in(text);
    while (std::getline(in, item, ',')) {
        std::size_t end = 0;
        long long v = 0;
        try {
            v = std::stoll(item, &end);
        } catch (std::exception const&) {
            end = 0;
        }
        while (end < item.size() && std::isspace(static_cast<unsigned char>(item[end]))) ++end;
        if (item.empty() || end != item.size() || v < INT32_MIN || v > INT32_MAX)
            throw rayo_llama::ModelError("'" + item + "' is not a token id");
        ids.push_back(static_cast<std::int32_t>(v));
    }
    return ids;
}

std::size_t parse_count(std::string_view flag, std::string const& text) {
    std::size_t end = 0;
    unsigned long long v = 0;
    try {
        v = std::stoull(text, &end);
    } catch (std::exception const&) {
        end = 0;
    }
    if (end != text.size() || text.empty() || text[0] == '-')
        throw rayo_llama::ModelError(std::string(flag) + " takes a count, got '" + text + "'");
    return static_cast<std::size_t>(v);
}

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        std::string_view const a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw rayo_llama::ModelError(std::string(a) + " needs a value");
            return argv[++i];
        };
        if (a == "--prompt-tokens") {
            o.prompt = parse_tokens(value());
        } else if (a == "--activations") {
            std::string const mode = value();
            if (mode == "q8_k") o.activations = rayo::KQuantActivations::q8_k;
            else if (mode == "q8_k_residual") o.activations = rayo::KQuantActivations::q8_k_residual;
            else throw rayo_llama::ModelError("--activations takes q8_k or q8_k_residual, got '" + mode + "'");
        } else if (a == "--prompt-file") {
            std::string const path = value();
            std::ifstream in(path);
            if (!in) throw rayo_llama::ModelError("cannot read " + path);
            std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
            for (char& c : text)
                if (c == '\n' || c == ' ' || c == '\t' || c == '\r') c = ',';
            std::string joined;
            for (std::size_t j = 0; j < text.size(); ++j)
                if (text[j] != ',' || (!joined.empty() && joined.back() != ',')) joined += text[j];
            if (!joined.empty() && joined.back() == ',') joined.pop_back();
            o.prompt = parse_tokens(joined);
        } else if (a == "--n-predict") {
            o.n_predict = parse_count(a, value());
        } else if (a == "--context") {
            o.context = parse_count(a, value());
        } else if (a == "--device") {
            o.device = value();
        } else if (a == "--logits") {
            o.logits_file = value();
        } else if (a == "--capture") {
            o.capture = true;
        } else if (a == "-h" || a == "--help") {
            std::cout << usage;
            std::exit(0);
        } else if (o.model.empty() && !a.starts_with("-")) {
            o.model = a;
        } else {
            throw rayo_llama::ModelError("unknown argument '" + std::string(a) + "'");
        }
    }
    if (o.model.empty()) throw rayo_llama::ModelError("no model file given");
    if (o.prompt.empty()) throw rayo_llama::ModelError("no prompt given (--prompt-tokens or --prompt-file)");
    return o;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::int32_t greedy(rayo::FTensor const& logits) { return static_cast<std::int32_t>(rayo::argmax(logits).item()); }

int run(Options const& o) {
    rayo::Device const device = o.device.empty() ? rayo::Device::best() : rayo::Device::parse(o.device);
    if (o.activations) rayo::set_kquant_activations(*o.activations);
    auto const t_load = std::chrono::steady_clock::now();
    rayo::gguf::File const file = rayo::gguf::File::open(o.model);
    rayo_llama::Vocabulary const vocab(file);
    rayo_llama::Model model(file, device, rayo_examples::progress_line("loading " + o.model + " onto " + device.id()),
                            o.context);
    model.set_decode_capture(o.capture);
    device.synchronize();
    double const load_s = seconds_since(t_load);
    rayo_llama::Hyperparameters const& hp = model.hyperparameters();
    std::printf("model: %zu layers, width %zu, %zu/%zu heads, feed-forward %zu, vocabulary %zu, context %zu, on %s\n",
                hp.layers, hp.width, hp.heads, hp.kv_heads, hp.ffn_width, hp.vocab, hp.context, device.id().c_str());

    auto const t_prefill = std::chrono::steady_clock::now();
    rayo::FTensor logits = model.forward(o.prompt, 0, !o.logits_file.empty());
    if (!o.logits_file.empty()) {
        std::ofstream out(o.logits_file);
        out.precision(9);
        for (float v : logits.to_vector()) out << v << '\n';
        if (!out) throw rayo_llama::ModelError("cannot write " + o.logits_file);
        logits = logits.slice(logits.shape()[0] - 1, logits.shape()[0]).reshape({static_cast<std::int64_t>(hp.vocab)});
    }
    std::int32_t next = greedy(logits);
    double const prefill_s = seconds_since(t_prefill);

    std::vector<std::int32_t> generated;
    auto const t_decode = std::chrono::steady_clock::now();
    std::size_t pos = o.prompt.size();
    while (generated.size() < o.n_predict) {
        generated.push_back(next);
        if (generated.size() == o.n_predict || pos >= hp.context) break;
        logits = model.forward(std::span<std::int32_t const>(&next, 1), pos++);
        next = greedy(logits);
    }
    double const decode_s = seconds_since(t_decode);

    std::printf("generated:");
    for (std::int32_t id : generated) std::printf(" %d", id);
    std::printf("\n");
    if (!vocab.empty()) {
        std::string text;
        for (std::int32_t id : generated) text += vocab.text(id);
        std::printf("text: %s\n", rayo::gguf::printable(text, 4096).c_str());
    }
    std::size_t const steps = generated.size() > 1 ? generated.size() - 1 : 0;
    std::printf("load %.2f s, prefill %zu tokens %.1f tokens/s, decode %zu tokens %.1f tokens/s\n", load_s,
                o.prompt.size(), static_cast<double>(o.prompt.size()) / prefill_s, steps,
                steps ? static_cast<double>(steps) / decode_s : 0.0);
    // Everything the device's backend held at its peak since the start (the load included).
    constexpr double mib = 1 << 20;
    std::printf("peak device memory %.1f MiB (weights %.1f MiB, KV cache %.1f MiB)\n",
                static_cast<double>(device.memory_usage().peak_reserved_bytes) / mib,
                static_cast<double>(model.weight_bytes()) / mib, static_cast<double>(model.cache_bytes()) / mib);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(parse(argc, argv));
    } catch (rayo_llama::ModelError const& e) {
        std::fprintf(stderr, "rayo-llama: %s\n", e.what());
        if (argc < 2) std::fputs(usage, stderr);
        return 2;
    } catch (rayo::Error const& e) {
        std::fprintf(stderr, "rayo-llama: %s\n", e.what());
        return 2;
    }
}

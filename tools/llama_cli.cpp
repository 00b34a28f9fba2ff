// rayo-llama: text generation with a Llama-family GGUF model on any rayo device, the command line
// of rayo::llm.
//
//   rayo-llama MODEL.gguf -p "The capital of France is" [-n 64] [--temp 0.8] [--seed 1] [--device cuda:0]
//   rayo-llama MODEL.gguf --chat [-p "Hello!"] [--system "Be brief."]
//   rayo-llama MODEL.gguf --prompt-tokens 1,15043,3186 [--n-predict 32]
//
// Text prompts stream the generated text to stdout as it comes; the loading progress, the model's
// shape and the rates at the end go to stderr. Token-id prompts print `generated: ID ...` (and
// `text: ...` when the file's tokenizer runs) on stdout. Bad input (a file of another
// architecture, weight type or tokenizer, a missing tensor, a token outside the vocabulary, a
// prompt longer than the context) is a message and exit code 2, before the weights load where
// the file's metadata tells.
#include <rayo/llm.hpp>
#include <rayo/rayo.hpp>

#include <unistd.h>

#include <cctype>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "progress_line.hpp"

namespace {

using rayo::llm::ModelError;

struct Options {
    std::string model;
    std::string device;
    std::optional<std::string> text;          // -p / -f
    std::vector<std::int32_t> prompt_tokens;  // --prompt-tokens / --prompt-file
    bool chat = false;
    std::string system;
    std::size_t n_predict = 128;
    std::size_t context = 0;
    rayo::llm::SamplingParams sampling;
    std::vector<std::string> stop;
    bool ignore_eos = false;
    std::string logits_file;  // every prompt position's logits, one value a line
    // How K-quant linear layers round the activations (rayo::KQuantActivations; unset: rayo's
    // default or RAYO_KQUANT_ACTIVATIONS). q8_k is llama.cpp's rounding: on a CPU, whose decode the
    // integer dot products bound, half the work of the default pair of blocks, at ~0.5% error.
    std::optional<rayo::KQuantActivations> activations;
    // Decode steps on a GPU replay from rayo::capture (one capture for 256 positions).
    bool capture = false;
};

constexpr char const* usage =
    "usage: rayo-llama MODEL.gguf (-p TEXT | -f FILE | --chat | --prompt-tokens ID,ID,... | --prompt-file FILE)\n"
    "         [-n N] [--device cpu|vulkan[:N]|cuda[:N]] [--context N]\n"
    "         [--temp T] [--top-k K] [--top-p P] [--min-p P] [--repeat-penalty R] [--repeat-last-n N]\n"
    "         [--seed S] [--stop TEXT]... [--ignore-eos] [--system TEXT]\n"
    "         [--logits FILE] [--activations q8_k|q8_k_residual] [--capture]\n"
    "  -p TEXT             the prompt (-f FILE: read from a file); the generated text streams to stdout\n"
    "  --chat              the prompt is a user turn in the file's chat template (Llama 3, ChatML);\n"
    "                      without -p, each line of stdin is one turn of a conversation\n"
    "  --prompt-tokens     token ids instead of text (--prompt-file: ids from a file)\n"
    "  -n, --n-predict N   tokens to generate at most (128); generation also ends at the end of the\n"
    "                      model's turn (not with --ignore-eos) or a --stop text\n"
    "  --temp T            0 is greedy (default 0.8); --top-k 40, --top-p 0.95, --min-p 0.05,\n"
    "                      --repeat-penalty 1 (off) over --repeat-last-n 64 tokens, --seed 0\n";

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
            throw ModelError("'" + item + "' is not a token id");
        ids.push_back(static_cast<std::int32_t>(v));
    }
    return ids;
}

std::string read_file(std::string const& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw ModelError("cannot read " + path);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::int32_t> parse_token_file(std::string const& path) {
    std::string text = read_file(path);
    for (char& c : text)
        if (c == '\n' || c == ' ' || c == '\t' || c == '\r') c = ',';
    std::string joined;
    for (char c : text)
        if (c != ',' || (!joined.empty() && joined.back() != ',')) joined += c;
    if (!joined.empty() && joined.back() == ',') joined.pop_back();
    return parse_tokens(joined);
}

std::uint64_t parse_unsigned(std::string_view flag, std::string const& text) {
    std::size_t end = 0;
    unsigned long long v = 0;
    try {
        v = std::stoull(text, &end);
    } catch (std::exception const&) {
        end = 0;
    }
    if (end != text.size() || text.empty() || text[0] == '-')
        throw ModelError(std::string(flag) + " takes a count, got '" + text + "'");
    return v;
}

float parse_float(std::string_view flag, std::string const& text) {
    std::size_t end = 0;
    float v = 0;
    try {
        v = std::stof(text, &end);
    } catch (std::exception const&) {
        end = 0;
    }
    if (end != text.size() || text.empty()) throw ModelError(std::string(flag) + " takes a number, got '" + text + "'");
    return v;
}

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        std::string_view const a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw ModelError(std::string(a) + " needs a value");
            return argv[++i];
        };
        if (a == "-p" || a == "--prompt") {
            o.text = value();
        } else if (a == "-f" || a == "--file") {
            o.text = read_file(value());
        } else if (a == "--prompt-tokens") {
            o.prompt_tokens = parse_tokens(value());
        } else if (a == "--prompt-file") {
            o.prompt_tokens = parse_token_file(value());
        } else if (a == "--chat") {
            o.chat = true;
        } else if (a == "--system") {
            o.system = value();
        } else if (a == "-n" || a == "--n-predict") {
            o.n_predict = parse_unsigned(a, value());
        } else if (a == "--context") {
            o.context = parse_unsigned(a, value());
        } else if (a == "--temp") {
            o.sampling.temperature = parse_float(a, value());
        } else if (a == "--top-k") {
            o.sampling.top_k = parse_unsigned(a, value());
        } else if (a == "--top-p") {
            o.sampling.top_p = parse_float(a, value());
        } else if (a == "--min-p") {
            o.sampling.min_p = parse_float(a, value());
        } else if (a == "--repeat-penalty") {
            o.sampling.repetition_penalty = parse_float(a, value());
        } else if (a == "--repeat-last-n") {
            o.sampling.penalty_window = parse_unsigned(a, value());
        } else if (a == "--seed") {
            o.sampling.seed = parse_unsigned(a, value());
        } else if (a == "--stop") {
            o.stop.push_back(value());
            if (o.stop.back().empty()) throw ModelError("--stop takes a non-empty text");
        } else if (a == "--ignore-eos") {
            o.ignore_eos = true;
        } else if (a == "--activations") {
            std::string const mode = value();
            if (mode == "q8_k")
                o.activations = rayo::KQuantActivations::q8_k;
            else if (mode == "q8_k_residual")
                o.activations = rayo::KQuantActivations::q8_k_residual;
            else
                throw ModelError("--activations takes q8_k or q8_k_residual, got '" + mode + "'");
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
            throw ModelError("unknown argument '" + std::string(a) + "'");
        }
    }
    if (o.model.empty()) throw ModelError("no model file given");
    if (o.text && !o.prompt_tokens.empty()) throw ModelError("give a text prompt or token ids, not both");
    if (!o.text && o.prompt_tokens.empty() && !o.chat)
        throw ModelError("no prompt given (-p, -f, --chat, --prompt-tokens or --prompt-file)");
    if (o.chat && !o.prompt_tokens.empty()) throw ModelError("--chat takes a text prompt, not token ids");
    if (!o.logits_file.empty() && o.prompt_tokens.empty()) throw ModelError("--logits takes token-id prompts");
    (void)rayo::llm::Sampler(o.sampling);  // the sampling options are checked before anything loads
    return o;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// What a run reports at its end.
struct Totals {
    double load_s = 0, prefill_s = 0, decode_s = 0;
    std::size_t prefill_tokens = 0, decode_steps = 0;
};

class Runner {
public:
    Runner(Options const& o, rayo::gguf::File const& file, std::optional<rayo::llm::Tokenizer> tokenizer,
           rayo::Device device)
        : o_(o), device_(device), model_(load(file, device)), session_(model_, std::move(tokenizer)) {}

    Totals const& totals() const noexcept { return totals_; }
    rayo::llm::Model const& model() const noexcept { return model_; }

    // Feeds `tokens` (timed as prefill), then generates, streaming text to stdout when `stream`.
    rayo::llm::Generation turn(std::span<std::int32_t const> tokens, bool stream) {
        auto const t0 = std::chrono::steady_clock::now();
        session_.feed(tokens);
        device_.synchronize();
        totals_.prefill_s += seconds_since(t0);
        totals_.prefill_tokens += tokens.size();
        rayo::llm::GenerationOptions options;
        options.max_tokens = o_.n_predict;
        options.sampling = o_.sampling;
        options.stop = o_.stop;
        options.ignore_end_of_generation = o_.ignore_eos;
        auto const print = [](std::string_view text) {
            std::fwrite(text.data(), 1, text.size(), stdout);
            std::fflush(stdout);
            return true;
        };
        rayo::llm::Generation g = session_.generate(options, stream ? print : std::function<bool(std::string_view)>{});
        totals_.decode_s += g.decode_seconds;
        totals_.decode_steps += g.steps;
        return g;
    }

    // Every prompt position's logits, for comparing with a reference (--logits).
    void write_prompt_logits(std::span<std::int32_t const> tokens, std::string const& path) {
        rayo::FTensor const all = model_.forward(tokens, 0, true);
        std::ofstream out(path);
        out.precision(9);
        for (float v : all.to_vector()) out << v << '\n';
        if (!out) throw ModelError("cannot write " + path);
        session_.clear();
    }

private:
    rayo::llm::Model load(rayo::gguf::File const& file, rayo::Device device) {
        auto const t0 = std::chrono::steady_clock::now();
        rayo::llm::Model model(
            file, device, rayo_examples::progress_line("loading " + o_.model + " onto " + device.id()), o_.context);
        model.set_decode_capture(o_.capture);
        device.synchronize();
        totals_.load_s = seconds_since(t0);
        return model;
    }

    Options const& o_;
    rayo::Device device_;
    Totals totals_;
    rayo::llm::Model model_;
    rayo::llm::Session session_;
};

void report(Totals const& t, Runner const& runner, rayo::Device device) {
    auto const rate = [](std::size_t n, double s) { return s > 0 ? static_cast<double>(n) / s : 0.0; };
    std::fprintf(stderr, "load %.2f s, prefill %zu tokens %.1f tokens/s, decode %zu tokens %.1f tokens/s\n", t.load_s,
                 t.prefill_tokens, rate(t.prefill_tokens, t.prefill_s), t.decode_steps,
                 rate(t.decode_steps, t.decode_s));
    // Everything the device's backend held at its peak since the start (the load included).
    constexpr double mib = 1 << 20;
    std::fprintf(stderr, "peak device memory %.1f MiB (weights %.1f MiB, KV cache %.1f MiB)\n",
                 static_cast<double>(device.memory_usage().peak_reserved_bytes) / mib,
                 static_cast<double>(runner.model().weight_bytes()) / mib,
                 static_cast<double>(runner.model().cache_bytes()) / mib);
}

// The prompt as token ids, checked against the context before the weights load.
void check_fits(std::size_t prompt, Options const& o, rayo::llm::Hyperparameters const& hp) {
    std::size_t const context = o.context != 0 && o.context < hp.context ? o.context : hp.context;
    if (prompt > context)
        throw ModelError("the prompt's " + std::to_string(prompt) + " tokens do not fit the context of " +
                         std::to_string(context));
}

int run(Options const& o) {
    rayo::Device const device = o.device.empty() ? rayo::Device::best() : rayo::Device::parse(o.device);
    if (o.activations) rayo::set_kquant_activations(*o.activations);
    rayo::gguf::File const file = rayo::gguf::File::open(o.model);
    rayo::llm::Hyperparameters const hp = rayo::llm::read_hyperparameters(file);

    std::optional<rayo::llm::Tokenizer> tokenizer;
    try {
        tokenizer = rayo::llm::Tokenizer::from_gguf(file);
    } catch (rayo::Error const& e) {
        if (!o.prompt_tokens.empty()) {
            std::fprintf(stderr, "rayo-llama: no text, ids only: %s\n", e.what());
        } else {
            throw;  // a text prompt needs the tokenizer
        }
    }
    std::optional<rayo::llm::ChatTemplate> chat;
    if (o.chat) chat = rayo::llm::ChatTemplate::from_gguf(file);
    std::vector<std::int32_t> prompt = o.prompt_tokens;
    std::vector<rayo::llm::ChatMessage> first_turn;
    if (!o.system.empty()) first_turn.push_back({"system", o.system});
    if (o.text && chat) first_turn.push_back({"user", *o.text});
    if (o.text && !chat) prompt = tokenizer->encode(*o.text);
    if (chat && o.text) prompt = tokenizer->encode(chat->apply(first_turn), true, true);
    bool const conversation = chat && !o.text;  // turns read from stdin
    if (prompt.empty() && !conversation) throw ModelError("the prompt gives no tokens in this model's vocabulary");
    for (std::size_t i = 0; i < prompt.size(); ++i)
        if (prompt[i] < 0 || static_cast<std::size_t>(prompt[i]) >= hp.vocab)
            throw ModelError("token " + std::to_string(prompt[i]) + " (at " + std::to_string(i) +
                             ") is outside the vocabulary of " + std::to_string(hp.vocab));
    check_fits(prompt.size(), o, hp);

    std::fprintf(stderr,
                 "model: %zu layers, width %zu, %zu/%zu heads, feed-forward %zu, vocabulary %zu, context %zu, on %s\n",
                 hp.layers, hp.width, hp.heads, hp.kv_heads, hp.ffn_width, hp.vocab, hp.context, device.id().c_str());
    Runner runner(o, file, tokenizer, device);
    if (!o.logits_file.empty()) runner.write_prompt_logits(prompt, o.logits_file);

    if (!o.prompt_tokens.empty()) {
        rayo::llm::Generation const g = runner.turn(prompt, false);
        std::printf("generated:");
        for (std::int32_t id : g.tokens) std::printf(" %d", id);
        std::printf("\n");
        if (tokenizer) std::printf("text: %s\n", rayo::gguf::printable(g.text, 4096).c_str());
    } else if (!conversation) {
        if (!chat) std::fwrite(o.text->data(), 1, o.text->size(), stdout);
        (void)runner.turn(prompt, true);
        std::printf("\n");
    } else {
        // A conversation: each line of stdin a user turn; the model's turn is closed before the next.
        bool const terminal = isatty(fileno(stdin)) != 0;
        bool first = true;
        for (std::string line;;) {
            if (terminal) std::fputs("> ", stderr);
            if (!std::getline(std::cin, line)) break;
            std::vector<rayo::llm::ChatMessage> turn = first ? first_turn : std::vector<rayo::llm::ChatMessage>{};
            turn.push_back({"user", line});
            std::string const text =
                (first ? std::string() : std::string(chat->end_of_assistant_turn())) + chat->apply(turn);
            std::vector<std::int32_t> const ids = tokenizer->encode(text, first, true);
            first = false;
            (void)runner.turn(ids, true);
            std::printf("\n");
        }
    }
    report(runner.totals(), runner, device);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(parse(argc, argv));
    } catch (ModelError const& e) {
        std::fprintf(stderr, "rayo-llama: %s\n", e.what());
        if (argc < 2) std::fputs(usage, stderr);
        return 2;
    } catch (rayo::Error const& e) {
        std::fprintf(stderr, "rayo-llama: %s\n", e.what());
        return 2;
    }
}

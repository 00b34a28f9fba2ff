// rayo::llm::ChatTemplate (rayo/llm/chat.hpp).
#include "rayo/llm/chat.hpp"

namespace rayo::llm {

ChatTemplate ChatTemplate::from_gguf(gguf::File const& file) { return from_metadata(file.metadata()); }

ChatTemplate ChatTemplate::from_metadata(gguf::Metadata const& metadata) {
    constexpr std::string_view key = "tokenizer.chat_template";
    gguf::Value const* value = metadata.find(key);
    if (!value) throw UnsupportedChatTemplate("the model file has no chat template (tokenizer.chat_template)");
    auto const* text = std::get_if<std::string>(value);
    if (!text) throw UnsupportedChatTemplate("tokenizer.chat_template is not a string");
    if (text->find("<|start_header_id|>") != std::string::npos && text->find("<|end_header_id|>") != std::string::npos)
        return ChatTemplate(Format::llama3);
    if (text->find("<|im_start|>") != std::string::npos) return ChatTemplate(Format::chatml);
    throw UnsupportedChatTemplate(
        "the model's chat template is not one rayo::llm writes (Llama 3, ChatML): it begins '" +
        gguf::printable(std::string_view(*text).substr(0, 80)) + "'");
}

std::string_view ChatTemplate::name() const noexcept { return format_ == Format::llama3 ? "llama3" : "chatml"; }

std::string ChatTemplate::apply(std::span<ChatMessage const> messages, bool add_assistant_header) const {
    std::string out;
    auto const turn = [&](std::string_view role, std::string_view content, bool closed) {
        if (format_ == Format::llama3) {
            out.append("<|start_header_id|>").append(role).append("<|end_header_id|>\n\n").append(content);
            if (closed) out.append("<|eot_id|>");
        } else {
            out.append("<|im_start|>").append(role).append("\n").append(content);
            if (closed) out.append("<|im_end|>\n");
        }
    };
    for (ChatMessage const& m : messages) {
        if (m.role != "system" && m.role != "user" && m.role != "assistant")
            throw Error("chat message role '" + gguf::printable(m.role) + "' is not system, user or assistant");
        turn(m.role, m.content, true);
    }
    if (add_assistant_header) turn("assistant", "", false);
    return out;
}

std::string_view ChatTemplate::end_of_assistant_turn() const noexcept {
    return format_ == Format::llama3 ? "<|eot_id|>" : "<|im_end|>\n";
}

}  // namespace rayo::llm

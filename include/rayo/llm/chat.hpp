// Conversations in a model's turn format (rayo::llm).
//
//   auto chat = rayo::llm::ChatTemplate::from_gguf(file);          // from tokenizer.chat_template
//   std::string prompt = chat.apply({{"system", "Be brief."}, {"user", "Hi!"}});
//   session.feed(tokenizer.encode(prompt, true, true));             // special tokens parsed
//
// A GGUF file carries its chat template as Jinja text (`tokenizer.chat_template`). rayo::llm does
// not run Jinja: it recognises the two formats most files use by their markers and writes turns
// in them itself:
//
// * Llama 3: <|start_header_id|>ROLE<|end_header_id|>\n\nTEXT<|eot_id|> (BOS comes from the tokenizer);
// * ChatML (Qwen 2 and 3, many fine-tunes): <|im_start|>ROLE\nTEXT<|im_end|>\n.
//
// Any other template is UnsupportedChatTemplate, naming its first characters.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rayo/error.hpp"
#include "rayo/export.hpp"
#include "rayo/gguf.hpp"

namespace rayo::llm {

class RAYO_API UnsupportedChatTemplate : public Error {
public:
    using Error::Error;
};

struct ChatMessage {
    std::string role;  // "system", "user" or "assistant"
    std::string content;
};

class RAYO_API ChatTemplate {
public:
    enum class Format { llama3, chatml };

    // The format of the file's `tokenizer.chat_template`: UnsupportedChatTemplate when the file has
    // none or one of another format.
    [[nodiscard]] static ChatTemplate from_gguf(gguf::File const& file);
    [[nodiscard]] static ChatTemplate from_metadata(gguf::Metadata const& metadata);
    explicit ChatTemplate(Format format) : format_(format) {}

    [[nodiscard]] Format format() const noexcept { return format_; }
    [[nodiscard]] std::string_view name() const noexcept;

    // The text of `messages`, each a turn, then the assistant's header when add_assistant_header
    // (what the model continues). rayo::Error naming a role other than system/user/assistant.
    [[nodiscard]] std::string apply(std::span<ChatMessage const> messages, bool add_assistant_header = true) const;
    [[nodiscard]] std::string apply(std::initializer_list<ChatMessage> messages,
                                    bool add_assistant_header = true) const {
        return apply(std::span(messages.begin(), messages.size()), add_assistant_header);
    }
    // What closes the assistant's turn once the model has stopped (its end-of-turn token, and the
    // newline ChatML writes after it): fed before the next user turn.
    [[nodiscard]] std::string_view end_of_assistant_turn() const noexcept;

private:
    Format format_;
};

}  // namespace rayo::llm

// rayo::llm, the language-model component: link rayo::llm (find_package(rayo COMPONENTS llm), or
// pkg-config rayo-llm) and include this header.
#pragma once

#include "rayo/llm/model.hpp"      // IWYU pragma: export
#include "rayo/llm/chat.hpp"       // IWYU pragma: export
#include "rayo/llm/sampler.hpp"    // IWYU pragma: export
#include "rayo/llm/session.hpp"    // IWYU pragma: export
#include "rayo/llm/tokenizer.hpp"  // IWYU pragma: export

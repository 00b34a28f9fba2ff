// A rayo::ProgressCallback that keeps one line on stderr up to date: "quantizing w: 42%". On a
// terminal the line is redrawn in place; otherwise it is printed once, when the work is done.
#pragma once

#include <rayo/progress.hpp>

#include <cstdint>
#include <cstdio>
#include <string>

#include <unistd.h>

namespace rayo_examples {

inline rayo::ProgressCallback progress_line(std::string what) {
    bool const terminal = isatty(fileno(stderr)) != 0;
    return [what = std::move(what), terminal, last = -1](std::uint64_t done, std::uint64_t total) mutable {
        int const percent = total ? static_cast<int>(done * 100 / total) : 100;
        if (percent == last || (!terminal && done != total)) return;
        last = percent;
        std::fprintf(stderr, "%s%s: %3d%%%s", terminal ? "\r" : "", what.c_str(), percent, done == total ? "\n" : "");
        std::fflush(stderr);
    };
}

}  // namespace rayo_examples

// rayo::set_kernel_dump_directory and RAYO_DUMP_KERNELS: where the backends write the kernels they load.
#include "core/kernel_dump.hpp"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <system_error>

#include "core/environment.hpp"
#include "core/printable.hpp"
#include "rayo/error.hpp"
#include "rayo/settings.hpp"

namespace rayo {

namespace {

struct DumpState {
    std::mutex mutex;
    std::string directory;
    bool created = false;  // the directory exists (made when set, or at the first dump)
};

// Never destroyed: kernels may load during static destruction.
DumpState& dump_state() {
    static DumpState* state = [] {
        auto* s = new DumpState;
        if (auto const env = detail::environment("RAYO_DUMP_KERNELS")) s->directory = std::string(*env);
        return s;
    }();
    return *state;
}

void create(std::string const& directory) {
    std::error_code error;
    std::filesystem::create_directories(directory, error);
    if (error || !std::filesystem::is_directory(directory))
        throw Error("kernel dump directory '" + detail::printable(directory, 200) +
                    "' cannot be created: " + (error ? error.message() : "a file of that name exists"));
}

}  // namespace

void set_kernel_dump_directory(std::string const& directory) {
    if (!directory.empty()) create(directory);
    auto& s = dump_state();
    std::lock_guard lock(s.mutex);
    s.directory = directory;
    s.created = !directory.empty();
}

std::string kernel_dump_directory() {
    auto& s = dump_state();
    std::lock_guard lock(s.mutex);
    return s.directory;
}

namespace detail {

void dump_kernel(std::string_view name, std::string_view extension, std::span<std::byte const> bytes) {
    auto& s = dump_state();
    std::lock_guard lock(s.mutex);
    if (s.directory.empty()) return;
    if (!s.created) {
        create(s.directory);
        s.created = true;
    }
    std::string file(name);
    for (char& c : file)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
    std::filesystem::path const path = std::filesystem::path(s.directory) / (file + std::string(extension));
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<char const*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) throw Error("kernel dump: cannot write '" + printable(path.string(), 200) + "'");
}

}  // namespace detail

}  // namespace rayo

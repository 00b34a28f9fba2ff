// Links rayo::llm: reads the hyper-parameters of a GGUF file that names another architecture and
// expects the component's ModelError (a rayo::Error) naming it.
#include <rayo/llm.hpp>

#include <cstdio>
#include <filesystem>
#include <string>

int main() {
    std::filesystem::path const path = std::filesystem::temp_directory_path() / "rayo_consumer_llm.gguf";
    rayo::gguf::Metadata metadata;
    metadata.set("general.architecture", "mamba");
    rayo::gguf::write(path, metadata, {});
    try {
        (void)rayo::llm::read_hyperparameters(rayo::gguf::File::open(path));
    } catch (rayo::Error const& e) {
        std::filesystem::remove(path);
        bool const named = std::string(e.what()).find("mamba") != std::string::npos;
        std::printf("rayo::llm: %s\n", e.what());
        return named ? 0 : 1;
    }
    std::filesystem::remove(path);
    return 1;
}

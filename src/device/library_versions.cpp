#include "device/library_versions.hpp"

#include <dlfcn.h>

#include <cctype>
#include <fstream>
#include <sstream>

namespace gputrain::device {

// The libraries stay loaded: the CUDA backend loads them again anyway, and
// unloading NCCL or cuDNN while their static state lives is not supported.
std::optional<int> read_cudnn_version(const char* soname) {
    void* lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!lib) return std::nullopt;
    using GetVersion = size_t (*)();
    auto get_version = reinterpret_cast<GetVersion>(dlsym(lib, "cudnnGetVersion"));
    if (!get_version) return std::nullopt;
    return static_cast<int>(get_version());
}

std::optional<int> read_nccl_version(const char* soname) {
    void* lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!lib) return std::nullopt;
    using GetVersion = int (*)(int*);
    auto get_version = reinterpret_cast<GetVersion>(dlsym(lib, "ncclGetVersion"));
    int version = 0;
    if (!get_version || get_version(&version) != 0) return std::nullopt;
    return version;
}

std::string read_nvrm_version(const char* path) {
    std::ifstream in(path);
    if (!in) return "";
    std::ostringstream text;
    text << in.rdbuf();
    return parse_nvrm_version(text.str());
}

std::string parse_nvrm_version(std::string_view text) {
    const auto marker = text.find("Kernel Module");
    if (marker == std::string_view::npos) return "";
    size_t pos = marker + std::string_view("Kernel Module").size();
    // Some builds say "Kernel Module for x86_64  550.54.15": the version is the
    // first word that starts with a digit.
    while (pos < text.size() && text[pos] != '\n') {
        while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t')) ++pos;
        size_t end = pos;
        while (end < text.size() && !std::isspace(static_cast<unsigned char>(text[end]))) ++end;
        if (end > pos && std::isdigit(static_cast<unsigned char>(text[pos]))) return std::string(text.substr(pos, end - pos));
        pos = end;
    }
    return "";
}

std::string format_library_version(int version) {
    const int major = version >= 10000 ? version / 10000 : version / 1000;
    const int minor = version >= 10000 ? version % 10000 / 100 : version % 1000 / 100;
    return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(version % 100);
}

std::string format_cuda_version(int version) {
    return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

}  // namespace gputrain::device

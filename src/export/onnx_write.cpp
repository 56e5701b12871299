// write_onnx: loads the ONNX module (onnx_module.cpp, libgputrain_onnx.so)
// beside the binary, or where it is installed, with RTLD_DEEPBIND so that it
// and the libprotobuf it brings resolve their symbols among themselves first
// (see onnx_module.cpp), and lets it write the file.
#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "export/onnx_graph.hpp"

#ifndef GPUTRAIN_MODULE_DIR
#define GPUTRAIN_MODULE_DIR "lib/gputrain"
#endif

namespace gputrain::exporter {

namespace {

namespace fs = std::filesystem;

using WriteFunction = int (*)(const OnnxGraph*, const char*, char*, size_t);

// The sanitizers' runtimes refuse RTLD_DEEPBIND (they must see every symbol).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

WriteFunction load_module() {
    if (kSanitized)
        throw Error("gputrain export: not in a sanitizer build (the ONNX module needs RTLD_DEEPBIND, which the "
                    "sanitizers refuse); use a release build");
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    const char* name = "libgputrain_onnx.so";
    std::vector<fs::path> candidates;
    if (!ec) {
        candidates.push_back(exe.parent_path() / name);                                  // the build folder
        candidates.push_back(exe.parent_path().parent_path() / GPUTRAIN_MODULE_DIR / name);  // installed
    }
    std::string tried, why;
    for (const fs::path& path : candidates) {
        if (!fs::exists(path, ec)) {
            tried += (tried.empty() ? "" : ", ") + path.string();
            continue;
        }
        void* module = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
        if (!module) {
            const char* e = ::dlerror();
            throw Error("gputrain export: cannot load the ONNX module " + path.string() + ": " +
                        (e ? e : "unknown error") + "; apt-get install libonnx1 libprotobuf32");
        }
        auto* write = reinterpret_cast<WriteFunction>(::dlsym(module, "gputrain_onnx_write"));
        if (!write) throw Error("gputrain export: " + path.string() + " is not gputrain's ONNX module; rebuild gputrain");
        return write;  // loaded for the rest of the process
    }
    throw Error("gputrain export: this gputrain has no ONNX module (looked for " + tried +
                "); install libonnx-dev and libprotobuf-dev (scripts/install-deps does) and rebuild "
                "(meson setup --reconfigure build -Donnx=enabled)");
}

}  // namespace

void write_onnx(const OnnxGraph& graph, const std::string& path) {
    static const WriteFunction write = load_module();
    char message[2048] = {};
    if (write(&graph, path.c_str(), message, sizeof message) != 0) throw Error(message);
}

}  // namespace gputrain::exporter

// The readers under fuzzing take a path: each input is written to one file per
// fuzzing process and read back from there.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace fuzz {

inline std::string write_input(const uint8_t* data, size_t size, const char* suffix) {
    static const std::string path =
        "/tmp/gputrain-fuzz-" + std::to_string(getpid()) + suffix;
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) std::abort();
    if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
    std::fclose(f);
    return path;
}

}  // namespace fuzz

// libFuzzer target: data::read_idx on arbitrary bytes (plain or gzip: zlib
// decides by content). DataError is the expected answer to bad input.
#include "core/error.hpp"
#include "data/idx_reader.hpp"
#include "fuzz_input_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = fuzz::write_input(data, size, ".idx");
    try {
        gputrain::data::read_idx(path);
    } catch (const gputrain::Error&) {
    }
    return 0;
}

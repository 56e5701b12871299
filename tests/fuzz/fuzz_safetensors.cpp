// libFuzzer target: checkpoint::load on arbitrary bytes. DataError is the
// expected answer to bad input.
#include "checkpoint/safetensors.hpp"
#include "core/error.hpp"
#include "fuzz_input_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = fuzz::write_input(data, size, ".safetensors");
    try {
        gputrain::checkpoint::load(path);
    } catch (const gputrain::Error&) {
    }
    return 0;
}

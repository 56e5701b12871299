// libFuzzer target: data::read_npy on arbitrary bytes. DataError is the
// expected answer to bad input.
#include "core/error.hpp"
#include "data/npy.hpp"
#include "fuzz_input_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = fuzz::write_input(data, size, ".npy");
    try {
        gputrain::data::read_npy(path);
    } catch (const gputrain::Error&) {
    }
    return 0;
}

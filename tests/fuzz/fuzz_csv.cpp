// libFuzzer target: data::read_csv on arbitrary bytes, with and without the
// optional label column of `predict`. DataError is the expected answer to bad input.
#include "core/error.hpp"
#include "data/csv_reader.hpp"
#include "fuzz_input_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = fuzz::write_input(data, size, ".csv");
    for (int64_t unlabeled : {0, 2}) {
        try {
            gputrain::data::read_csv(path, unlabeled);
        } catch (const gputrain::Error&) {
        }
    }
    return 0;
}

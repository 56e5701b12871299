// libFuzzer target: config::load_from_string on arbitrary text. A ConfigError is
// the expected answer to bad input; any other exception, crash or leak is a bug.
#include <cstdint>
#include <string>

#include "config/load.hpp"
#include "core/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string yaml(reinterpret_cast<const char*>(data), size);
    try {
        gputrain::config::load_from_string(yaml, "fuzz.yaml");
    } catch (const gputrain::Error&) {
    }
    return 0;
}

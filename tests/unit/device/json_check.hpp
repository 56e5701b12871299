// Checks JSON text with python3: it must parse, and the Python assertions
// (statements about `d`, the parsed value) must hold.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace gputrain::device::testing {

inline std::string write_temp(const std::string& text, const char* suffix) {
    std::string path = std::string("/tmp/gputrain_unit_device_XXXXXX") + suffix;
    const int fd = mkstemps(path.data(), static_cast<int>(std::string(suffix).size()));
    if (fd < 0) return "";
    close(fd);
    std::ofstream(path) << text;
    return path;
}

// True when python3 parses `json` and every assertion holds; python's
// traceback goes to stderr otherwise.
inline bool python_accepts(const std::string& json, const std::string& assertions) {
    const std::string data = write_temp(json, ".json");
    const std::string script =
        write_temp("import json, sys\nd = json.load(open(sys.argv[1]))\n" + assertions + "\n", ".py");
    const int status = std::system(("python3 " + script + " " + data).c_str());
    std::remove(data.c_str());
    std::remove(script.c_str());
    return status == 0;
}

}  // namespace gputrain::device::testing

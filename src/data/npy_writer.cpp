#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "core/error.hpp"
#include "data/npy.hpp"

namespace gputrain::data {

void write_npy_float32(const std::string& path, const std::vector<int64_t>& shape, const std::vector<float>& values) {
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
    for (size_t i = 0; i < shape.size(); ++i) header += (i ? ", " : "") + std::to_string(shape[i]);
    header += shape.size() == 1 ? ",), }" : "), }";
    // Version 1.0: the magic, version and length (10 bytes) plus the header are
    // padded with spaces to a multiple of 64 and end in a newline.
    const size_t total = (10 + header.size() + 1 + 63) / 64 * 64;
    header.append(total - 10 - header.size() - 1, ' ');
    header += '\n';

    std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
    if (!f) throw Error("cannot write '" + path + "': " + std::strerror(errno));
    const unsigned char prefix[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                                      static_cast<unsigned char>(header.size() & 0xff),
                                      static_cast<unsigned char>(header.size() >> 8)};
    // The values are written as they lie in memory: every target we build for is little-endian.
    const bool ok = std::fwrite(prefix, 1, sizeof prefix, f.get()) == sizeof prefix &&
                    std::fwrite(header.data(), 1, header.size(), f.get()) == header.size() &&
                    // (An empty array has no data pointer, which fwrite must not be given.)
                    (values.empty() || std::fwrite(values.data(), sizeof(float), values.size(), f.get()) == values.size());
    if (!ok || std::fclose(f.release()) != 0) throw Error("cannot write '" + path + "': " + std::strerror(errno));
}

}  // namespace gputrain::data

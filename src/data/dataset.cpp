#include "data/dataset.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/error.hpp"

namespace gputrain::data {

FileRows::FileRows(std::string file, int64_t data_offset) : path(std::move(file)), offset(data_offset) {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw DataError(path + ": cannot open (" + std::strerror(errno) + ")");
}

FileRows::~FileRows() {
    if (fd >= 0) ::close(fd);
}

void Dataset::read_rows(int64_t first, int64_t count, void* out) const {
    const size_t bytes = static_cast<size_t>(count) * row_bytes();
    if (count <= 0) return;
    if (type == SampleType::token) {  // windows overlap by their last id
        for (int64_t i = 0; i < count; ++i)
            std::memcpy(static_cast<char*>(out) + static_cast<size_t>(i) * row_bytes(), row(first + i), row_bytes());
        return;
    }
    if (!file) {
        std::memcpy(out, row(first), bytes);
        return;
    }
    auto* dst = static_cast<char*>(out);
    off_t at = static_cast<off_t>(file->offset + (file_first + first) * static_cast<int64_t>(row_bytes()));
    for (size_t done = 0; done < bytes;) {
        const ssize_t got = ::pread(file->fd, dst + done, bytes - done, at + static_cast<off_t>(done));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0)
            throw DataError(file->path + ": " + (got < 0 ? std::string("read failed (") + std::strerror(errno) + ")"
                                                         : std::string("ends early: it was truncated while in use")));
        done += static_cast<size_t>(got);
    }
}

int channels_of(const Shape& shape) { return shape.size() == 3 ? static_cast<int>(shape[2]) : 1; }

namespace {

double normalized(double v, const std::vector<double>& mean, const std::vector<double>& std, int c) {
    if (mean.empty()) return v;
    const size_t i = mean.size() == 1 ? 0 : static_cast<size_t>(c);  // one value for every channel
    return (v - mean[i]) / std[i];
}

}  // namespace

void make_table(Dataset& d, double scale, const std::vector<double>& mean, const std::vector<double>& std) {
    d.channels = channels_of(d.sample_shape);
    d.table.clear();
    if (d.type == SampleType::token) return;  // ids are read as they are
    for (int c = 0; c < d.channels; ++c) {
        if (d.type == SampleType::f32) {
            d.table.push_back(static_cast<float>(normalized(0.0, mean, std, c)));
            continue;
        }
        for (int v = 0; v < 256; ++v) d.table.push_back(static_cast<float>(normalized(v * scale, mean, std, c)));
    }
}

void normalize_floats(Dataset& d, const std::vector<double>& mean, const std::vector<double>& std) {
    if (mean.empty()) return;
    const size_t channels = static_cast<size_t>(channels_of(d.sample_shape));
    for (size_t i = 0; i < d.inputs.size(); ++i)
        d.inputs[i] = static_cast<float>(normalized(d.inputs[i], mean, std, static_cast<int>(i % channels)));
}

std::vector<float> model_inputs(const Dataset& d, int64_t begin, int64_t end) {
    const size_t n = static_cast<size_t>(d.sample_elements());
    std::vector<float> out(static_cast<size_t>(end - begin) * n);
    if (d.type == SampleType::token) {
        d.tokens->visit([&](auto ids) {
            for (int64_t i = begin; i < end; ++i) {
                const size_t first = static_cast<size_t>(d.window_start(i));
                for (size_t t = 0; t < n; ++t) out[static_cast<size_t>(i - begin) * n + t] = static_cast<float>(ids[first + t]);
            }
        });
        return out;
    }
    if (d.type == SampleType::f32) {
        if (!out.empty() && d.streamed()) d.read_rows(begin, end - begin, out.data());
        else if (!out.empty()) std::memcpy(out.data(), d.inputs.data() + static_cast<size_t>(begin) * n, out.size() * sizeof(float));
        return out;
    }
    const size_t channels = static_cast<size_t>(std::max(1, d.channels));
    std::vector<uint8_t> read;
    if (d.streamed()) {
        read.resize(out.size());
        d.read_rows(begin, end - begin, read.data());
    }
    const uint8_t* bytes = d.streamed() ? read.data() : d.pixels.data() + static_cast<size_t>(begin) * n;
    for (size_t i = 0; i < out.size(); ++i) out[i] = d.table[(i % channels) * 256 + bytes[i]];
    return out;
}

std::vector<int32_t> sample_labels(const Dataset& d, int64_t begin, int64_t end) {
    const size_t width = static_cast<size_t>(d.label_width);
    if (d.type != SampleType::token)
        return std::vector<int32_t>(d.labels.begin() + static_cast<ptrdiff_t>(static_cast<size_t>(begin) * width),
                                    d.labels.begin() + static_cast<ptrdiff_t>(static_cast<size_t>(end) * width));
    std::vector<int32_t> out(static_cast<size_t>(end - begin) * width);
    d.tokens->visit([&](auto ids) {
        for (int64_t i = begin; i < end; ++i) {
            const size_t first = static_cast<size_t>(d.window_start(i)) + 1;
            for (size_t t = 0; t < width; ++t)
                out[static_cast<size_t>(i - begin) * width + t] = static_cast<int32_t>(ids[first + t]);
        }
    });
    return out;
}

}  // namespace gputrain::data

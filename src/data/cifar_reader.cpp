#include "data/cifar_reader.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "core/error.hpp"

namespace gputrain::data {

namespace {

constexpr int64_t kSide = 32, kPixels = kSide * kSide, kImageBytes = 3 * kPixels;

int label_bytes(CifarKind kind) { return kind == CifarKind::cifar10 ? 1 : 2; }
int64_t record_bytes(CifarKind kind) { return label_bytes(kind) + kImageBytes; }
const char* kind_name(CifarKind kind) { return kind == CifarKind::cifar10 ? "CIFAR-10" : "CIFAR-100"; }
const char* archive_folder(CifarKind kind) {
    return kind == CifarKind::cifar10 ? "cifar-10-batches-bin" : "cifar-100-binary";
}

std::vector<std::string> names(CifarKind kind, bool train) {
    if (kind == CifarKind::cifar100) return {train ? "train.bin" : "test.bin"};
    if (!train) return {"test_batch.bin"};
    std::vector<std::string> out;
    for (int i = 1; i <= 5; ++i) out.push_back("data_batch_" + std::to_string(i) + ".bin");
    return out;
}

// `dir` itself, or the archive's folder inside it when that holds the files.
std::filesystem::path files_dir(const std::string& dir, CifarKind kind) {
    std::error_code ec;
    const std::filesystem::path inner = std::filesystem::path(dir) / archive_folder(kind);
    if (std::filesystem::is_regular_file(inner / names(kind, true)[0], ec)) return inner;
    return dir;
}

}  // namespace

bool holds_cifar(const std::string& dir, CifarKind kind) {
    std::error_code ec;
    return std::filesystem::is_regular_file(files_dir(dir, kind) / names(kind, true)[0], ec);
}

std::vector<std::string> cifar_files(const std::string& dir, CifarKind kind, bool train) {
    const std::filesystem::path base = files_dir(dir, kind);
    std::vector<std::string> out;
    for (const std::string& name : names(kind, train)) {
        const std::filesystem::path path = base / name;
        std::error_code ec;
        if (!std::filesystem::is_regular_file(path, ec))
            throw DataError(fmt::format("{}: no {} found ({} binary version: run datasets/fetch-{} or put the "
                                        "archive's {} folder there; see datasets/README.md)",
                                        base.string(), name, kind_name(kind),
                                        kind == CifarKind::cifar10 ? "cifar10" : "cifar100", archive_folder(kind)));
        out.push_back(path.string());
    }
    return out;
}

Dataset read_cifar(const std::vector<std::string>& files, CifarKind kind, const RowChooser& rows) {
    const int64_t record = record_bytes(kind);
    // Every file's size first: the rows are chosen over all of them.
    std::vector<int64_t> counts;
    int64_t total = 0;
    for (const std::string& path : files) {
        std::error_code ec;
        const auto size = static_cast<int64_t>(std::filesystem::file_size(path, ec));
        if (ec) throw DataError(path + ": cannot read its size (" + ec.message() + ")");
        if (size == 0) throw DataError(path + ": empty; expected " + kind_name(kind) + " binary records");
        if (size % record != 0)
            throw DataError(fmt::format("{}: {} bytes is not a whole number of {}-byte {} records ({} label byte{} and "
                                        "3072 pixel bytes each); the file is truncated or not the binary version",
                                        path, size, record, kind_name(kind), label_bytes(kind),
                                        label_bytes(kind) == 1 ? "" : "s"));
        counts.push_back(size / record);
        total += size / record;
    }
    const RowRange keep = rows ? rows(total) : RowRange{0, total};
    Dataset d;
    d.sample_shape = {kSide, kSide, 3};
    d.type = SampleType::u8;
    d.pixels.resize(static_cast<size_t>((keep.end - keep.begin) * kImageBytes));
    d.labels.resize(static_cast<size_t>(keep.end - keep.begin));
    const int classes = kind == CifarKind::cifar10 ? 10 : 100;
    std::vector<uint8_t> buffer(static_cast<size_t>(record));
    int64_t first = 0;  // the file's first row in the sequence
    for (size_t f = 0; f < files.size(); ++f) {
        const int64_t begin = std::max(keep.begin, first), end = std::min(keep.end, first + counts[f]);
        if (begin < end) {
            std::ifstream in(files[f], std::ios::binary);
            in.seekg((begin - first) * record);
            for (int64_t row = begin; row < end; ++row) {
                if (!in.read(reinterpret_cast<char*>(buffer.data()), record))
                    throw DataError(files[f] + ": read failed at record " + std::to_string(row - first));
                const int label = buffer[static_cast<size_t>(label_bytes(kind) - 1)];  // CIFAR-100: the fine label
                if (label >= classes)
                    throw DataError(fmt::format("{}: record {} has label {}, not a {} class (0-{}); the file is not "
                                                "{} binary",
                                                files[f], row - first, label, kind_name(kind), classes - 1,
                                                kind_name(kind)));
                const int64_t out_row = row - keep.begin;
                d.labels[static_cast<size_t>(out_row)] = label;
                const uint8_t* planes = buffer.data() + label_bytes(kind);
                uint8_t* image = d.pixels.data() + out_row * kImageBytes;
                for (int64_t p = 0; p < kPixels; ++p)
                    for (int64_t c = 0; c < 3; ++c) image[p * 3 + c] = planes[c * kPixels + p];
            }
        }
        first += counts[f];
    }
    d.num_classes = classes;
    return d;
}

}  // namespace gputrain::data

// IdxReader: the IDX format of MNIST-style data sets (LeCun's layout): a 4-byte
// magic (0x00 0x00 TYPE NDIMS), NDIMS big-endian u32 dimensions, then the
// values row-major. Only TYPE 0x08 (unsigned byte) is accepted.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/row_range.hpp"

namespace gputrain::data {

struct IdxArray {
    std::vector<int64_t> dims;   // e.g. {60000, 28, 28}; dims[0] = the samples kept
    std::vector<uint8_t> bytes;  // product of dims values
    int64_t first_row = 0;       // the kept samples are [first_row, first_row + dims[0]) of the file
    int64_t file_rows = 0;       // the file's own dims[0]
};

// Reads `path`, plain or gzip-compressed (zlib tells them apart by content).
// Throws DataError "PATH: problem" for a missing or unreadable file, bad magic,
// a type other than unsigned byte, truncated data, trailing bytes, damaged gzip.
// With `choose`, keeps only the samples (first dimension) it returns: the others
// are streamed past without being stored (gzip: decompressed and discarded), and
// the whole file is still checked for truncation and trailing bytes.
IdxArray read_idx(const std::string& path, const RowChooser& choose = nullptr);

// `dir`/`base` if it exists, else `dir`/`base`.gz if that exists, else "".
std::string find_idx_file(const std::string& dir, const std::string& base);

}  // namespace gputrain::data

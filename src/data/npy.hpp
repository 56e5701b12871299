// NPY: NumPy's .npy array files (format versions 1.0, 2.0 and 3.0): the magic
// "\x93NUMPY", a version, a little-endian header length, a Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (N, ...)} padded with spaces,
// then the values. Read: float32, float64 and integer arrays (8 to 64 bits,
// signed or not) in C order, converted to float (uint8 optionally kept as
// bytes). Written: float32 arrays (what `gputrain predict` outputs).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gputrain::data {

struct NpyArray {
    std::vector<int64_t> shape;  // as in the header; () for a scalar
    std::string dtype;           // "float32", "float64", "uint8", "int64", ...
    std::vector<float> values;   // product of shape, row-major (empty when `bytes` holds them)
    std::vector<uint8_t> bytes;  // a uint8 array read with keep_bytes
};

// Throws DataError "PATH: problem" for a missing file, a bad magic, an unknown
// version, a damaged header, an unsupported dtype, Fortran order, truncated
// data or trailing bytes.
// `keep_bytes`: a uint8 array is returned in `bytes`, not converted.
NpyArray read_npy(const std::string& path, bool keep_bytes = false);
// The same from the bytes of an NPY file; `path` names it in errors
// ("ARCHIVE.npz:x_train.npy" for an array of an NPZ archive).
NpyArray parse_npy(const std::string& path, const std::vector<char>& bytes, bool keep_bytes = false);

// The header of `path` alone (shape and dtype; `values` empty), with where
// its data start: for data.stream, which reads the rows later.
NpyArray read_npy_header(const std::string& path, int64_t& data_offset);

// NPZ: a ZIP archive of NPY files (np.savez stores them, np.savez_compressed
// deflates them). The array `name` (the member NAME.npy) of `path`.
// DataError naming the archive for a damaged ZIP, a member that is missing
// (listing the ones there), ZIP64 or another compression method.
NpyArray read_npz_array(const std::string& path, const std::string& name, bool keep_bytes = false);

// Writes a float32 C-order array (version 1.0 header). Throws Error when the
// file cannot be written.
void write_npy_float32(const std::string& path, const std::vector<int64_t>& shape, const std::vector<float>& values);

}  // namespace gputrain::data

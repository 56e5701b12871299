// NPY: NumPy's .npy array files (format versions 1.0, 2.0 and 3.0): the magic
// "\x93NUMPY", a version, a little-endian header length, a Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (N, ...)} padded with spaces,
// then the values. Read: float32, float64 and uint8 arrays in C order, converted
// to float. Written: float32 arrays (what `gputrain predict` outputs).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gputrain::data {

struct NpyArray {
    std::vector<int64_t> shape;  // as in the header; () for a scalar
    std::string dtype;           // "float32", "float64" or "uint8"
    std::vector<float> values;   // product of shape, row-major
};

// Throws DataError "PATH: problem" for a missing file, a bad magic, an unknown
// version, a damaged header, an unsupported dtype, Fortran order, truncated
// data or trailing bytes.
NpyArray read_npy(const std::string& path);

// Writes a float32 C-order array (version 1.0 header). Throws Error when the
// file cannot be written.
void write_npy_float32(const std::string& path, const std::vector<int64_t>& shape, const std::vector<float>& values);

}  // namespace gputrain::data

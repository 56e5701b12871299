// safetensors read/write: little-endian u64 header length, JSON header
// {"name": {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, ...,
//  "__metadata__": {"key": "string", ...}}, then the raw tensor bytes.
// Any safetensors reader (Python's safetensors, PyTorch) opens our files.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace gputrain::checkpoint {

// A tensor to write: a view, not owned.
struct TensorRef {
    std::string name;
    std::vector<int64_t> shape;
    const float* data = nullptr;   // shape-product floats (F32)
};

// A tensor read back (owned). Only F32 is supported; other dtypes are a DataError.
struct Tensor {
    std::string name;
    std::vector<int64_t> shape;
    std::vector<float> data;
};

struct Contents {
    std::vector<Tensor> tensors;                   // in file order
    std::map<std::string, std::string> metadata;   // __metadata__ (string -> string)
    const Tensor* find(const std::string& name) const;
};

// Writes `path` atomically: to "path.tmp-PID", fsync, rename over `path`, fsync the folder.
// A failure leaves no file under `path` other than any previous complete one, and no temp file.
// Throws Error naming the path and the OS error.
void save(const std::string& path, const std::vector<TensorRef>& tensors,
          const std::map<std::string, std::string>& metadata);

// Reads and validates (header length within the file, JSON well formed, dtype F32,
// offsets contiguous, in range and matching the shape). Throws DataError
// "PATH: problem" naming the tensor where one is at fault. With `wanted`, only
// the tensors it accepts by name are read (the others are validated all the
// same, and left out of `tensors`).
Contents load(const std::string& path, const std::function<bool(const std::string&)>& wanted = {});

}  // namespace gputrain::checkpoint

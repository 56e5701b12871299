// RowRange: which samples of a data file a reader keeps (data.shard_files:
// each worker keeps only its part). The chooser is called with the number of
// samples the file holds, once the reader knows it, and returns the range.
#pragma once

#include <cstdint>
#include <functional>

namespace gputrain::data {

struct RowRange {
    int64_t begin = 0;
    int64_t end = 0;  // exclusive
};

// Given the file's sample count, the samples to keep (begin <= end <= count).
// An empty chooser keeps them all.
using RowChooser = std::function<RowRange(int64_t file_rows)>;

// Part `index` of `count` nearly equal, consecutive parts of `n` samples:
// [n * index / count, n * (index + 1) / count).
inline RowRange part_of(int64_t n, int index, int count) {
    return {n * index / count, n * (index + 1) / count};
}

}  // namespace gputrain::data

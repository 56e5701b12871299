// CIFAR-10 and CIFAR-100 in their binary layout (cifar-10-batches-bin,
// cifar-100-binary): records of label byte(s) then 3072 pixel bytes, the red,
// green and blue 32x32 planes one after another (CHW), turned into NHWC images
// of shape [32, 32, 3], kept as bytes.
#pragma once

#include <string>
#include <vector>

#include "data/dataset.hpp"
#include "data/row_range.hpp"

namespace gputrain::data {

enum class CifarKind { cifar10, cifar100 };

// The files of a split in `dir`: CIFAR-10's data_batch_1..5.bin (train) or
// test_batch.bin, CIFAR-100's train.bin or test.bin. A `dir` that holds the
// archive's own folder (cifar-10-batches-bin, cifar-100-binary) is looked into.
// DataError naming the folder and how to get the files when one is missing.
std::vector<std::string> cifar_files(const std::string& dir, CifarKind kind, bool train);

// Whether `dir` (or the archive's folder in it) holds the split's first file.
bool holds_cifar(const std::string& dir, CifarKind kind);

// Reads the records of `files` as one sequence (rows chosen by `rows` over all
// of them, read without the others). CIFAR-100's label is the fine one (100
// classes). DataError naming the file for a size that is not whole records,
// or a label beyond the classes.
Dataset read_cifar(const std::vector<std::string>& files, CifarKind kind, const RowChooser& rows = nullptr);

}  // namespace gputrain::data

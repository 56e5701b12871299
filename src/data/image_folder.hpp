// Image folders (format: image_folder): one subfolder per class, as Keras'
// image_dataset_from_directory and torchvision's ImageFolder read them; the
// classes are the subfolders' names in sorted order. PNG and JPEG images are
// decoded once into a cache file of bytes (data.cache_dir), which later runs
// read instead while the folder is unchanged.
#pragma once

#include <string>
#include <vector>

#include "data/dataset.hpp"
#include "data/row_range.hpp"

namespace gputrain::data {

struct ImageFolderOptions {
    int height = 0, width = 0, channels = 0;  // model.input_shape [H, W, C] or [H, W]
    bool crop_to_aspect_ratio = false;        // data.crop_to_aspect_ratio
    bool skip_bad_files = false;              // data.skip_bad_files
    std::string cache_dir;                    // data.cache_dir ("" = the default, below)
    bool stream = false;                      // data.stream: the images stay in the cache file
    // data.stream: auto: stream when the images take more than this many bytes (0: never).
    size_t stream_above = 0;
};

// The folder of class subfolders for `split` ("train" or "test") of
// data.path DIR: DIR/train and DIR/test when DIR has a train folder, else DIR
// itself for training and no test set ("").
std::string image_split_dir(const std::string& dir, const std::string& split);

// The class names of a folder: its subfolders, sorted.
std::vector<std::string> image_classes(const std::string& dir);

// Where caches go when data.cache_dir is not set: $GPUTRAIN_CACHE, else
// $XDG_CACHE_HOME/gputrain, else ~/.cache/gputrain.
std::string default_cache_dir();

// Reads the images of `dir` (its class subfolders; `classes`, when not empty,
// are the training set's: a test folder's classes must be among them).
// Bytes of shape [H, W, C]; rows chosen by `rows` after sorting by class then
// file name. DataError naming the file for a bad image (or a count of the
// skipped ones with skip_bad_files), the folder for an empty class folder or
// no images at all.
Dataset read_image_folder(const std::string& dir, const ImageFolderOptions& options,
                          const std::vector<std::string>& classes, std::vector<std::string>* found_classes,
                          const RowChooser& rows = nullptr);

}  // namespace gputrain::data

// Where a named data set lives: data.dataset NAME is looked up in
// $GPUTRAIN_DATA/NAME, ./datasets/NAME and /usr/share/datasets/NAME, in that
// order (a user's copy first, then the project's, then a system package's).
#pragma once

#include <string>
#include <vector>

#include "config/run_config.hpp"

namespace gputrain::data {

// The folders searched for NAME, in order ($GPUTRAIN_DATA/NAME only when the variable is set).
std::vector<std::string> dataset_search_dirs(const std::string& name);

// The file whose presence marks a folder as holding the data of `format`:
// "train-images-idx3-ubyte" (plain or .gz) for idx, "train.csv" for csv.
std::string format_marker_file(config::DataFormat format);

// The first search folder holding the format's marker file. Throws DataError
// listing the folders tried and how to get the data set (per NAME).
std::string resolve_dataset_dir(const std::string& name, config::DataFormat format);

// The DataError text of resolve_dataset_dir when no folder holds NAME: the folders
// tried (naming $GPUTRAIN_DATA when it is unset) and how to get this data set.
std::string dataset_not_found_message(const std::string& name, config::DataFormat format);

// Checks that data.path `dir` holds the format's marker file; returns `dir`.
// Throws DataError "data.path: DIR: ..." otherwise.
std::string check_data_path(const std::string& dir, config::DataFormat format);

}  // namespace gputrain::data

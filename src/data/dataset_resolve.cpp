#include "data/dataset_resolve.hpp"

#include <cstdlib>
#include <filesystem>
#include <optional>

#include "core/error.hpp"
#include "core/suggest.hpp"
#include "data/cifar_reader.hpp"
#include "data/idx_reader.hpp"

namespace gputrain::data {

using config::DataFormat;

namespace {

std::optional<CifarKind> cifar_kind(DataFormat format) {
    if (format == DataFormat::cifar10) return CifarKind::cifar10;
    if (format == DataFormat::cifar100) return CifarKind::cifar100;
    return std::nullopt;
}

bool holds_marker(const std::string& dir, DataFormat format) {
    if (format == DataFormat::text) {
        std::error_code ec;
        for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
            if (entry.path().extension() == ".txt") return true;
        return false;
    }
    if (format == DataFormat::npz) {
        std::error_code ec;
        return std::filesystem::is_regular_file(dir, ec);
    }
    if (const auto kind = cifar_kind(format)) return holds_cifar(dir, *kind);
    if (format == DataFormat::image_folder) {  // class folders, or a train folder of them
        std::error_code ec;
        if (!std::filesystem::is_directory(dir, ec)) return false;
        for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
            if (entry.is_directory(ec)) return true;
        return false;
    }
    if (format == DataFormat::csv || format == DataFormat::npy) {
        std::error_code ec;
        return std::filesystem::is_regular_file(
            std::filesystem::path(dir) / (format == DataFormat::csv ? "train.csv" : "x_train.npy"), ec);
    }
    return !find_idx_file(dir, format_marker_file(format)).empty();
}

std::string marker_description(DataFormat format) {
    if (format == DataFormat::text) return "a .txt file";
    if (format == DataFormat::npy) return "x_train.npy";
    if (format == DataFormat::image_folder) return "class folders (or a train folder of them)";
    if (format == DataFormat::cifar10) return "data_batch_1.bin (CIFAR-10 binary)";
    if (format == DataFormat::cifar100) return "train.bin (CIFAR-100 binary)";
    return format == DataFormat::csv ? "train.csv" : format_marker_file(format) + "(.gz)";
}

std::string how_to_get(const std::string& name, DataFormat format) {
    if (format == DataFormat::text && name == "shakespeare") return "run datasets/fetch-shakespeare";
    if (format == DataFormat::text) return "put .txt files there or set data.path to a text file";
    if (format == DataFormat::npy)
        return "put x_train.npy, y_train.npy, x_test.npy and y_test.npy there (np.save) or set data.path";
    if (format == DataFormat::image_folder)
        return "put one folder of images per class there (or train/ and test/ folders of them), or set data.path";
    if (format == DataFormat::cifar10)
        return "download it with 'datasets/fetch-cifar10' (into ./datasets/cifar10) or set data.path";
    if (format == DataFormat::cifar100)
        return "download it with 'datasets/fetch-cifar100' (into ./datasets/cifar100) or set data.path";
    if (format == DataFormat::idx && name == "fashion-mnist") {
        return "install it with 'apt-get install dataset-fashion-mnist' (or run datasets/fetch-mnist for mnist)";
    }
    if (format == DataFormat::idx && name == "mnist")
        return "download it with 'datasets/fetch-mnist' (into ./datasets/mnist)";
    if (format == DataFormat::csv && name == "diabetes")
        return "make it with 'datasets/make-diabetes' (from python3-sklearn's copy, into ./datasets/diabetes)";
    if (format == DataFormat::csv) return "put train.csv and test.csv there or set data.path (see datasets/README.md)";
    return "put train-images-idx3-ubyte.gz and the other IDX files there or set data.path "
           "(see datasets/README.md)";
}

}  // namespace

std::vector<std::string> dataset_search_dirs(const std::string& name) {
    std::vector<std::string> dirs;
    if (const char* root = std::getenv("GPUTRAIN_DATA"); root && *root) {
        dirs.push_back((std::filesystem::path(root) / name).string());
    }
    dirs.push_back("./datasets/" + name);
    dirs.push_back("/usr/share/datasets/" + name);
    return dirs;
}

std::string format_marker_file(DataFormat format) {
    return format == DataFormat::csv ? "train.csv" : "train-images-idx3-ubyte";
}

std::string resolve_dataset_dir(const std::string& name, DataFormat format) {
    for (const std::string& dir : dataset_search_dirs(name)) {
        if (holds_marker(dir, format)) return dir;
    }
    throw DataError(dataset_not_found_message(name, format));
}

std::string dataset_not_found_message(const std::string& name, DataFormat format) {
    // Name the variable when it is unset, so the message also says how to point elsewhere.
    std::string tried;
    const char* root = std::getenv("GPUTRAIN_DATA");
    if (!root || !*root) tried = "$GPUTRAIN_DATA/" + name + ", ";
    for (const std::string& dir : dataset_search_dirs(name)) tried += dir + ", ";
    tried.resize(tried.size() - 2);
    // A mistyped GPUTRAIN_DATA is the likely cause when the variable is set.
    std::error_code ec;
    if (root && *root && !std::filesystem::is_directory(root, ec))
        tried += " (GPUTRAIN_DATA=" + std::string(root) + " is not a directory)";
    // Another name that is there (fashion_mnist for fashion-mnist), or a
    // name gputrain knows how to get.
    std::vector<std::string> present{"fashion-mnist", "mnist", "cifar10", "cifar100"};
    for (const std::string& dir : dataset_search_dirs(name)) {
        const std::filesystem::path parent = std::filesystem::path(dir).parent_path();
        for (const auto& entry : std::filesystem::directory_iterator(parent, ec))
            if (entry.is_directory(ec) && holds_marker(entry.path().string(), format))
                present.push_back(entry.path().filename().string());
    }
    const std::string meant = closest_name(name, present);
    if (!meant.empty() && meant != name)
        return "data.dataset: '" + name + "' not found in " + tried + " (did you mean '" + meant + "'?)";
    return "data.dataset: '" + name + "' not found in " + tried + "; " + how_to_get(name, format);
}

std::string check_data_path(const std::string& dir, DataFormat format) {
    std::error_code ec;
    if (format == DataFormat::npz) {  // data.path is the archive itself
        if (!std::filesystem::is_regular_file(dir, ec))
            throw DataError("data.path: " + dir + ": no such file (format npz: data.path is an .npz archive with the "
                            "arrays x_train, y_train, x_test and y_test, as Keras' mnist.npz)");
        return dir;
    }
    if (!std::filesystem::is_directory(dir, ec)) {
        if (std::filesystem::is_regular_file(dir, ec) && dir.ends_with(".npz"))
            throw DataError("data.path: " + dir + ": a file, and data.format is " + name_of(format) +
                            "; add data.format: npz to read an .npz archive");
        throw DataError("data.path: " + dir + ": no such directory");
    }
    if (!holds_marker(dir, format)) {
        if (format == DataFormat::cifar10 || format == DataFormat::cifar100)
            throw DataError("data.path: " + dir + ": no " + marker_description(format) + " found there or in its " +
                            (format == DataFormat::cifar10 ? "cifar-10-batches-bin" : "cifar-100-binary") +
                            " folder; " + how_to_get("", format) + " (see datasets/README.md)");
        if (format == DataFormat::npy)
            throw DataError("data.path: " + dir + ": no x_train.npy found; " + how_to_get("", format) +
                            " (see datasets/README.md)");
        if (format == DataFormat::image_folder)
            throw DataError("data.path: " + dir + ": no class folders found; " + how_to_get("", format) +
                            " (see datasets/README.md)");
        throw DataError("data.path: " + dir + ": no " + marker_description(format) + " found; " +
                        (format == DataFormat::csv ? "put train.csv and test.csv there"
                                         : "put the IDX files there, install dataset-fashion-mnist or run "
                                           "datasets/fetch-mnist") +
                        " (see datasets/README.md)");
    }
    return dir;
}

}  // namespace gputrain::data

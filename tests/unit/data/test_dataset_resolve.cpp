#include <catch2/catch.hpp>

#include <cstdlib>

#include "core/error.hpp"
#include "data/dataset_resolve.hpp"
#include "data_test_files.hpp"

using namespace gputrain;
using namespace gputrain::data;
using gputrain::config::DataFormat;
using namespace data_test;

namespace {

// Runs the test from `dir` (for ./datasets) with $GPUTRAIN_DATA set or unset, restoring both.
class Environment {
public:
    Environment(const fs::path& cwd, const char* data_root) : old_cwd_(fs::current_path()) {
        if (const char* old = std::getenv("GPUTRAIN_DATA")) old_root_ = old, had_root_ = true;
        fs::current_path(cwd);
        if (data_root) {
            setenv("GPUTRAIN_DATA", data_root, 1);
        } else {
            unsetenv("GPUTRAIN_DATA");
        }
    }
    ~Environment() {
        fs::current_path(old_cwd_);
        if (had_root_) {
            setenv("GPUTRAIN_DATA", old_root_.c_str(), 1);
        } else {
            unsetenv("GPUTRAIN_DATA");
        }
    }

private:
    fs::path old_cwd_;
    std::string old_root_;
    bool had_root_ = false;
};

void make_idx_folder(const fs::path& dir) {
    fs::create_directories(dir);
    write_idx((dir / "train-images-idx3-ubyte.gz").string(), {1, 1, 1}, {0});
}

}  // namespace

TEST_CASE("resolve_dataset_dir tries $GPUTRAIN_DATA, ./datasets, /usr/share/datasets in order") {
    TempDir root;
    const fs::path env_dir = root.path() / "env";
    const fs::path work = root.path() / "work";
    fs::create_directories(work);
    Environment env(work, env_dir.c_str());

    REQUIRE(dataset_search_dirs("toy") ==
            std::vector<std::string>{(env_dir / "toy").string(), "./datasets/toy", "/usr/share/datasets/toy"});

    // A folder without the marker file does not count.
    fs::create_directories(env_dir / "toy");
    make_idx_folder(work / "datasets" / "toy");
    REQUIRE(resolve_dataset_dir("toy", DataFormat::idx) == "./datasets/toy");
    make_idx_folder(env_dir / "toy");
    REQUIRE(resolve_dataset_dir("toy", DataFormat::idx) == (env_dir / "toy").string());

    // CSV folders are marked by train.csv.
    write_text((work / "datasets" / "toy" / "train.csv").string(), "0,1\n");
    REQUIRE(resolve_dataset_dir("toy", DataFormat::csv) == "./datasets/toy");
}

TEST_CASE("resolve_dataset_dir says where it looked and how to get the data set") {
    TempDir root;
    SECTION("$GPUTRAIN_DATA unset: the message names the variable") {
        Environment env(root.path(), nullptr);
        try {
            resolve_dataset_dir("no-such-set", DataFormat::idx);
            FAIL("no error");
        } catch (const DataError& e) {
            REQUIRE(std::string(e.what()) ==
                    "data.dataset: 'no-such-set' not found in $GPUTRAIN_DATA/no-such-set, ./datasets/no-such-set, "
                    "/usr/share/datasets/no-such-set; put train-images-idx3-ubyte.gz and the other IDX files there "
                    "or set data.path (see datasets/README.md)");
        }
        REQUIRE_THROWS_WITH(resolve_dataset_dir("mnist", DataFormat::idx),
                            Catch::EndsWith("; download it with 'datasets/fetch-mnist' (into ./datasets/mnist)"));
        REQUIRE_THROWS_WITH(resolve_dataset_dir("toy", DataFormat::csv),
                            Catch::EndsWith("; put train.csv and test.csv there or set data.path (see datasets/README.md)"));
    }
    SECTION("$GPUTRAIN_DATA set: the message names its folder; fashion-mnist's hint is the package") {
        const std::string env_root = (root.path() / "env").string();
        Environment env(root.path(), env_root.c_str());
        // Tested on the message itself: the data set may well be installed on this machine.
        // The folder does not exist: the message says so, a mistyped variable being the likely cause.
        REQUIRE(dataset_not_found_message("fashion-mnist", DataFormat::idx) ==
                            "data.dataset: 'fashion-mnist' not found in " + env_root + "/fashion-mnist, "
                            "./datasets/fashion-mnist, /usr/share/datasets/fashion-mnist (GPUTRAIN_DATA=" + env_root +
                            " is not a directory); install it with "
                            "'apt-get install dataset-fashion-mnist' (or run datasets/fetch-mnist for mnist)");
        REQUIRE_THROWS_WITH(resolve_dataset_dir("no-such-set", DataFormat::idx),
                            dataset_not_found_message("no-such-set", DataFormat::idx));
        fs::create_directories(env_root);
        REQUIRE(dataset_not_found_message("no-such-set", DataFormat::idx) ==
                "data.dataset: 'no-such-set' not found in " + env_root + "/no-such-set, ./datasets/no-such-set, "
                "/usr/share/datasets/no-such-set; put train-images-idx3-ubyte.gz and the other IDX files there "
                "or set data.path (see datasets/README.md)");
    }
}

TEST_CASE("check_data_path wants an existing folder with the format's files") {
    TempDir dir;
    REQUIRE_THROWS_WITH(check_data_path(dir / "nope", DataFormat::idx), "data.path: " + dir / "nope" + ": no such directory");
    REQUIRE_THROWS_WITH(check_data_path(dir.path().string(), DataFormat::idx),
                        Catch::StartsWith("data.path: " + dir.path().string() +
                                          ": no train-images-idx3-ubyte(.gz) found; "));
    REQUIRE_THROWS_WITH(check_data_path(dir.path().string(), DataFormat::csv),
                        Catch::StartsWith("data.path: " + dir.path().string() + ": no train.csv found; "));
    make_idx_folder(dir.path());
    REQUIRE(check_data_path(dir.path().string(), DataFormat::idx) == dir.path().string());
}

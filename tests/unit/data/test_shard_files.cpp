// data.shard_files: the readers keep only a range of samples, load_splits
// gives each worker its part, and the Loader builds full global batches from
// the parts. Each part is checked against the full read of the same file.
#include <catch2/catch.hpp>

#include <numeric>
#include <set>

#include "core/error.hpp"
#include "data/csv_reader.hpp"
#include "data/dataset.hpp"
#include "data/idx_reader.hpp"
#include "data/loader.hpp"
#include "data_test_files.hpp"

using namespace gputrain;
using namespace gputrain::data;
using namespace data_test;

namespace {

std::vector<uint8_t> pattern(size_t n) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 13 + 1);
    return v;
}

// Rows of a CSV with label i % 3 and features i, i / 2 (a header line, a blank line inside).
std::string csv_text(int rows) {
    std::string text = "label,a,b\n";
    for (int i = 0; i < rows; ++i) {
        text += std::to_string(i % 3) + "," + std::to_string(i) + "," + std::to_string(i / 2.0) + "\n";
        if (i == rows / 2) text += "\n";
    }
    return text;
}

}  // namespace

TEST_CASE("read_idx with a row range keeps exactly those rows of the full read, plain and gzip") {
    TempDir dir;
    const uint32_t n = 13, rows = 3, cols = 2;  // an odd count
    const std::vector<uint8_t> values = pattern(n * rows * cols);
    for (const std::string name : {"x-idx3-ubyte", "x-idx3-ubyte.gz"}) {
        write_idx(dir / name, {n, rows, cols}, values);
        const IdxArray full = read_idx(dir / name);
        const size_t row_bytes = rows * cols;
        for (int workers = 1; workers <= 4; ++workers) {
            int64_t covered = 0;
            for (int w = 0; w < workers; ++w) {
                const RowRange r = part_of(n, w, workers);
                const IdxArray part = read_idx(dir / name, [&](int64_t file_rows) {
                    REQUIRE(file_rows == n);
                    return part_of(file_rows, w, workers);
                });
                REQUIRE(part.file_rows == n);
                REQUIRE(part.first_row == r.begin);
                REQUIRE(part.dims == std::vector<int64_t>{r.end - r.begin, rows, cols});
                REQUIRE(part.bytes == std::vector<uint8_t>(full.bytes.begin() + r.begin * row_bytes,
                                                           full.bytes.begin() + r.end * row_bytes));
                REQUIRE(r.begin == covered);  // consecutive, disjoint parts that cover the file
                covered = r.end;
            }
            REQUIRE(covered == n);
        }
    }
}

TEST_CASE("read_idx with a row range still reports truncation and trailing bytes of the whole file") {
    TempDir dir;
    auto bytes = idx_bytes({5, 2}, pattern(10));
    bytes.pop_back();
    write_bytes(dir / "short", bytes);
    const auto first_two = [](int64_t) { return RowRange{0, 2}; };
    REQUIRE_THROWS_WITH(read_idx(dir / "short", first_two),
                        dir / "short" + ": truncated: the header's dimensions need 10 bytes of data, the file holds 9");
    bytes = idx_bytes({5, 2}, pattern(10));
    bytes.push_back(7);
    write_gz(dir / "long.gz", bytes);
    REQUIRE_THROWS_WITH(read_idx(dir / "long.gz", first_two),
                        dir / "long.gz" + ": 1 trailing bytes after the 10 bytes of data the header declares");
}

TEST_CASE("read_csv with a row range keeps exactly those rows of the full read") {
    TempDir dir;
    const int n = 11;
    write_text(dir / "t.csv", csv_text(n));
    const CsvTable full = read_csv(dir / "t.csv");
    REQUIRE(full.rows == n);
    REQUIRE(full.file_rows == n);
    for (int workers = 1; workers <= 4; ++workers) {
        for (int w = 0; w < workers; ++w) {
            const RowRange r = part_of(n, w, workers);
            const CsvTable part = read_csv(dir / "t.csv", 0, [&](int64_t file_rows) {
                REQUIRE(file_rows == n);
                return part_of(file_rows, w, workers);
            });
            REQUIRE(part.file_rows == n);
            REQUIRE(part.first_row == r.begin);
            REQUIRE(part.rows == r.end - r.begin);
            REQUIRE(part.feature_columns == 2);
            REQUIRE(part.labels == std::vector<int32_t>(full.labels.begin() + r.begin, full.labels.begin() + r.end));
            REQUIRE(part.features ==
                    std::vector<float>(full.features.begin() + 2 * r.begin, full.features.begin() + 2 * r.end));
        }
    }
}

TEST_CASE("load_splits with shard_files: each worker's part of the training samples, validation whole") {
    TempDir dir;
    for (const bool gz : {false, true}) {
        write_idx_split(dir.path().string(), "train", 23, 2, 2, 5, gz);
        config::DataConfig cfg;
        cfg.path = dir.path().string();
        cfg.limit = 21;
        cfg.validation_split = 0.25;  // int(21 * 0.75) = 15 training samples, 6 validation
        const DataSplits whole = load_splits(cfg, {2, 2}, Need::train);
        REQUIRE(whole.train.size() == 15);
        cfg.shard_files = true;
        for (int workers = 1; workers <= 4; ++workers) {
            for (int w = 0; w < workers; ++w) {
                const DataSplits s = load_splits(cfg, {2, 2}, Need::train, w, workers);
                const RowRange r = part_of(15, w, workers);
                REQUIRE(s.train.size() == r.end - r.begin);
                REQUIRE(s.train.part.count == workers);
                REQUIRE(s.train.part.whole == (workers > 1 ? 15 : 0));
                REQUIRE(s.train.labels ==
                        std::vector<int32_t>(whole.train.labels.begin() + r.begin, whole.train.labels.begin() + r.end));
                REQUIRE(s.train.pixels == std::vector<uint8_t>(whole.train.pixels.begin() + 4 * r.begin,
                                                               whole.train.pixels.begin() + 4 * r.end));
                REQUIRE(s.validation.labels == whole.validation.labels);
                REQUIRE(s.validation.pixels == whole.validation.pixels);
                if (workers > 1)
                    REQUIRE(s.train.description == "data.path train (" + dir.path().string() + "): samples " +
                                                       std::to_string(r.begin) + ".." + std::to_string(r.end - 1) +
                                                       " of 15 (worker " + std::to_string(w) + " of " +
                                                       std::to_string(workers) + ", data.shard_files)");
            }
        }
    }
}

TEST_CASE("load_splits with shard_files rejects more workers than training samples") {
    TempDir dir;
    write_idx_split(dir.path().string(), "train", 3, 2, 2, 3);
    config::DataConfig cfg;
    cfg.path = dir.path().string();
    cfg.shard_files = true;
    REQUIRE_THROWS_WITH(load_splits(cfg, {2, 2}, Need::train, 0, 4),
                        "data.shard_files: 3 training samples cannot be shared by 4 workers (data.path train (" +
                            dir.path().string() + "))");
}

TEST_CASE("Loader over workers' parts: full global batches, each worker's rows from its own part") {
    // 2 workers x 2 replicas, global batch 6: shard_offsets(6, 4) = 0 2 4 5 6, so
    // worker 0 (replicas 0, 1) gives rows 0..3 of each batch and worker 1 rows 4..5.
    Dataset all;
    all.sample_shape = {1};
    all.num_classes = 100;
    const int64_t n = 21;
    for (int64_t i = 0; i < n; ++i) {
        all.inputs.push_back(static_cast<float>(i));
        all.labels.push_back(static_cast<int32_t>(i));
    }
    const std::vector<int64_t> offsets = shard_offsets(6, 4);
    std::set<int32_t> seen;
    int64_t steps_seen = -1;
    for (int w = 0; w < 2; ++w) {
        const RowRange r = part_of(n, w, 2);  // 0..9 and 10..20
        Dataset part;
        part.sample_shape = {1};
        part.inputs.assign(all.inputs.begin() + r.begin, all.inputs.begin() + r.end);
        part.labels.assign(all.labels.begin() + r.begin, all.labels.begin() + r.end);
        part.part = {w, 2, n};
        Loader loader(part, 6, 4, /*shuffle=*/true, 7, 2, /*consumers=*/1);
        // Worker 0 has 10 samples for 4 rows a step, worker 1 11 for 2: min(2, 5) steps.
        REQUIRE(loader.steps_per_epoch() == 2);
        steps_seen = loader.steps_per_epoch();
        loader.start_epoch(3);
        const std::vector<int64_t> order = epoch_order(part.size(), true, 7, 3);
        const int64_t rows = w == 0 ? 4 : 2;
        for (int64_t step = 0; step < 2; ++step) {
            auto batch = loader.get(step);
            REQUIRE(batch->size == 6);
            REQUIRE(batch->shard_begin == offsets);
            REQUIRE(batch->first_row == (w == 0 ? 0 : 4));
            REQUIRE(static_cast<int64_t>(batch->labels.size()) == rows);
            for (int64_t i = 0; i < rows; ++i) {
                const int32_t label = batch->labels[static_cast<size_t>(i)];
                REQUIRE(label == r.begin + order[static_cast<size_t>(step * rows + i)]);
                REQUIRE(batch->inputs[static_cast<size_t>(i)] == static_cast<float>(label));
                REQUIRE(seen.insert(label).second);  // no sample twice in an epoch, none shared by workers
            }
        }
    }
    REQUIRE(steps_seen == 2);
    REQUIRE(seen.size() == 12);
}

TEST_CASE("Loader over workers' parts rejects parts smaller than a worker's rows of one batch") {
    Dataset part;
    part.sample_shape = {1};
    part.inputs = {0, 1};
    part.labels = {0, 1};
    part.part = {0, 2, 4};
    REQUIRE_THROWS_WITH(Loader(part, 8, 2, true, 1),
                        "data.shard_files: each of the 2 workers holds about 2 training samples, fewer than its "
                        "share of one global batch of 8 (training.batch_size); lower the batch size or use more data");
}

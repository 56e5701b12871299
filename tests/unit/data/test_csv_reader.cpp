#include <catch2/catch.hpp>

#include "core/error.hpp"
#include "data/csv_reader.hpp"
#include "data_test_files.hpp"

using namespace gputrain;
using namespace gputrain::data;
using namespace data_test;

namespace {

std::string error_of(const std::string& path) {
    try {
        read_csv(path);
    } catch (const DataError& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST_CASE("read_csv reads label-first rows, with or without a header") {
    TempDir dir;
    const std::string rows = "1,0.5,2\n0, 3 ,-4e1\r\n\n2,7,8\n";
    for (const bool header : {false, true}) {
        const std::string path = dir / (header ? "with.csv" : "without.csv");
        write_text(path, (header ? "label,pixel1,pixel2\n" : "") + rows);
        const CsvTable table = read_csv(path);
        REQUIRE(table.feature_columns == 2);
        REQUIRE(table.labels == std::vector<int32_t>{1, 0, 2});
        REQUIRE(table.features == std::vector<float>{0.5f, 2, 3, -40, 7, 8});
    }
}

TEST_CASE("read_csv drops a UTF-8 byte-order mark, so the first row stays a row") {
    TempDir dir;
    for (const bool header : {false, true}) {
        const std::string path = dir / (header ? "bom-header.csv" : "bom.csv");
        write_text(path, "\xEF\xBB\xBF" + std::string(header ? "label,a,b\n" : "") + "1,2,3\n0,5,6\n");
        const CsvTable table = read_csv(path);
        REQUIRE(table.labels == std::vector<int32_t>{1, 0});
        REQUIRE(table.features == std::vector<float>{2, 3, 5, 6});
        // The rows a worker's share is cut from are counted the same way.
        const CsvTable second = read_csv(path, 0, [](int64_t rows) {
            REQUIRE(rows == 2);
            return RowRange{1, 2};
        });
        REQUIRE(second.labels == std::vector<int32_t>{0});
    }
}

TEST_CASE("read_csv names the file and line of a malformed row") {
    TempDir dir;
    const std::string path = dir / "bad.csv";
    write_text(path, "label,a,b\n1,2,3\n0,4\n");
    REQUIRE(error_of(path) == path + ":3: expected 3 fields like the first line, found 2");
    write_text(path, "1,2,3\n0,4,x5\n");
    REQUIRE(error_of(path) == path + ":2: field 3 'x5' is not a number");
    write_text(path, "1,2,3\n1.5,4,5\n");
    REQUIRE(error_of(path) == path + ":2: label '1.5' is not a class index (a whole number from 0 to 2147483647)"
                                          "; for real-valued targets name their columns in data.target_columns");
    write_text(path, "1,2,3\n-1,4,5\n");
    REQUIRE(error_of(path) == path + ":2: label '-1' is not a class index (a whole number from 0 to 2147483647)"
                                          "; for real-valued targets name their columns in data.target_columns");
    write_text(path, "label\n1\n");
    REQUIRE(error_of(path) == path + ":1: expected a label and at least one feature, found 1 field");
    write_text(path, "label,a\n");
    REQUIRE(error_of(path) == path + ": no data rows");
    REQUIRE(error_of(dir / "none.csv") == dir / "none.csv" + ": cannot open");
}

TEST_CASE("read_csv: features beyond float32, a first line that only looks like a header, CR line endings") {
    TempDir dir;
    const std::string path = dir / "odd.csv";
    // 1e39 is a finite double but Inf as a float: refused, not trained on.
    write_text(path, "1,2,3\n0,1e39,5\n");
    REQUIRE(error_of(path) == path + ":2: field 2 '1e39' is out of range (features are float32: at most 3.4e38 in size)");
    write_text(path, "1,2,3\n0,-1e999,5\n");
    REQUIRE(error_of(path) == path + ":2: field 2 '-1e999' is out of range (features are float32: at most 3.4e38 in size)");
    write_text(path, "1,3.4e38,3\n");
    REQUIRE(read_csv(path).features == std::vector<float>{3.4e38f, 3.0f});
    // A first row whose label is empty or "nan" is a bad row, not a header to skip.
    write_text(path, ",2,3\n0,4,5\n");
    REQUIRE(error_of(path) == path + ":1: label '' is not a class index (a whole number from 0 to 2147483647)");
    write_text(path, "nan,2,3\n0,4,5\n");
    REQUIRE(error_of(path) == path + ":1: label 'nan' is not a class index (a whole number from 0 to 2147483647)");
    // A header has a name beyond its first field; a word before numbers is a bad data row, never skipped.
    write_text(path, "label,x,3\n0,4,5\n");
    REQUIRE(read_csv(path).rows == 1);
    const std::string hint = "; a header line needs a name, not a number, in another column too";
    for (const std::string first : {"label", "TRUE", "\"1\"", "0x10", "1_0"}) {
        write_text(path, first + ",2,3\n0,4,5\n");
        REQUIRE(error_of(path) == path + ":1: label '" + first + "' is not a class index (a whole number from 0 to 2147483647)" + hint);
        // Counted for a worker's share the same way: the row is data.
        write_text(path, first + ",2,3\n0,4,5\n");
        REQUIRE_THROWS_AS(read_csv(path, 0, [](int64_t rows) {
                              REQUIRE(rows == 2);
                              return RowRange{0, rows};
                          }),
                          DataError);
    }
    // Without a label column (predict's inputs), the same rules.
    const auto unlabeled_error = [&](const std::string& text) -> std::string {
        write_text(path, text);
        try {
            read_csv(path, 2);
        } catch (const DataError& e) {
            return e.what();
        }
        return "no error";
    };
    REQUIRE(unlabeled_error("nan,2\n1,2\n") == path + ":1: field 1 'nan' is not a number");
    REQUIRE(unlabeled_error("TRUE,2\n1,2\n") == path + ":1: field 1 'TRUE' is not a number" + hint);
    write_text(path, "a,b\n1,2\n");
    REQUIRE(read_csv(path, 2).rows == 1);
    // Classic Mac OS line ends: one long line, and a hint.
    for (const std::string text : {"1,2,3\r0,4,5\r", "label,a,b\r0,4,5\r1,2,3\r"})  // with a header too
        for (const bool counting : {false, true}) {
            write_text(path, text);
            try {
                if (counting) read_csv(path, 0, [](int64_t rows) { return RowRange{0, rows}; });
                else read_csv(path);
                FAIL("no error");
            } catch (const DataError& e) {
                REQUIRE(std::string(e.what()) == path + ":1: the file ends its lines with CR alone, as classic Mac OS "
                                                        "did; convert them to LF");
            }
        }
}

namespace {

// The message of the error, "config: " before a ConfigError's (a column the config names), "data: " before a DataError's.
std::string target_error(const std::string& path, const std::vector<std::string>& targets) {
    try {
        read_csv(path, 0, nullptr, targets);
    } catch (const ConfigError& e) {
        return std::string("config: ") + e.what();
    } catch (const DataError& e) {
        return std::string("data: ") + e.what();
    }
    return "(no error)";
}

}  // namespace

TEST_CASE("read_csv with target columns: real-valued targets by header name or index, features from the rest") {
    TempDir dir;
    const std::string path = dir / "reg.csv";
    write_text(path, "a,y,b,z\n1,-0.72645,2,10\n3,4.5,5,-1e3\n");
    const CsvTable named = read_csv(path, 0, nullptr, {"z", "y"});
    REQUIRE(named.rows == 2);
    REQUIRE(named.labels.empty());
    REQUIRE(named.target_count == 2);
    REQUIRE(named.feature_columns == 2);
    REQUIRE(named.targets == std::vector<float>{10, -0.72645f, -1000, 4.5f});  // in the order named
    REQUIRE(named.features == std::vector<float>{1, 2, 3, 5});
    const CsvTable indexed = read_csv(path, 0, nullptr, {"-1", "1"});
    REQUIRE(indexed.targets == named.targets);
    REQUIRE(indexed.features == named.features);
    // Without a header, by index; a row count chooser applies as to labels.
    write_text(path, "1,-0.5,2\n3,0.25,4\n5,6,7\n");
    const CsvTable rows = read_csv(path, 0, [](int64_t) { return RowRange{1, 3}; }, {"1"});
    REQUIRE(rows.targets == std::vector<float>{0.25f, 6});
    REQUIRE(rows.features == std::vector<float>{3, 4, 5, 7});
    // Prediction files may leave the target columns out: then every field is a feature.
    REQUIRE(read_csv(path, 3, nullptr, {"1"}).features.size() == 9);
}

TEST_CASE("read_csv with target columns: each mistake is one error naming the file and the column") {
    TempDir dir;
    const std::string path = dir / "reg.csv";
    write_text(path, "age,bmi,progression\n1,2,3\n4,5,nan\n");
    REQUIRE(target_error(path, {"progresion"}) == "config: " + path +
            ": data.target_columns: no column 'progresion' in the header (did you mean 'progression'?); its columns "
            "are age, bmi, progression");
    REQUIRE(target_error(path, {"3"}) ==
            "config: " + path + ": data.target_columns: column 3 is outside the 3 columns of the file (0..2, or -1 for the last)");
    REQUIRE(target_error(path, {"2", "-1"}) == "config: " + path + ": data.target_columns names column 2 twice");
    REQUIRE(target_error(path, {"0", "1", "2"}) ==
            "config: " + path + ": data.target_columns takes all 3 columns; leave at least one for the features");
    REQUIRE(target_error(path, {"progression"}) == "data: " + path + ":3: target (field 3) 'nan' is not a number");
    write_text(path, "1,2,3\n");
    REQUIRE(target_error(path, {"bmi"}) == "config: " + path +
            ": data.target_columns names column 'bmi', and the file has no header line; give the column's 0-based "
            "index");
}

#include "data/csv_reader.hpp"

#include <charconv>
#include <climits>
#include <cmath>
#include <fstream>
#include <string_view>

#include "core/error.hpp"
#include "core/suggest.hpp"

namespace gputrain::data {
namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return s;
}

bool parse_number(std::string_view field, double& value) {
    field = trim(field);
    if (!field.empty() && field.front() == '+') field.remove_prefix(1);
    if (field.empty()) return false;
    const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
    return ec == std::errc() && end == field.data() + field.size() && std::isfinite(value);
}

// Whether the text is written as a number at all, finite or not ("nan",
// "inf", "1e999").
bool written_as_number(std::string_view field) {
    field = trim(field);
    if (!field.empty() && (field.front() == '+' || field.front() == '-')) field.remove_prefix(1);
    if (field.empty()) return false;
    double value = 0;
    const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
    return end == field.data() + field.size() && (ec == std::errc() || ec == std::errc::result_out_of_range);
}

std::vector<std::string_view> split_fields(std::string_view line) {
    std::vector<std::string_view> fields;
    size_t start = 0;
    while (true) {
        const size_t comma = line.find(',', start);
        fields.push_back(line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    return fields;
}

// A first line is a header when its first field is a word (neither empty nor
// a number) and, with more than one field, another field is not a number
// either: a data row with an empty or "nan" label, or a word where its first
// number should be ("TRUE,1,2", "\"1\",2,3"), is an error, not a header.
bool is_header(const std::vector<std::string_view>& fields) {
    const auto word = [](std::string_view f) { return !trim(f).empty() && !written_as_number(f); };
    if (!word(fields[0])) return false;
    if (fields.size() == 1) return true;
    for (size_t i = 1; i < fields.size(); ++i)
        if (!written_as_number(fields[i])) return true;
    return false;
}

const char* const kCrOnly = "the file ends its lines with CR alone, as classic Mac OS did; convert them to LF";

// A first line with a CR inside it (not just before its LF) is the whole
// file: refused at once, whether or not it starts with a header.
void refuse_cr_only(const std::string& path, std::string_view line) {
    if (trim(line).find('\r') != std::string_view::npos) throw DataError(path + ":1: " + kCrOnly);
}

const char* const kOutOfRange = "is out of range (features are float32: at most 3.4e38 in size)";

// Why a feature field is not a float32, with a hint where one helps; "" when
// it is one (then `value` holds it). 1e39 is a finite double but Inf as a float.
std::string feature_problem(std::string_view field, double& value) {
    if (parse_number(field, value)) return std::isfinite(static_cast<float>(value)) ? "" : kOutOfRange;
    const std::string text(trim(field));
    if (text.find('\r') != std::string::npos) return std::string("is not a number (") + kCrOnly + ")";
    const char* begin = text.data() + (!text.empty() && text[0] == '+');
    const auto [end, ec] = std::from_chars(begin, text.data() + text.size(), value);
    if (ec == std::errc::result_out_of_range && end == text.data() + text.size()) return kOutOfRange;  // 1e999
    return "is not a number";
}

// Drops a UTF-8 byte-order mark (spreadsheets write one) from the first line,
// which would otherwise make a number unreadable and the row a "header".
void strip_bom(std::string& line) {
    if (line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
}

// The data rows of `path`: its non-blank lines, less a header line.
int64_t count_data_rows(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw DataError(path + ": cannot open");
    int64_t rows = 0;
    bool first_line = true;
    std::string line;
    while (std::getline(in, line)) {
        if (first_line) strip_bom(line);
        if (trim(line).empty()) continue;
        if (first_line) refuse_cr_only(path, line);
        if (first_line && is_header(split_fields(line))) {
            first_line = false;
            continue;  // a header line
        }
        first_line = false;
        ++rows;
    }
    if (in.bad()) throw DataError(path + ": read error");
    return rows;
}

// The column indices of `specs` (data.target_columns) in a table of `columns`
// fields whose header is `header` (empty: none). A column it cannot find is a
// ConfigError: the config names it.
std::vector<int64_t> resolve_targets(const std::string& path, const std::vector<std::string>& specs, int64_t columns,
                                     const std::vector<std::string_view>& header) {
    std::vector<int64_t> out;
    std::vector<std::string> names;
    for (std::string_view h : header) names.emplace_back(trim(h));
    for (const std::string& spec : specs) {
        int64_t index = -1;
        int64_t number = 0;
        const auto [end, ec] = std::from_chars(spec.data(), spec.data() + spec.size(), number);
        if (ec == std::errc() && end == spec.data() + spec.size()) {
            index = number < 0 ? columns + number : number;
            if (index < 0 || index >= columns)
                throw ConfigError(path + ": data.target_columns: column " + spec + " is outside the " +
                                std::to_string(columns) + " columns of the file (0.." + std::to_string(columns - 1) +
                                ", or -1 for the last)");
        } else {
            if (names.empty())
                throw ConfigError(path + ": data.target_columns names column '" + spec +
                                "', and the file has no header line; give the column's 0-based index");
            for (size_t i = 0; i < names.size(); ++i)
                if (names[i] == spec) index = static_cast<int64_t>(i);
            if (index < 0)
                throw ConfigError(path + ": data.target_columns: no column '" + spec + "' in the header" +
                                did_you_mean(spec, names) + "; its columns are " + join_names(names));
        }
        for (int64_t taken : out)
            if (taken == index)
                throw ConfigError(path + ": data.target_columns names column " + std::to_string(index) + " twice");
        out.push_back(index);
    }
    if (static_cast<int64_t>(out.size()) >= columns)
        throw ConfigError(path + ": data.target_columns takes all " + std::to_string(columns) +
                        " columns; leave at least one for the features");
    return out;
}

}  // namespace

CsvTable read_csv(const std::string& path, int64_t unlabeled_features, const RowChooser& choose,
                  const std::vector<std::string>& target_columns) {
    const int64_t counted = choose ? count_data_rows(path) : 0;
    const RowRange keep = choose ? choose(counted) : RowRange{0, INT64_MAX};
    if (choose && (keep.begin < 0 || keep.begin > keep.end || keep.end > counted))
        throw Error(path + ": asked for rows " + std::to_string(keep.begin) + ".." + std::to_string(keep.end) +
                    " of " + std::to_string(counted));
    std::ifstream in(path);
    if (!in) throw DataError(path + ": cannot open");

    CsvTable table;
    int64_t columns = -1;    // fields per line, fixed by the first line
    bool first_line = true;
    bool labeled = true;
    std::vector<int64_t> targets;       // column indices
    std::vector<char> is_target;        // per column
    std::string line;
    for (int64_t line_no = 1; std::getline(in, line); ++line_no) {
        if (line_no == 1) strip_bom(line);
        if (trim(line).empty()) continue;
        const std::vector<std::string_view> fields = split_fields(line);
        const std::string where = path + ":" + std::to_string(line_no) + ": ";
        double value = 0;
        // A word that starts the first line, taken for data: it may have been meant as a header.
        const char* header_hint = "";
        if (first_line && !trim(fields[0]).empty() && !written_as_number(fields[0]))
            header_hint = "; a header line needs a name, not a number, in another column too";
        if (first_line) {
            refuse_cr_only(path, line);
            first_line = false;
            columns = static_cast<int64_t>(fields.size());
            labeled = columns != unlabeled_features;
            const bool header = is_header(fields);
            if (header)
                for (std::string_view f : fields) table.header.emplace_back(trim(f));
            if (labeled && !target_columns.empty()) {
                targets = resolve_targets(path, target_columns, columns, header ? fields : std::vector<std::string_view>{});
                is_target.assign(static_cast<size_t>(columns), 0);
                for (int64_t t : targets) is_target[static_cast<size_t>(t)] = 1;
                table.target_count = static_cast<int64_t>(targets.size());
                if (header)
                    for (int64_t t : targets) table.target_names.push_back(table.header[static_cast<size_t>(t)]);
                table.feature_columns = columns - table.target_count;
                if (header) continue;
            } else {
                if (labeled && columns < 2)
                    throw DataError(where + "expected a label and at least one feature, found 1 field");
                table.feature_columns = labeled ? columns - 1 : columns;
                if (header) continue;  // a header line
            }
        }
        const int64_t data_row = table.file_rows++;
        if (data_row < keep.begin || data_row >= keep.end) continue;  // another worker's row
        if (static_cast<int64_t>(fields.size()) != columns) {
            throw DataError(where + "expected " + std::to_string(columns) + " fields like the first line, found " +
                            std::to_string(fields.size()));
        }
        if (!targets.empty()) {
            for (const int64_t t : targets) {
                const std::string problem = feature_problem(fields[static_cast<size_t>(t)], value);
                if (!problem.empty())
                    throw DataError(where + "target (field " + std::to_string(t + 1) + ") '" +
                                    std::string(trim(fields[static_cast<size_t>(t)])) + "' " + problem);
                table.targets.push_back(static_cast<float>(value));
            }
            ++table.rows;
            for (size_t i = 0; i < fields.size(); ++i) {
                if (is_target[i]) continue;
                const std::string problem = feature_problem(fields[i], value);
                if (!problem.empty())
                    throw DataError(where + "field " + std::to_string(i + 1) + " '" + std::string(trim(fields[i])) +
                                    "' " + problem);
                table.features.push_back(static_cast<float>(value));
            }
            continue;
        }
        if (labeled) {
            if (!parse_number(fields[0], value) || value < 0 || value != std::floor(value) || value > 2147483647.0) {
                // A number that is no class index may be a real-valued target.
                const char* target_hint = parse_number(fields[0], value)
                                              ? "; for real-valued targets name their columns in data.target_columns"
                                              : "";
                throw DataError(where + "label '" + std::string(trim(fields[0])) +
                                "' is not a class index (a whole number from 0 to 2147483647)" + header_hint +
                                target_hint);
            }
            table.labels.push_back(static_cast<int32_t>(value));
        }
        ++table.rows;
        for (size_t i = labeled ? 1 : 0; i < fields.size(); ++i) {
            const std::string problem = feature_problem(fields[i], value);
            if (!problem.empty())
                throw DataError(where + "field " + std::to_string(i + 1) + " '" + std::string(trim(fields[i])) + "' " +
                                problem + (i == 0 ? header_hint : ""));
            table.features.push_back(static_cast<float>(value));
        }
    }
    if (in.bad()) throw DataError(path + ": read error");
    if (table.file_rows == 0) throw DataError(path + ": no data rows");
    table.first_row = choose ? keep.begin : 0;
    return table;
}

std::vector<std::string> csv_header(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::vector<std::string> names;
    for (bool first = true; std::getline(in, line); first = false) {
        if (first) strip_bom(line);
        if (trim(line).empty()) continue;
        const std::vector<std::string_view> fields = split_fields(line);
        if (is_header(fields))
            for (std::string_view f : fields) names.emplace_back(trim(f));
        break;
    }
    return names;
}

}  // namespace gputrain::data

// config::load: text -> YAML tree -> overrides -> sections -> cross-key rules
// -> resolved YAML and digest.
#include "config/load.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <yaml-cpp/yaml.h>

#include "config/config_source.hpp"
#include "config/overrides.hpp"
#include "config/read_sections.hpp"
#include "config/resolved_yaml.hpp"
#include "config/validate.hpp"
#include "config/yaml_guard.hpp"
#include "core/error.hpp"
#include "core/suggest.hpp"

namespace gputrain::config {

namespace {

std::string read_file(const std::string& path) {
    std::FILE* file = std::fopen(path.c_str(), "rb");
    if (!file) throw ConfigError("cannot read config '" + path + "': " + std::strerror(errno));
    // A config is a small text file; stop reading what never ends (/dev/zero).
    constexpr size_t kMaxConfigBytes = size_t{16} << 20;
    std::string text;
    char buffer[65536];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, file)) > 0) {
        text.append(buffer, n);
        if (text.size() > kMaxConfigBytes) {
            std::fclose(file);
            throw ConfigError("cannot read config '" + path + "': longer than 16 MiB; give a YAML config file");
        }
    }
    const int error = std::ferror(file) ? errno : 0;
    std::fclose(file);
    if (error) throw ConfigError("cannot read config '" + path + "': " + std::strerror(error));
    return text;
}

// yaml-cpp 0.7 loops forever on a ',' outside any [ ] or { } that follows a
// complete top-level node (",x", "'a' ,", "[1]\n,": found by fuzzing), so such a
// comma is rejected before parsing: at the start of a line, right after a
// quoted scalar or a closing bracket, or inside a tag, anchor or alias ("!#,x"),
// outside brackets, quotes and comments.
void reject_stray_commas(const std::string& yaml, const ConfigSource& source) {
    int depth = 0, line = 0, column = 0;
    bool line_start = true, after_node = false, in_property = false;
    char quote = 0, prev = '\n';
    for (size_t i = 0; i < yaml.size(); ++i, ++column) {
        const char c = yaml[i];
        if (c == '\n') {
            ++line;
            column = -1;
            line_start = true;
            after_node = false;
            in_property = false;
            quote = quote == '"' || quote == '\'' ? quote : 0;
            prev = '\n';
            continue;
        }
        if (quote == '"') {
            if (c == '\\') ++i, ++column;
            else if (c == '"') quote = 0, after_node = depth == 0;
            continue;
        }
        if (quote == '\'') {
            if (c == '\'' && i + 1 < yaml.size() && yaml[i + 1] == '\'') ++i, ++column;
            else if (c == '\'') quote = 0, after_node = depth == 0;
            continue;
        }
        if (c == '#' && (prev == ' ' || prev == '\t' || prev == '\n')) {
            while (i + 1 < yaml.size() && yaml[i + 1] != '\n') ++i;
            continue;
        }
        if (c == ' ' || c == '\t') {
            in_property = false;
            prev = c;
            continue;
        }
        if (c == ',' && depth == 0 && (line_start || after_node || in_property)) {
            YAML::Mark mark;
            mark.line = line;
            mark.column = column;
            throw ConfigError(config_message(source.file_place(mark), "",
                                             "YAML syntax error: ',' outside [ ] or { }; remove it or quote the value"));
        }
        const bool token_start = std::string(" \t\n[{,:-").find(prev) != std::string::npos;
        if ((c == '!' || c == '&' || c == '*') && token_start) in_property = true;
        if ((c == '"' || c == '\'') && token_start) quote = c;
        else if (c == '[' || c == '{') ++depth;
        else if ((c == ']' || c == '}') && depth > 0) --depth;
        after_node = (c == ']' || c == '}') && depth == 0;
        line_start = false;
        prev = c;
    }
}

// The first line (0-based) up to `last_line` whose indentation holds a tab; -1 when none does.
int first_tab_indented_line(const std::string& yaml, int last_line) {
    int line = 0;
    bool indent = true;
    for (const char c : yaml) {
        if (line > last_line) break;
        if (c == '\n') {
            ++line;
            indent = true;
        } else if (indent && c == '\t') {
            return line;
        } else if (c != ' ') {
            indent = false;
        }
    }
    return -1;
}

// Where a YAML syntax error most likely comes from a misindented line: the
// last line up to `last_line` (0-based) indented deeper than the line before
// without that line opening a mapping or list (it ends with a value), or
// indented to a column that no enclosing level has. "" when every line fits.
std::string misindented_line(const std::string& yaml, int last_line) {
    std::vector<int> levels{0};
    std::string found;
    bool opens = false;  // the previous content line ends with ':' or is a bare '-'
    int depth = 0;       // [ { open across lines: their lines are not checked
    std::string previous;
    int line_no = 0;
    for (size_t start = 0; start <= yaml.size() && line_no <= last_line; ++line_no) {
        size_t end = yaml.find('\n', start);
        if (end == std::string::npos) end = yaml.size();
        std::string text = yaml.substr(start, end - start);
        start = end + 1;
        if (const size_t hash = text.find(" #"); hash != std::string::npos) text.resize(hash);
        while (!text.empty() && (text.back() == ' ' || text.back() == '\r')) text.pop_back();
        const size_t indent = text.find_first_not_of(' ');
        if (indent == std::string::npos || text[indent] == '#') continue;
        const bool checked = depth == 0;
        for (const char c : text) depth += (c == '[' || c == '{') - (c == ']' || c == '}');
        if (depth < 0) depth = 0;
        if (!checked) continue;
        const int col = static_cast<int>(indent);
        const std::string here = "line " + std::to_string(line_no + 1);
        if (col > levels.back()) {
            if (!opens) {
                found = here + " is indented deeper than the line before (" + previous +
                        "), which ends with a value, not ':'; align it with the keys it belongs with";
            }
            levels.push_back(col);
        } else {
            while (levels.size() > 1 && levels.back() > col) levels.pop_back();
            if (levels.back() != col) {
                found = here + " is indented " + std::to_string(col) +
                        std::string(col == 1 ? " space" : " spaces") + ", which matches none of the levels around it; align it with the keys it belongs with";
                levels.push_back(col);
            }
        }
        // "- key: value": the item's keys continue at the column after "- ".
        if (text.compare(indent, 2, "- ") == 0) {
            const size_t key = text.find_first_not_of(' ', indent + 1);
            if (key != std::string::npos && text[key] != '{' && text[key] != '[')
                levels.push_back(static_cast<int>(key));
        }
        opens = text.back() == ':' || text.back() == '-';
        previous = "line " + std::to_string(line_no + 1);
    }
    return found;
}

YAML::Node parse_document(const std::string& yaml, const ConfigSource& source) {
    reject_stray_commas(yaml, source);
    check_yaml_terminates(yaml, source.name());
    std::vector<YAML::Node> documents;
    try {
        documents = YAML::LoadAll(yaml);
    } catch (const YAML::ParserException& e) {
        // yaml-cpp's words for a tab in the indentation ("illegal map value",
        // "end of map not found") do not mention it.
        const int tab_line = first_tab_indented_line(yaml, e.mark.line);
        if (tab_line >= 0)
            throw ConfigError(config_message(source.file_place(e.mark), "", "YAML syntax error: " + e.msg,
                                             "line " + std::to_string(tab_line + 1) +
                                                 " is indented with a tab, which YAML does not allow; indent with "
                                                 "spaces"));
        // ${name} (a block parameter) unquoted in a {...} mapping: YAML reads the braces as its own.
        if (e.mark.line >= 0) {
            size_t start = 0;
            for (int line = 0; line < e.mark.line && start != std::string::npos; ++line) {
                start = yaml.find('\n', start);
                if (start != std::string::npos) ++start;
            }
            if (start != std::string::npos) {
                const std::string text = yaml.substr(start, yaml.find('\n', start) - start);
                if (text.find("${") != std::string::npos && text.find('{') < text.find("${"))
                    throw ConfigError(config_message(source.file_place(e.mark), "", "YAML syntax error: " + e.msg,
                                                     "inside {...} YAML reads the braces of ${NAME} as its own; "
                                                     "write $NAME, or quote the value (\"${NAME}\")"));
            }
        }
        // Misaligned indentation: yaml-cpp says "end of map not found" at some later line.
        if (const std::string hint = misindented_line(yaml, e.mark.line); !hint.empty())
            throw ConfigError(config_message(source.file_place(e.mark), "", "YAML syntax error: " + e.msg, hint));
        throw ConfigError(config_message(source.file_place(e.mark), "", "YAML syntax error: " + e.msg));
    }
    const std::string sections = "a mapping of sections (" + join_names(kTopLevelKeys) + ")";
    if (documents.empty() || documents[0].IsNull())
        throw ConfigError(config_message(source.name() + ":1:1", "", "the config is empty",
                                         "expected " + sections));
    if (documents.size() > 1)
        throw ConfigError(config_message(source.file_place(documents[1].Mark()), "",
                                         "more than one YAML document", "put the whole config in one"));
    const YAML::Node& root = documents[0];
    if (!root.IsMap())
        throw ConfigError(config_message(source.file_place(root.Mark()), "",
                                         "expected " + sections + " at the top level, got " + describe(root)));
    return root;
}

}  // namespace

RunConfig load_from_string(const std::string& yaml, const std::string& source_name,
                           const std::vector<std::string>& overrides) {
    ConfigSource source(source_name);
    YAML::Node root = parse_document(yaml, source);
    apply_overrides(root, overrides, source);

    const Section top(source, root, "", source.file_place(root.Mark()), kTopLevelKeys);
    RunConfig config;
    config.source_file = source_name;
    config.run_dir = read_run_dir(top);
    config.model = read_model(top);
    config.loss = read_loss(top);
    config.optimizer = read_optimizer(top);
    config.data = read_data(top);
    config.data.float_labels_are_targets = !is_cross_entropy(config.loss.name);
    config.metrics = read_metrics(top, config.loss.name,
                                  !is_cross_entropy(config.loss.name) && !config.data.target_columns.empty());
    config.metrics_given = top.has("metrics");
    config.training = read_training(top);
    config.strategy = read_strategy(top);
    config.checkpoint = read_checkpoint(top);
    config.early_stopping = read_early_stopping(top);
    config.reduce_lr_on_plateau = read_reduce_lr_on_plateau(top);
    config.logging = read_logging(top);
    validate(config, source);

    config.resolved_yaml = resolved_yaml(config);
    config.digest = config_digest(config);
    return config;
}

RunConfig load(const std::string& path, const std::vector<std::string>& overrides) {
    return load_from_string(read_file(path), path, overrides);
}

}  // namespace gputrain::config

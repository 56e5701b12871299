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
    config.metrics = read_metrics(top);
    config.optimizer = read_optimizer(top);
    config.data = read_data(top);
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

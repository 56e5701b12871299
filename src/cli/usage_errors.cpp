#include "cli/usage_errors.hpp"

#include <algorithm>
#include <cctype>
#include <map>

#include "core/suggest.hpp"

namespace gputrain::cli {

namespace {

// Words other tools use for our commands; edit distance cannot find these.
const std::map<std::string, std::string> kCommandSynonyms = {
    {"train", "fit"},         {"eval", "evaluate"},     {"test", "evaluate"},      {"validate", "evaluate"},
    {"infer", "predict"},     {"inference", "predict"}, {"classify", "predict"},   {"benchmark", "bench"},
    {"time", "bench"},        {"device", "devices"},    {"device_query", "devices"}, {"gpus", "devices"},
    {"info", "summary"},      {"describe", "summary"},
};

// Flags other trainers take for what gputrain reads from the config: the key
// to give to --set instead. Names are lower case, '-' written as '_'.
const std::map<std::string, std::string> kConfigFlags = {
    {"epochs", "training.epochs"},
    {"epoch", "training.epochs"},
    {"batch_size", "training.batch_size"},
    {"batch", "training.batch_size"},
    {"bs", "training.batch_size"},
    {"learning_rate", "optimizer.learning_rate"},
    {"lr", "optimizer.learning_rate"},
    {"optimizer", "optimizer.type"},
    {"weight_decay", "optimizer.weight_decay"},
    {"momentum", "optimizer.momentum"},
    {"seed", "training.seed"},
    {"shuffle", "training.shuffle"},
    {"precision", "training.precision"},
    {"loss", "loss"},
    {"dataset", "data.dataset"},
    {"data", "data.path"},
    {"validation_split", "data.validation_split"},
    {"limit", "data.limit"},
    {"gpus", "strategy.devices"},
    {"devices", "strategy.devices"},
    {"log_level", "logging.level"},
    {"tensorboard", "logging.tensorboard"},
    {"checkpoint_dir", "checkpoint.dir"},
};

bool is_option(const std::string& arg) { return arg.size() > 1 && arg[0] == '-'; }

bool ends_with(const std::string& text, const std::string& suffix) {
    return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// In the order they were registered (and --help lists them).
std::vector<std::string> command_names(const CLI::App& app) {
    std::vector<std::string> names;
    for (const CLI::App* sub : app.get_subcommands(std::function<bool(const CLI::App*)>{}))
        names.push_back(sub->get_name());
    return names;
}

std::string unknown_command(const CLI::App& app, const std::string& word) {
    const std::vector<std::string> names = command_names(app);
    std::string lower = word;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    const auto synonym = kCommandSynonyms.find(lower);
    const std::string suggestion = synonym != kCommandSynonyms.end() ? synonym->second : closest_name(lower, names);
    return "unknown command '" + word + "'; commands: " + join_names(names) +
           (suggestion.empty() ? "" : " (did you mean '" + suggestion + "'?)");
}

// "--batch-size=64" -> "batch_size".
std::string flag_name(const std::string& arg) {
    const size_t start = arg.find_first_not_of('-');
    if (start == std::string::npos) return "";
    std::string name = arg.substr(start, arg.find('=', start) - start);
    for (char& c : name) c = c == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return name;
}

// The arguments nobody took, in command-line order (CLI11's own message
// lists them backwards).
std::vector<std::string> unexpected_arguments(const CLI::App& app) {
    std::vector<std::string> left = app.remaining();
    for (const CLI::App* sub : app.get_subcommands()) {
        const std::vector<std::string> more = sub->remaining();
        left.insert(left.end(), more.begin(), more.end());
    }
    return left;
}

// Where to look next after a stray option: --set for a config value, else the
// command's help.
std::string stray_option_hint(const CLI::App& command, const std::string& path, const std::vector<std::string>& args) {
    const std::string help = " (see 'gputrain " + path + " --help')";
    const auto stray = std::find_if(args.begin(), args.end(), [&](const std::string& arg) {
        return is_option(arg) && arg != "--" && !command.get_option_no_throw(arg.substr(0, arg.find('=')));
    });
    if (stray == args.end() || !command.get_option_no_throw("--set")) return help;
    const auto key = kConfigFlags.find(flag_name(*stray));
    if (key == kConfigFlags.end()) return help;
    std::string value = "VALUE";
    if (stray->find('=') != std::string::npos) value = stray->substr(stray->find('=') + 1);
    else if (stray + 1 != args.end() && !is_option(*(stray + 1))) value = *(stray + 1);
    return " (config values go through --set, e.g. --set " + key->second + "=" + value + ")";
}

}  // namespace

std::string usage_error_message(const CLI::App& app, const CLI::ParseError& error,
                                const std::vector<std::string>& args) {
    const std::vector<CLI::App*> parsed = app.get_subcommands();
    if (parsed.empty()) {
        if (!args.empty() && !is_option(args[0])) return unknown_command(app, args[0]);
        if (dynamic_cast<const CLI::RequiredError*>(&error))
            return "a command is required; commands: " + join_names(command_names(app)) + " (see 'gputrain --help')";
        return std::string(error.what()) + " (see 'gputrain --help')";
    }
    const CLI::App& command = *parsed.back();
    const std::string path = command.get_name();

    if (dynamic_cast<const CLI::ExtrasError*>(&error)) {
        const std::vector<std::string> left = unexpected_arguments(app);
        return std::string(left.size() > 1 ? "the following arguments were not expected: "
                                           : "the following argument was not expected: ") +
               join_names(left, " ") + stray_option_hint(command, path, args);
    }

    // `fit --resume CONFIG`: the optional value took the config path.
    const CLI::Option* config = command.get_option_no_throw("config");
    const CLI::Option* resume = command.get_option_no_throw("--resume");
    if (dynamic_cast<const CLI::RequiredError*>(&error) && config && config->count() == 0 && resume &&
        resume->results().size() == 1) {
        const std::string& taken = resume->results()[0];
        if (ends_with(taken, ".yaml") || ends_with(taken, ".yml"))
            return "CONFIG is required; --resume took '" + taken + "' as its checkpoint: put --resume after the config "
                   "(gputrain " + path + " CONFIG --resume)";
    }
    // A validator's message already names the flag and the fix.
    if (dynamic_cast<const CLI::ValidationError*>(&error)) return error.what();
    // "--replicas: At Most 1 required but received 2": a flag given twice.
    const std::string what = error.what();
    const size_t colon = what.find(": At Most 1 required but received ");
    if (dynamic_cast<const CLI::ArgumentMismatch*>(&error) && colon != std::string::npos)
        return what.substr(0, colon) + " is given more than once; give it once (see 'gputrain " + path + " --help')";
    return std::string(error.what()) + " (see 'gputrain " + path + " --help')";
}

}  // namespace gputrain::cli

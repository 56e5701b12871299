#include "cli/main_entry.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "build_config.hpp"
#include "cli/commands.hpp"
#include "cli/console_sink.hpp"
#include "cli/flag_checks.hpp"
#include "cli/usage_errors.hpp"
#include "core/error.hpp"
#include "core/utf8.hpp"

namespace gputrain::cli {

namespace {

// A UTF-8 character starts at out[i] (not a continuation byte 10xxxxxx).
bool starts_character(const std::string& out, size_t i) {
    return i >= out.size() || (static_cast<unsigned char>(out[i]) & 0xc0) != 0x80;
}

// An error is one line of readable length: control characters and bytes
// that are not UTF-8 (a key or value with a newline, raw bytes of a binary
// file) are shown escaped, and a message that quotes a huge input loses its
// middle, keeping its start (what failed) and its end (what to do).
std::string one_line(const std::string& text) {
    constexpr size_t kHead = 1400, kTail = 500;
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        const auto u = static_cast<unsigned char>(c);
        char hex[8];
        if (u >= 0x80) {
            const size_t n = utf8_sequence_length(text, i);
            if (n == 0) {
                std::snprintf(hex, sizeof hex, "\\x%02x", u);
                out += hex;
            } else {
                out.append(text, i, n);
                i += n - 1;
            }
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (u < 0x20 || u == 0x7f) {
            std::snprintf(hex, sizeof hex, "\\x%02x", u);
            out += hex;
        } else {
            out += c;
        }
    }
    if (out.size() <= kHead + kTail + 100) return out;
    size_t head = kHead, tail = out.size() - kTail;
    while (!starts_character(out, head)) --head;
    while (!starts_character(out, tail)) ++tail;
    return out.substr(0, head) + " ... (" + std::to_string(tail - head) + " bytes left out) ... " + out.substr(tail);
}

}  // namespace

namespace {

// Standard streams the caller closed ("fit ... >&-") are opened on /dev/null:
// otherwise the next file opened (the run dir's lock, a checkpoint) would get
// descriptor 1 or 2, and the console output would be written into it.
void open_closed_standard_streams() {
    for (int fd = 0; fd <= 2; ++fd) {
        if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
        const int opened = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
        if (opened >= 0 && opened != fd) ::close(opened);  // a lower one was free: leave it
    }
}

std::string error_prefix;  // set_error_prefix's

}  // namespace

void set_error_prefix(const std::string& prefix) { error_prefix = prefix; }

int main_entry(int argc, char** argv) {
    open_closed_standard_streams();
    auto logger = std::make_shared<spdlog::logger>("gputrain", std::make_shared<ConsoleSink>());
    logger->set_pattern("%v");
    spdlog::set_default_logger(logger);

    CLI::App app{"gputrain: train neural networks described in YAML, data-parallel on every GPU (or the CPU)"};
    app.set_version_flag("--version", std::string("gputrain ") + GPUTRAIN_VERSION);
    app.require_subcommand(1);
    app.footer("Run 'gputrain COMMAND --help' for a command's options. Exit codes: 0 ok, 1 runtime failure, "
               "2 usage or config error.");
    // The order --help and the "unknown command" error list them in.
    const Action fit = add_fit_command(app);
    const Action evaluate = add_evaluate_command(app);
    const Action predict = add_predict_command(app);
    const Action generate = add_generate_command(app);
    const Action export_onnx = add_export_command(app);
    const Action summary = add_summary_command(app);
    const Action data = add_data_command(app);
    const Action bench = add_bench_command(app);
    const Action lr_find = add_lr_find_command(app);
    const Action devices = add_devices_command(app);

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        const std::vector<std::string> args(argv + std::min(argc, 1), argv + argc);
        std::string message = e.what();
        try {
            message = usage_error_message(app, e, args);
        } catch (const std::exception&) {
            // The hint is a courtesy: CLI11's own words still name the problem.
        }
        std::fprintf(stderr, "gputrain: error: %s\n", one_line(message).c_str());
        return 2;
    }

    if (app.got_subcommand("fit") &&
        empty_value_given(std::vector<std::string>(argv + std::min(argc, 1), argv + argc), "--resume")) {
        std::fprintf(stderr, "gputrain: error: --resume: is empty; give a checkpoint path, or --resume alone for the "
                             "run dir's latest checkpoint\n");
        return 2;
    }
    try {
        if (app.got_subcommand("fit")) return fit();
        if (app.got_subcommand("evaluate")) return evaluate();
        if (app.got_subcommand("predict")) return predict();
        if (app.got_subcommand("generate")) return generate();
        if (app.got_subcommand("export")) return export_onnx();
        if (app.got_subcommand("summary")) return summary();
        if (app.got_subcommand("data")) return data();
        if (app.got_subcommand("bench")) return bench();
        if (app.got_subcommand("lr-find")) return lr_find();
        return devices();
    } catch (const Error& e) {
        std::fflush(stdout);
        std::fprintf(stderr, "%sgputrain: %s: %s\n", error_prefix.c_str(), e.label(), one_line(e.what()).c_str());
        return e.exit_code();
    } catch (const std::bad_alloc&) {
        std::fflush(stdout);
        std::fprintf(stderr, "%sgputrain: error: out of memory; reduce training.batch_size or the model size\n",
                     error_prefix.c_str());
        return 1;
    } catch (const std::length_error&) {  // a container asked for more than it can ever hold
        std::fflush(stdout);
        std::fprintf(stderr,
                     "%sgputrain: error: out of memory: a buffer too large to allocate; reduce "
                     "training.batch_size, the model size or the data set\n",
                     error_prefix.c_str());
        return 1;
    } catch (const std::exception& e) {
        std::fflush(stdout);
        std::fprintf(stderr, "%sgputrain: error: %s\n", error_prefix.c_str(), one_line(e.what()).c_str());
        return 1;
    }
}

}  // namespace gputrain::cli

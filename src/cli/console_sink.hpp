// The console's log sink: info and below to stdout with the progress and the
// results, warnings and errors to stderr (as Keras' and PyTorch's warnings
// go), so that `gputrain predict > out.csv` or `fit | tee log` keep them
// apart. stdout is flushed before a warning, so that on a terminal the two
// keep the order they were written in.
#pragma once

#include <spdlog/sinks/base_sink.h>

#include <cstdio>
#include <mutex>

namespace gputrain::cli {

class ConsoleSink final : public spdlog::sinks::base_sink<std::mutex> {
protected:
    void sink_it_(const spdlog::details::log_msg& msg) override {
        spdlog::memory_buf_t text;
        formatter_->format(msg, text);
        std::FILE* stream = msg.level >= spdlog::level::warn ? stderr : stdout;
        if (stream == stderr) std::fflush(stdout);
        std::fwrite(text.data(), 1, text.size(), stream);
        std::fflush(stream);  // a line is out once logged, even if the process dies next (spdlog's own sinks do so)
    }
    void flush_() override {
        std::fflush(stdout);
        std::fflush(stderr);
    }
};

}  // namespace gputrain::cli

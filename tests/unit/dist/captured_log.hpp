// The default spdlog logger's lines, captured while a CapturedLog lives
// (the stall warnings' tests).
#pragma once

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace test_log {

using Clock = std::chrono::steady_clock;

// The default logger's lines while it lives, each with when it was logged.
class CapturedLog {
public:
    struct Line {
        std::string text;
        Clock::time_point at;
    };

    CapturedLog() : saved_(spdlog::default_logger()), sink_(std::make_shared<Sink>()) {
        auto logger = std::make_shared<spdlog::logger>("stall-test", sink_);
        logger->set_pattern("%v");
        spdlog::set_default_logger(logger);
    }
    ~CapturedLog() { spdlog::set_default_logger(saved_); }

    // The lines so far (a copy: a thread may still be logging).
    std::vector<Line> lines() const { return sink_->lines(); }

private:
    class Sink : public spdlog::sinks::base_sink<std::mutex> {  // base_sink holds mutex_ around sink_it_
    public:
        std::vector<Line> lines() {
            std::lock_guard<std::mutex> lock(mutex_);
            return lines_;
        }

    protected:
        void sink_it_(const spdlog::details::log_msg& msg) override {
            spdlog::memory_buf_t formatted;
            formatter_->format(msg, formatted);
            std::string text = fmt::to_string(formatted);
            while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
            lines_.push_back({text, Clock::now()});
        }
        void flush_() override {}

    private:
        std::vector<Line> lines_;
    };

    std::shared_ptr<spdlog::logger> saved_;
    std::shared_ptr<Sink> sink_;
};

}  // namespace test_log

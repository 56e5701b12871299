#include "dist/collective_watch.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "dist/stall_watch.hpp"

namespace gputrain::dist {

namespace {

std::string joined(const std::vector<std::string>& names) {
    std::string text;
    for (size_t i = 0; i < names.size(); ++i)
        text += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
    return text;
}

// Communicator with every collective noted in a CollectiveWatch.
class WatchedCommunicator final : public Communicator {
public:
    WatchedCommunicator(std::unique_ptr<Communicator> inner, std::shared_ptr<CollectiveWatch> watch, int index)
        : inner_(std::move(inner)), watch_(std::move(watch)), index_(index) {}
    int rank() const override { return inner_->rank(); }
    int size() const override { return inner_->size(); }
    void allreduce_sum(float* data, size_t count) override {
        watch_->issued(index_, "an all-reduce");
        waited([&] { inner_->allreduce_sum(data, count); });
    }
    PendingAllreduce allreduce_sum_start(float* data, size_t count) override {
        watch_->issued(index_, "an all-reduce");
        return waited([&] { return inner_->allreduce_sum_start(data, count); });  // NCCL may block in the issue
    }
    void allreduce_wait(PendingAllreduce pending) override {
        waited([&] { inner_->allreduce_wait(pending); });
    }
    std::optional<bool> allreduce_wait_finite(PendingAllreduce pending) override {
        return waited([&] { return inner_->allreduce_wait_finite(pending); });
    }
    void allreduce_sum_host(double* data, size_t count) override {
        watch_->issued(index_, "a host all-reduce");
        waited([&] { inner_->allreduce_sum_host(data, count); });
    }
    void barrier() override {
        watch_->issued(index_, "a barrier");
        waited([&] { inner_->barrier(); });
    }
    void abort() override { inner_->abort(); }

private:
    // Runs `wait` noted as a wait; a timeout's error gets what the watch last
    // saw of the other workers, while this replica is still in that collective.
    template <typename Wait>
    std::invoke_result_t<Wait> waited(Wait wait) {
        const Waiting waiting(*this);
        return annotated(wait);
    }
    // Runs `call`; a timeout's error gets what the watch last saw (see waited).
    template <typename Call>
    std::invoke_result_t<Call> annotated(Call call) {
        try {
            return call();
        } catch (const CollectiveTimeout& e) {
            const std::string seen = watch_->last_missing(index_);
            if (seen.empty()) throw;
            throw CollectiveTimeout(std::string(e.what()) + "; the stall watchdog last saw: " + seen);
        }
    }
    struct Waiting {
        explicit Waiting(WatchedCommunicator& c) : c(c) { c.watch_->wait_begins(c.index_); }
        ~Waiting() { c.watch_->wait_ends(c.index_); }
        WatchedCommunicator& c;
    };
    std::unique_ptr<Communicator> inner_;
    std::shared_ptr<CollectiveWatch> watch_;
    int index_;
};

}  // namespace

CollectiveWatch::CollectiveWatch(std::vector<std::string> names, double interval_seconds, int worker, int workers,
                                 bool thread, std::unique_ptr<PeerChannel> peers)
    : names_(std::move(names)),
      interval_(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(interval_seconds))),
      worker_(worker),
      workers_(workers),
      progress_(std::make_unique<Progress[]>(names_.size())),
      peers_(workers > 1 ? std::move(peers) : nullptr) {
    if (thread && interval_seconds > 0) thread_ = std::thread([this] { run(); });
}

CollectiveWatch::~CollectiveWatch() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
    }
    stop_changed_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void CollectiveWatch::issued(int i, const char* what) {
    Progress& p = progress_[static_cast<size_t>(i)];
    p.what.store(what, std::memory_order_relaxed);
    p.issued.store(p.issued.load(std::memory_order_relaxed) + 1, std::memory_order_release);  // only replica i writes it
}

void CollectiveWatch::run() {
    // A few looks an interval, at most 4 a second: the first line comes
    // within an interval and a tick of the counts' last change. With other
    // workers to answer, 20 a second: MPI may need two looks to see a
    // question (the first progresses it), and the asker waits half an interval.
    const auto tick = std::min<Clock::duration>(interval_ / 4, std::chrono::milliseconds(peers_ ? 50 : 250));
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_changed_.wait_for(lock, tick, [this] { return stop_; })) {
        lock.unlock();
        try {
            if (peers_) peers_->answer(state());
            const std::string line = check(Clock::now());
            if (!line.empty()) spdlog::warn("{}", line);
        } catch (const std::exception& e) {
            // An MPI error (a worker gone): the watch goes on without asking the
            // others; the collective's own timeout reports the failure.
            if (peers_) spdlog::warn("warning: stall watchdog: stopped asking the other workers: {}", e.what());
            peers_.reset();
        }
        lock.lock();
    }
}

PeerState CollectiveWatch::state() const {
    PeerState s{UINT64_MAX, true};
    for (size_t i = 0; i < names_.size(); ++i) {
        s.issued = std::min<uint64_t>(s.issued, progress_[i].issued.load(std::memory_order_acquire));
        s.waiting = s.waiting && progress_[i].waiting.load(std::memory_order_acquire);
    }
    if (names_.empty()) s = PeerState{};
    return s;
}

std::string CollectiveWatch::peers_text(uint64_t last) {
    if (!peers_)
        return "a replica of another worker has not arrived (still computing, stopped, hung or gone): the workers "
               "that log no such line are the ones missing";
    // Half an interval for the answers, a second at most: the next line is due an interval after this one.
    const auto wait = std::min<Clock::duration>(interval_ / 2, std::chrono::seconds(1));
    const std::vector<std::optional<PeerState>> answers = peers_->ask(state(), wait);
    std::vector<std::string> missing, arrived;
    for (int w = 0; w < workers_; ++w) {
        if (w == worker_) continue;
        const auto& a = w < static_cast<int>(answers.size()) ? answers[static_cast<size_t>(w)] : std::nullopt;
        const std::string name = "worker " + std::to_string(w);
        if (!a)
            missing.push_back(name + " (no answer: stopped, hung or gone)");
        else if (a->issued < last)
            missing.push_back(name + " (at #" + std::to_string(a->issued) + ": still computing or hung)");
        else
            arrived.push_back(name + " (#" + std::to_string(a->issued) + (a->waiting ? "" : ", not waiting") + ")");
    }
    const std::string text =
        missing.empty() ? "every other worker has arrived (" + joined(arrived) +
                              "): the collective itself hangs (NCCL_DEBUG=INFO shows what NCCL does)"
                        : "not arrived: " + joined(missing) + (arrived.empty() ? "" : "; arrived: " + joined(arrived));
    const std::lock_guard<std::mutex> lock(last_mutex_);
    last_collective_ = last;
    last_missing_ = text;
    return text;
}

std::string CollectiveWatch::last_missing(int i) {
    const uint64_t now_in = progress_[static_cast<size_t>(i)].issued.load(std::memory_order_acquire);
    const std::lock_guard<std::mutex> lock(last_mutex_);
    return last_collective_ == now_in ? last_missing_ : "";
}

std::string CollectiveWatch::check(Clock::time_point now) {
    const size_t n = names_.size();
    std::vector<uint64_t> counts(n);
    bool all_waiting = true;
    for (size_t i = 0; i < n; ++i) {
        counts[i] = progress_[i].issued.load(std::memory_order_acquire);
        all_waiting = all_waiting && progress_[i].waiting.load(std::memory_order_acquire);
    }
    if (!started_ || counts != seen_ || all_waiting != seen_all_waiting_) {
        started_ = true;
        seen_ = counts;
        seen_all_waiting_ = all_waiting;
        since_ = now;
        reports_ = 0;
        return "";
    }
    if (interval_ <= Clock::duration::zero() || now - since_ < interval_ * (reports_ + 1)) return "";
    const auto [low, high] = std::minmax_element(counts.begin(), counts.end());
    const uint64_t last = *high;
    const bool lagging = *low < last;
    // Issued alike and not waiting: between collectives (evaluating, writing a checkpoint), not a stall.
    if (!lagging && !all_waiting) return "";
    ++reports_;
    const auto waited = static_cast<long long>(std::floor(std::chrono::duration<double>(now - since_).count()));
    std::vector<std::string> in, out;
    const char* what = "";
    for (size_t i = 0; i < n; ++i) {
        if (counts[i] == last) {
            in.push_back(names_[i]);
            if (!*what) what = progress_[i].what.load(std::memory_order_relaxed);
        } else {
            out.push_back(names_[i] + " (at #" + std::to_string(counts[i]) + ")");
        }
    }
    const std::string where = fmt::format("{} #{} ({})", what, last, step_text());
    const std::string worker = workers_ > 1 ? fmt::format(" of worker {}", worker_) : "";
    if (lagging)
        return fmt::format("warning: stall: {}{} {} waited {} s in {}; {} {} not arrived (still computing, stopped "
                           "or hung)",
                           joined(in), worker, in.size() == 1 ? "has" : "have", waited, where, joined(out),
                           out.size() == 1 ? "has" : "have");
    if (workers_ > 1)
        return fmt::format("warning: stall: every replica of worker {} ({}) has waited {} s in {}; {}", worker_,
                           joined(in), waited, where, peers_text(last));
    return fmt::format("warning: stall: every replica ({}) has waited {} s in {}, which has not completed: the "
                       "collective itself hangs (NCCL_DEBUG=INFO shows what NCCL does)",
                       joined(in), waited, where);
}

std::vector<std::unique_ptr<Communicator>> watch_communicators(std::vector<std::unique_ptr<Communicator>> comms,
                                                               std::vector<std::string> names,
                                                               double stall_warning_seconds, int worker,
                                                               int workers, std::unique_ptr<PeerChannel> peers) {
    if (stall_warning_seconds <= 0 || (comms.size() < 2 && workers < 2)) return comms;
    auto watch = std::make_shared<CollectiveWatch>(std::move(names), stall_warning_seconds, worker, workers,
                                                   /*thread=*/true, std::move(peers));
    std::vector<std::unique_ptr<Communicator>> out;
    for (size_t i = 0; i < comms.size(); ++i)
        out.push_back(std::make_unique<WatchedCommunicator>(std::move(comms[i]), watch, static_cast<int>(i)));
    return out;
}

}  // namespace gputrain::dist

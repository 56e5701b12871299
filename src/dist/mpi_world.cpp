// The MPI implementation of World. Collectives are nonblocking MPI calls
// polled with a deadline (MPI_Iallreduce + MPI_Test), so a worker that died or
// hangs turns into an error after strategy.timeout_seconds instead of a hang.
// Errors come back as return codes (MPI_ERRORS_RETURN), never as MPI's own abort.
//
// The stall watchdog: a collective that has waited stall_warning_seconds
// asks every other worker which collective it waits in (a query message on a
// communicator of its own, so it never matches a collective). Workers answer
// from their polling loops, that is only while they wait in a collective; so
// the workers that answer with the same collective number have arrived, and
// the others have not: they are still computing, stopped, hung or gone. The
// waiting worker then logs one line naming both sets, and again every
// interval, until the collective completes or timeout_seconds ends the run.
// At the deadline one more round of the question names, in the error, the
// workers that did not answer.
//
// The same questions, on a communicator of their own, serve the watch of
// collectives that do not pass through MPI (NCCL across workers: a
// PeerChannel, answered by each worker's CollectiveWatch thread). That thread
// calls MPI too, so every MPI call after MPI_Init_thread holds mpi_: one
// call at a time is what MPI_THREAD_SERIALIZED allows. Every call is
// nonblocking (the collectives are polled), so no thread holds it long.
#include <mpi.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <array>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "dist/mpi_world.hpp"
#include "dist/stall_watch.hpp"

namespace gputrain::dist {

namespace {

std::string mpi_error_text(int code) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(code, text, &length);
    return std::string(text, static_cast<size_t>(length));
}

class MpiWorld final : public World {
public:
    MpiWorld(double timeout_seconds, double stall_warning_seconds)
        : timeout_seconds_(timeout_seconds), stall_warning_seconds_(stall_warning_seconds) {
        int initialized = 0;
        MPI_Initialized(&initialized);
        if (initialized) throw Error("internal: MPI was initialized twice in one process");
        // Only one thread calls MPI at a time (the first replica's, or a
        // CollectiveWatch's answering for the process; mpi_ sees to that),
        // but not always the same one: SERIALIZED is the level that allows that.
        int provided = 0;
        check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
        if (provided < MPI_THREAD_SERIALIZED) {
            MPI_Finalize();
            throw Error("this MPI library does not support MPI_THREAD_SERIALIZED (it provides level " +
                        std::to_string(provided) + "); use an MPI built with thread support");
        }
        check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
        check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
        check(MPI_Comm_dup(comm_, &watch_), "MPI_Comm_dup");
        check(MPI_Comm_set_errhandler(watch_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
        check(MPI_Comm_dup(comm_, &peers_), "MPI_Comm_dup");
        check(MPI_Comm_set_errhandler(peers_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
        check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
        check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
        // The processes sharing this machine's memory: they share its GPUs too.
        MPI_Comm node = MPI_COMM_NULL;
        check(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
        check(MPI_Comm_rank(node, &local_rank_), "MPI_Comm_rank");
        check(MPI_Comm_size(node, &local_size_), "MPI_Comm_size");
        MPI_Comm_free(&node);
    }

    ~MpiWorld() override {
        finish_watch_messages();
        MPI_Comm_free(&peers_);
        MPI_Comm_free(&watch_);
        MPI_Comm_free(&comm_);
        MPI_Finalize();
    }

    int rank() const override { return rank_; }
    int size() const override { return size_; }
    int local_rank() const override { return local_rank_; }
    int local_size() const override { return local_size_; }
    double timeout_seconds() const override { return timeout_seconds_; }

    void allreduce_sum(float* data, size_t count) override { allreduce(data, count, MPI_FLOAT); }
    void allreduce_sum(double* data, size_t count) override { allreduce(data, count, MPI_DOUBLE); }

    void broadcast(void* data, size_t bytes, int root) override {
        auto* p = static_cast<char*>(data);
        for (size_t done = 0; done < bytes; done += kMaxChunk) {
            const int n = static_cast<int>(std::min(kMaxChunk, bytes - done));
            MPI_Request request;
            {
                const std::lock_guard<std::mutex> lock(mpi_);
                check(MPI_Ibcast(p + done, n, MPI_BYTE, root, comm_, &request), "MPI_Ibcast");
            }
            wait(request, "broadcast");
        }
    }

    void cancel() override { cancelled_.store(true); }

    std::unique_ptr<PeerChannel> peer_channel() override { return std::make_unique<Peers>(*this); }

    [[noreturn]] void abort_job(int exit_code) override {
        MPI_Abort(MPI_COMM_WORLD, exit_code);
        std::_Exit(exit_code);  // MPI_Abort does not return; this is in case an implementation does
    }

private:
    static constexpr size_t kMaxChunk = INT_MAX / 8;  // MPI counts are ints

    template <typename T>
    void allreduce(T* data, size_t count, MPI_Datatype type) {
        for (size_t done = 0; done < count; done += kMaxChunk) {
            const int n = static_cast<int>(std::min(kMaxChunk, count - done));
            MPI_Request request;
            {
                const std::lock_guard<std::mutex> lock(mpi_);
                check(MPI_Iallreduce(MPI_IN_PLACE, data + done, n, type, MPI_SUM, comm_, &request),
                      "MPI_Iallreduce");
            }
            wait(request, "all-reduce");
        }
    }

    void wait(MPI_Request& request, const char* what) {
        using clock = std::chrono::steady_clock;
        ++collective_;
        const auto start = clock::now();
        const auto deadline = start + std::chrono::duration<double>(timeout_seconds_);
        const bool watching = stall_warning_seconds_ > 0 && size_ > 1;
        const auto interval = std::chrono::duration_cast<clock::duration>(
            std::chrono::duration<double>(stall_warning_seconds_));
        auto next_query = start + interval;
        Inquiry inquiry;
        // The last stall warning's answers (Inquiry::in). A worker silent there
        // that answers only at the deadline (mpirun resumes stopped workers
        // when it ends a job) was still the one missing.
        std::vector<unsigned long long> reported;
        for (;;) {
            std::unique_lock<std::mutex> lock(mpi_);
            int done = 0;
            check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
            if (done) return;
            if (cancelled_.load()) throw Error("stopped because another replica failed");
            const auto now = clock::now();
            if (now > deadline) {
                lock.unlock();
                if (last_inquiry(request, inquiry)) return;
                throw Error(timeout_text(inquiry, reported, what));
            }
            answer_queries();
            if (watching) {
                if (!inquiry.open && now >= next_query) {
                    ask_everyone(inquiry);
                    inquiry.waited = std::chrono::duration<double>(now - start).count();
                    inquiry.until = now + std::min(interval / 2, clock::duration(std::chrono::seconds(1)));
                }
                if (inquiry.open) {
                    collect_answers(inquiry);
                    if (inquiry.answered == size_ - 1 || now >= inquiry.until) {
                        report_stall(inquiry, what);
                        reported = inquiry.in;
                        inquiry.open = false;
                        while (next_query <= now) next_query += interval;
                    }
                }
            }
            lock.unlock();
            // MPI progresses the collective inside MPI_Test: poll tightly at
            // first (a step's all-reduce is short), then back off.
            if (now - start < std::chrono::milliseconds(2))
                std::this_thread::yield();
            else
                std::this_thread::sleep_for(std::chrono::microseconds(100));
        }
    }

    // The PeerChannel: a question carries its number; an answer carries it
    // back with the answerer's PeerState. On peers_, so that neither ever
    // matches the MPI watchdog's own messages.
    static constexpr int kPeerQuestionTag = 3, kPeerAnswerTag = 4;
    class Peers final : public PeerChannel {
    public:
        explicit Peers(MpiWorld& world) : w_(world) {}

        void answer(PeerState mine) override {
            const std::lock_guard<std::mutex> lock(w_.mpi_);
            answer_locked(mine);
        }

        std::vector<std::optional<PeerState>> ask(PeerState mine, std::chrono::steady_clock::duration wait) override {
            std::vector<std::optional<PeerState>> out(static_cast<size_t>(w_.size_));
            unsigned long long question = 0;
            {
                const std::lock_guard<std::mutex> lock(w_.mpi_);
                question = ++w_.question_;
                for (int r = 0; r < w_.size_; ++r)
                    if (r != w_.rank_) w_.send_on(w_.peers_, {question, 0, 0}, r, kPeerQuestionTag);
            }
            const auto until = std::chrono::steady_clock::now() + wait;
            int answered = 0;
            while (answered < w_.size_ - 1 && std::chrono::steady_clock::now() < until) {
                {
                    const std::lock_guard<std::mutex> lock(w_.mpi_);
                    answer_locked(mine);  // two workers asking each other must not wait for each other
                    std::array<unsigned long long, 3> m{};
                    int from = 0;
                    while (w_.receive_on(w_.peers_, kPeerAnswerTag, m, from)) {
                        auto& slot = out[static_cast<size_t>(from)];
                        if (m[0] != question || slot) continue;  // to an earlier question
                        slot = PeerState{m[1], m[2] != 0};
                        ++answered;
                    }
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
            return out;
        }

    private:
        void answer_locked(PeerState mine) {
            std::array<unsigned long long, 3> q{};
            int from = 0;
            while (w_.receive_on(w_.peers_, kPeerQuestionTag, q, from))
                w_.send_on(w_.peers_, {q[0], mine.issued, mine.waiting ? 1ull : 0ull}, from, kPeerAnswerTag);
        }
        MpiWorld& w_;
    };

    // ---- The stall watchdog's messages (on watch_): a query carries the
    // asker's collective number; an answer carries that number back and the
    // answerer's own (0: not in a collective).
    static constexpr int kQueryTag = 1, kAnswerTag = 2;
    struct Inquiry {
        bool open = false;
        std::chrono::steady_clock::time_point until;
        std::vector<unsigned long long> in;  // by rank: the collective it waits in; 0 = no answer
        int answered = 0;
        double waited = 0;  // seconds the collective had waited when the query went out
        unsigned long long number = 0;  // this query's (queries_), which its answers carry back
    };

    // With mpi_ held (as every function below that calls MPI). Messages are
    // three numbers; sends stay in sent_ (a list: their buffers must not
    // move) until they complete. One that failed is dropped: its error is
    // not the next caller's.
    void send_on(MPI_Comm comm, const std::array<unsigned long long, 3>& message, int to, int tag) {
        for (auto it = sent_.begin(); it != sent_.end();) {
            int done = 0;
            if (MPI_Test(&it->request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || done)
                it = sent_.erase(it);
            else
                ++it;
        }
        sent_.push_back({message, MPI_REQUEST_NULL});
        Sent& s = sent_.back();
        const int code = MPI_Isend(s.message.data(), 3, MPI_UNSIGNED_LONG_LONG, to, tag, comm, &s.request);
        if (code != MPI_SUCCESS) {
            sent_.pop_back();
            check(code, "MPI_Isend");
        }
    }

    // Receives one pending message with `tag` on `comm`, if any: true and its sender.
    bool receive_on(MPI_Comm comm, int tag, std::array<unsigned long long, 3>& message, int& from) {
        int pending = 0;
        MPI_Status status;
        check(MPI_Iprobe(MPI_ANY_SOURCE, tag, comm, &pending, &status), "MPI_Iprobe");
        if (!pending) return false;
        from = status.MPI_SOURCE;
        check(MPI_Recv(message.data(), 3, MPI_UNSIGNED_LONG_LONG, from, tag, comm, MPI_STATUS_IGNORE), "MPI_Recv");
        return true;
    }

    // A query: {the asker's collective, 0, the query's number}; its answer:
    // {the same collective, the answerer's own (0: none), the same number}.
    void answer_queries() {
        std::array<unsigned long long, 3> query{};
        int from = 0;
        while (receive_on(watch_, kQueryTag, query, from)) send_on(watch_, {query[0], collective_, query[2]}, from, kAnswerTag);
    }

    void ask_everyone(Inquiry& inquiry) {
        inquiry.open = true;
        inquiry.in.assign(static_cast<size_t>(size_), 0);
        inquiry.in[static_cast<size_t>(rank_)] = collective_;
        inquiry.answered = 0;
        inquiry.number = ++queries_;
        for (int r = 0; r < size_; ++r)
            if (r != rank_) send_on(watch_, {collective_, 0, inquiry.number}, r, kQueryTag);
    }

    void collect_answers(Inquiry& inquiry) {
        std::array<unsigned long long, 3> answer{};
        int from = 0;
        while (receive_on(watch_, kAnswerTag, answer, from)) {
            // Only this query's: a late answer to an earlier one (a worker
            // resumed from SIGSTOP answers every query it missed) says nothing now.
            if (answer[0] != collective_ || answer[2] != inquiry.number) continue;
            auto& in = inquiry.in[static_cast<size_t>(from)];
            if (in != 0) continue;
            in = answer[1];
            ++inquiry.answered;
        }
    }

    // A worker that answered waits in a collective: this one, or another (a
    // collective can complete on some workers before others, so the ones
    // blocked by the same missing worker may be one apart); one that did not
    // answer is not in any.
    void report_stall(const Inquiry& inquiry, const char* what) {
        std::string silent, waiting;
        int silent_count = 0;
        for (int r = 0; r < size_; ++r) {
            const unsigned long long in = inquiry.in[static_cast<size_t>(r)];
            if (in == 0) {
                silent += (silent.empty() ? "" : ", ") + std::to_string(r);
                ++silent_count;
            } else {
                waiting += (waiting.empty() ? "" : ", ") + std::string("worker ") + std::to_string(r) + " (#" +
                           std::to_string(in) + ")";
            }
        }
        spdlog::warn("warning: stall: worker {} has waited {:.0f} s in {} #{} ({}) {}; waiting in collectives: {}; the "
                     "run ends after {} s (strategy.timeout_seconds)",
                     rank_, std::floor(inquiry.waited), what, collective_, step_text(),
                     silent_count == 0 ? std::string("although every worker answers")
                                       : "for worker" + std::string(silent_count == 1 ? " " : "s ") + silent +
                                             " (no answer: still computing, stopped, hung or gone)",
                     waiting, static_cast<long long>(timeout_seconds_));
    }

    // At the deadline: one more round of the watchdog's question (at most a
    // second), so that the error names the workers that did not answer. True
    // when the collective completed meanwhile after all.
    bool last_inquiry(MPI_Request& request, Inquiry& inquiry) {
        if (size_ < 2) return false;
        {
            const std::lock_guard<std::mutex> lock(mpi_);
            if (!inquiry.open) ask_everyone(inquiry);
        }
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
        while (inquiry.answered < size_ - 1 && std::chrono::steady_clock::now() < until) {
            {
                const std::lock_guard<std::mutex> lock(mpi_);
                int done = 0;
                check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
                if (done) return true;
                answer_queries();
                collect_answers(inquiry);
            }
            std::this_thread::sleep_for(std::chrono::microseconds(100));
        }
        return false;
    }

    // "worker 0 got no answer from worker 2 for 300 s in all-reduce #57
    // (epoch 2, step 31; strategy.timeout_seconds): ..."
    std::string timeout_text(const Inquiry& inquiry, const std::vector<unsigned long long>& reported,
                             const char* what) const {
        std::vector<int> silent;
        std::string waiting;
        for (int r = 0; r < size_ && !inquiry.in.empty(); ++r) {
            if (r == rank_) continue;
            const bool was_silent = static_cast<size_t>(r) < reported.size() && reported[static_cast<size_t>(r)] == 0;
            if (inquiry.in[static_cast<size_t>(r)] == 0 || was_silent)
                silent.push_back(r);
            else
                waiting += (waiting.empty() ? "" : ", ") + std::to_string(r) + " (#" +
                           std::to_string(inquiry.in[static_cast<size_t>(r)]) + ")";
        }
        std::string from = "the other workers";
        if (!silent.empty()) {
            from = silent.size() == 1 ? "worker " : "workers ";
            for (size_t i = 0; i < silent.size(); ++i)
                from += (i == 0 ? "" : i + 1 == silent.size() ? " and " : ", ") + std::to_string(silent[i]);
        }
        std::string text = "worker " + std::to_string(rank_) + " got no answer from " + from + " for " +
                           std::to_string(static_cast<long long>(timeout_seconds_)) + " s in " + what + " #" +
                           std::to_string(collective_) + " (" + step_text() + "; strategy.timeout_seconds): ";
        if (inquiry.in.empty())
            return text + "another worker died, hangs or cannot be reached";
        if (silent.empty())
            return "worker " + std::to_string(rank_) + "'s " + what + " #" + std::to_string(collective_) + " (" +
                   step_text() + ") did not complete within " +
                   std::to_string(static_cast<long long>(timeout_seconds_)) +
                   " s (strategy.timeout_seconds), though every other worker answers the watchdog (waiting in "
                   "collectives: worker" + (waiting.find(',') == std::string::npos ? " " : "s ") + waiting +
                   "): the collective itself hangs; look at the network, or raise strategy.timeout_seconds";
        text += silent.size() == 1 ? "it is stopped, hung or gone, or cannot be reached (if it is only slow, raise "
                                     "strategy.timeout_seconds)"
                                   : "they are stopped, hung or gone, or cannot be reached (if they are only slow, raise "
                                     "strategy.timeout_seconds)";
        if (!waiting.empty())
            text += std::string("; waiting as well: worker") + (waiting.find(',') == std::string::npos ? " " : "s ") +
                    waiting;
        return text;
    }

    // Before MPI_Finalize: answer what is left, let sends complete (a second at
    // most: a stopped peer never receives), free the rest.
    void finish_watch_messages() {
        const std::lock_guard<std::mutex> lock(mpi_);
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
        while (!sent_.empty() && std::chrono::steady_clock::now() < until) {
            int done = 0;
            if (MPI_Test(&sent_.front().request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || done)
                sent_.pop_front();
            else
                std::this_thread::sleep_for(std::chrono::microseconds(100));
        }  // (in order here: whatever is left after a second is freed below)
        for (Sent& s : sent_)
            if (s.request != MPI_REQUEST_NULL) MPI_Request_free(&s.request);
    }

    void check(int code, const char* call) const {
        if (code != MPI_SUCCESS)
            throw Error("worker " + std::to_string(rank_) + ": " + call + " failed: " + mpi_error_text(code));
    }

    double timeout_seconds_;
    double stall_warning_seconds_;
    MPI_Comm comm_ = MPI_COMM_NULL;
    MPI_Comm watch_ = MPI_COMM_NULL;  // the stall watchdog's messages
    unsigned long long collective_ = 0;  // collectives begun: the same numbers on every worker
    struct Sent {
        std::array<unsigned long long, 3> message;
        MPI_Request request;
    };
    std::list<Sent> sent_;  // watchdog messages in flight (their buffers must stay put)
    unsigned long long queries_ = 0;  // the watchdog's queries sent
    MPI_Comm peers_ = MPI_COMM_NULL;  // PeerChannel's questions and answers
    std::mutex mpi_;                  // held around every MPI call (see the top of this file)
    unsigned long long question_ = 0;  // PeerChannel questions asked
    int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
    std::atomic<bool> cancelled_{false};
};

}  // namespace

bool mpi_built() { return true; }

std::unique_ptr<World> join_mpi_world(double timeout_seconds, double stall_warning_seconds) {
    return std::make_unique<MpiWorld>(timeout_seconds, stall_warning_seconds);
}

}  // namespace gputrain::dist

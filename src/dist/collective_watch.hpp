// The stall watchdog for communicators whose waits cannot look around: NCCL
// and the device communicator block in CUDA (a stream synchronisation, or not
// at all until a later one), so no waiting rank can time itself and ask who
// is missing, as LocalCommunicator and the MPI world do. Instead each replica
// of the process notes every collective it issues and when its host waits
// for one (WatchedCommunicator does that around any Communicator), and a
// thread of the watch looks at those notes a few times a second. Horovod's
// rule: when the replicas' counts have not moved for
// strategy.stall_warning_seconds, it logs one line (and again every
// interval):
// - some replicas have issued collective #n and others have not: which
//   collective, the step, the replicas that have arrived and those that have
//   not (still computing, stopped or hung);
// - every replica has arrived and waits for it on the host: in one process
//   the collective itself hangs (the GPUs, NCCL); across workers a replica of
//   another worker is missing, which this worker cannot see: it asks the
//   other workers' watches for their state (a PeerChannel, over MPI) and
//   names those that do not answer (stopped, hung or gone), those behind
//   (still computing) and those that have arrived. Without a channel the
//   line says that the workers logging no such line are the missing ones.
// Replicas that have issued the same collectives and do not wait (an
// evaluation, a checkpoint being written) are not a stall.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dist/communicator.hpp"
#include "dist/peer_channel.hpp"

namespace gputrain::dist {

class CollectiveWatch {
public:
    using Clock = std::chrono::steady_clock;
    // `names[i]`: replica i of this process as the line names it ("replica 3
    // (cuda:1)"); `worker`/`workers`: this process among the workers (1: the
    // replicas are the whole group). interval_seconds: stall_warning_seconds.
    // `thread`: false for a watch that only check() drives (tests).
    // `peers`: the other workers' watches (several workers), or null.
    CollectiveWatch(std::vector<std::string> names, double interval_seconds, int worker = 0, int workers = 1,
                    bool thread = true, std::unique_ptr<PeerChannel> peers = nullptr);
    ~CollectiveWatch();
    CollectiveWatch(const CollectiveWatch&) = delete;
    CollectiveWatch& operator=(const CollectiveWatch&) = delete;

    // Replica `i` issues its next collective; `what` is a string literal ("an all-reduce").
    void issued(int i, const char* what);
    // Replica `i`'s host starts / stops waiting for a collective.
    void wait_begins(int i) { progress_[static_cast<size_t>(i)].waiting.store(true, std::memory_order_release); }
    void wait_ends(int i) { progress_[static_cast<size_t>(i)].waiting.store(false, std::memory_order_release); }

    // One look at the replicas at `now`, as the thread takes one every tick:
    // the warning line when one is due, else "". Called by one thread at a time.
    std::string check(Clock::time_point now);

    // What this worker's replicas are at, as other workers are told.
    PeerState state() const;

    // What the last look at the other workers found missing ("not arrived:
    // worker 2 (...); arrived: ..."), when replica `i` is still in the
    // collective it was taken in; else "". For a timeout's error.
    std::string last_missing(int i);

private:
    void run();
    // The end of the line when every replica of this worker waits: what the
    // other workers' watches say, or that they cannot be asked.
    std::string peers_text(uint64_t last);

    struct alignas(64) Progress {
        std::atomic<uint64_t> issued{0};
        std::atomic<const char*> what{""};
        std::atomic<bool> waiting{false};
    };
    std::vector<std::string> names_;
    Clock::duration interval_;
    int worker_, workers_;
    std::unique_ptr<Progress[]> progress_;
    std::unique_ptr<PeerChannel> peers_;
    // check()'s own: the last state seen, since when, and the lines logged for it.
    std::vector<uint64_t> seen_;
    bool seen_all_waiting_ = false;
    Clock::time_point since_{};
    int reports_ = 0;
    bool started_ = false;

    std::mutex last_mutex_;  // last_missing()'s, written by check()
    uint64_t last_collective_ = 0;
    std::string last_missing_;

    std::mutex mutex_;
    std::condition_variable stop_changed_;
    bool stop_ = false;
    std::thread thread_;
};

// `comms` (this process's replicas, replica i at index i) with every
// collective noted in one CollectiveWatch. stall_warning_seconds 0, or one
// replica in one process: `comms` as they are. `peers`: see CollectiveWatch.
std::vector<std::unique_ptr<Communicator>> watch_communicators(std::vector<std::unique_ptr<Communicator>> comms,
                                                               std::vector<std::string> names,
                                                               double stall_warning_seconds, int worker = 0,
                                                               int workers = 1,
                                                               std::unique_ptr<PeerChannel> peers = nullptr);

}  // namespace gputrain::dist

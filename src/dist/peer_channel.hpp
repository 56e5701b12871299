// PeerChannel: the stall watchdog's questions between workers, for the
// collectives that do not pass through the ProcessGroup (NCCL across workers
// blocks in CUDA, and no worker can see another's progress). Each worker's
// CollectiveWatch thread answers the others' questions a few times a second
// with its replicas' state; a worker whose replicas all wait asks every other
// worker for theirs. A worker that does not answer is stopped, hung or gone.
// Used by one thread per process (the watch's), apart from the collectives.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

namespace gputrain::dist {

// One worker's replicas, as its watch sees them.
struct PeerState {
    uint64_t issued = 0;   // collectives issued by its slowest replica
    bool waiting = false;  // every replica's host waits for one
};

class PeerChannel {
public:
    virtual ~PeerChannel() = default;
    // Answers every question already received with `mine`.
    virtual void answer(PeerState mine) = 0;
    // Asks every other worker for its state, and waits up to `wait` for the
    // answers, answering the others' questions with `mine` meanwhile. By
    // worker rank; nullopt for a worker that did not answer, and for this one.
    virtual std::vector<std::optional<PeerState>> ask(PeerState mine, std::chrono::steady_clock::duration wait) = 0;
};

}  // namespace gputrain::dist

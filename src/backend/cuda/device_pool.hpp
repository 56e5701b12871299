// DevicePool: a caching allocator for one GPU. Released blocks are kept and
// handed out again, so a training step that frees and re-allocates the same
// sizes never calls cudaMalloc/cudaFree (both synchronize the whole device).
// Not thread-safe: one pool per CudaBackend, used by that replica's thread.
// Blocks are reused in the order of the owner's single stream, which is what
// makes reuse safe without events.
#pragma once

#include <cstddef>
#include <map>
#include <unordered_map>

namespace gputrain {

struct DevicePoolStats {
    size_t cuda_malloc_calls = 0;  // blocks obtained from cudaMalloc so far
    size_t bytes_in_use = 0;       // in blocks handed out (rounded sizes)
    size_t bytes_cached = 0;       // in released blocks kept for reuse
};

class DevicePool {
public:
    explicit DevicePool(int device) : device_(device) {}
    ~DevicePool() { free_all(); }
    DevicePool(const DevicePool&) = delete;
    DevicePool& operator=(const DevicePool&) = delete;

    // A block of at least `bytes` (a cached one when one fits), or nullptr
    // when the GPU is out of memory. Other CUDA failures throw Error.
    void* try_allocate(size_t bytes);
    // Returns a block to the cache. Throws Error for a pointer it did not hand out.
    void release(void* ptr);
    // cudaFree every cached block; the owner first makes sure no queued work
    // still uses them (a stream synchronize).
    void release_cached();
    // cudaFree everything, handed out or cached (destruction).
    void free_all() noexcept;

    DevicePoolStats stats() const { return stats_; }

    // Block sizes are multiples of this (cudaMalloc aligns to 256 bytes anyway).
    static constexpr size_t kGranularityBytes = 512;
    // A cached block serves a request up to this many times smaller.
    static constexpr size_t kMaxWasteFactor = 2;

private:
    int device_;
    std::multimap<size_t, void*> cached_;         // block size -> block
    std::unordered_map<void*, size_t> in_use_;   // block -> block size
    DevicePoolStats stats_;
};

}  // namespace gputrain

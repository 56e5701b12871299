#include "backend/cuda/device_pool.hpp"

#include <algorithm>

#include "backend/cuda/cuda_check.hpp"

namespace gputrain {

void* DevicePool::try_allocate(size_t bytes) {
    const size_t size = (std::max<size_t>(bytes, 1) + kGranularityBytes - 1) / kGranularityBytes * kGranularityBytes;
    // Best fit among the cached blocks, but not a block much larger than asked
    // for: that would strand memory a later, larger request needs.
    const auto fit = cached_.lower_bound(size);
    if (fit != cached_.end() && fit->first / kMaxWasteFactor <= size) {
        const size_t block_size = fit->first;
        void* block = fit->second;
        cached_.erase(fit);
        stats_.bytes_cached -= block_size;
        in_use_.emplace(block, block_size);
        stats_.bytes_in_use += block_size;
        return block;
    }
    void* block = nullptr;
    const cudaError_t status = cudaMalloc(&block, size);
    if (status == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();  // not sticky: clear it so later checks do not see it
        return nullptr;
    }
    if (status != cudaSuccess) cuda_detail::throw_cuda_error(device_, "cudaMalloc", status);
    ++stats_.cuda_malloc_calls;
    in_use_.emplace(block, size);
    stats_.bytes_in_use += size;
    return block;
}

void DevicePool::release(void* ptr) {
    if (!ptr) return;
    const auto it = in_use_.find(ptr);
    if (it == in_use_.end())
        throw Error("cuda:" + std::to_string(device_) + ": release of a pointer this backend did not allocate");
    const size_t block_size = it->second;
    in_use_.erase(it);
    stats_.bytes_in_use -= block_size;
    cached_.emplace(block_size, ptr);
    stats_.bytes_cached += block_size;
}

void DevicePool::release_cached() {
    while (!cached_.empty()) {
        const auto first = cached_.begin();
        void* block = first->second;
        stats_.bytes_cached -= first->first;
        cached_.erase(first);  // before the call: a throwing cudaFree leaves no dangling entry
        CUDA_CHECK(device_, cudaFree(block));
    }
}

void DevicePool::free_all() noexcept {
    // Destruction path: errors (e.g. a context already lost) cannot be reported.
    for (const auto& [size, block] : cached_) (void)cudaFree(block);
    for (const auto& [block, size] : in_use_) (void)cudaFree(block);
    cached_.clear();
    in_use_.clear();
    stats_.bytes_cached = 0;
    stats_.bytes_in_use = 0;
}

}  // namespace gputrain

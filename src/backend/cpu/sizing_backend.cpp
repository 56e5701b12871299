#include "backend/cpu/sizing_backend.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <new>

#include "backend/gemm_input_cast.hpp"
#include "core/error.hpp"

namespace gputrain {

SizingBackend::~SizingBackend() {
    for (const auto& [address, length] : blocks_) ::munmap(address, length);
}

void* SizingBackend::allocate_bytes(size_t bytes) {
    const size_t length = std::max<size_t>(bytes, 1);
    // Address space only: inaccessible pages reserve neither memory nor swap.
    void* p = ::mmap(nullptr, length, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();  // more than the address space
    blocks_[p] = length;
    allocated_ += bytes;
    return p;
}

void SizingBackend::release(void* ptr) {
    const auto it = blocks_.find(ptr);
    if (it == blocks_.end()) throw Error("internal: SizingBackend: release of a block it did not hand out");
    ::munmap(it->first, it->second);
    blocks_.erase(it);
}

size_t SizingBackend::gemm_scratch_bytes(bool trans_a, bool trans_b, int m, int n, int k, int lda, int ldb) const {
    return casts_ ? cast_copy_layout(trans_a, trans_b, m, n, k, lda, ldb).total_bytes : 0;
}

void SizingBackend::reserve_gemm_scratch(size_t bytes) { reserved_ = std::max(reserved_, bytes); }

}  // namespace gputrain

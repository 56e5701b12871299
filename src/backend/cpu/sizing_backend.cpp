#include "backend/cpu/sizing_backend.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <new>

#include "backend/gemm_input_cast.hpp"
#include "core/error.hpp"

namespace gputrain {

SizingBackend::SizingBackend(bool casts) : casts_(casts), page_(static_cast<size_t>(::sysconf(_SC_PAGESIZE))) {}

SizingBackend::~SizingBackend() {
    for (void* address : blocks_) ::munmap(address, page_);
}

void* SizingBackend::allocate_bytes(size_t bytes) {
    // One inaccessible page a block, whatever its size: nothing is ever read
    // or written through these pointers (only offsets are taken from them),
    // so a model of any size is sized without memory, swap or address space
    // (a `ulimit -v` or 1000 layers of 64 GiB would run out of the last).
    void* p = ::mmap(nullptr, page_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    blocks_.insert(p);
    allocated_ += bytes;
    return p;
}

void SizingBackend::release(void* ptr) {
    if (blocks_.erase(ptr) == 0) throw Error("internal: SizingBackend: release of a block it did not hand out");
    ::munmap(ptr, page_);
}

size_t SizingBackend::gemm_scratch_bytes(bool trans_a, bool trans_b, int m, int n, int k, int lda, int ldb) const {
    return casts_ ? cast_copy_layout(trans_a, trans_b, m, n, k, lda, ldb).total_bytes : 0;
}

void SizingBackend::reserve_gemm_scratch(size_t bytes) { reserved_ = std::max(reserved_, bytes); }

}  // namespace gputrain

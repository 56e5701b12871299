// SizingBackend: a CpuBackend that hands out address space but no memory, so
// that a Model and its optimizer can be built only to learn their sizes
// (`gputrain summary`, the memory check before training, the config check)
// whatever they would take: a model of 100 GiB is sized in microseconds.
// Each block is one inaccessible page (PROT_NONE, no swap reserved), however
// large the block asked for: the copies and fills a constructor makes are
// skipped here, and anything else that touches a block is a bug that faults
// (at its start) instead of committing memory.
//
// `casts` sizes the 16-bit GEMM copies as a GPU makes them under bf16/fp16
// with training.cast_gemm_inputs (gemm()'s scratch and the layers' copies).
#pragma once

#include <cstddef>
#include <set>

#include "backend/cpu/cpu_backend.hpp"

namespace gputrain {

class SizingBackend final : public CpuBackend {
public:
    explicit SizingBackend(bool casts = false);
    ~SizingBackend() override;
    SizingBackend(const SizingBackend&) = delete;
    SizingBackend& operator=(const SizingBackend&) = delete;

    bool holds_data() const override { return false; }
    void* allocate_bytes(size_t bytes) override;
    void release(void* ptr) override;
    void copy_to_device(void*, const void*, size_t) override {}
    void upload(void*, const void*, size_t) override {}
    void fill(float*, size_t, float) override {}
    void queue(KernelTable::Fn, const void*, size_t) override {}

    size_t gemm_scratch_bytes(bool trans_a, bool trans_b, int m, int n, int k, int lda, int ldb) const override;
    size_t gemm_copy_bytes() const override { return casts_ ? 2 : 0; }
    void reserve_gemm_scratch(size_t bytes) override;

    // The bytes asked for so far (not counting released blocks), and the
    // largest gemm()'s scratch reserved.
    size_t allocated_bytes() const { return allocated_; }
    size_t reserved_gemm_scratch() const { return reserved_; }

private:
    bool casts_;
    size_t allocated_ = 0, reserved_ = 0;
    size_t page_;                 // the length mapped for every block
    std::set<void*> blocks_;
};

}  // namespace gputrain

// The CUDA backend's kernels of backend/ops/elementwise.hpp.
#include "backend/cuda/cuda_backend.hpp"
#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/cuda_kernels.hpp"
#include "backend/cuda/kernel_launch.cuh"
#include "backend/ops/elementwise.hpp"

namespace gputrain::cuda_kernels {

namespace {

__global__ void multiply_kernel(const float* a, const float* b, float* out, size_t n) {
    for (size_t i = thread_index(); i < n; i += thread_count()) out[i] = a[i] * b[i];
}

__global__ void accumulate_kernel(float* y, const float* x, size_t n) {
    for (size_t i = thread_index(); i < n; i += thread_count()) y[i] += x[i];
}

// One thread an element of the rows x cols block, over a grid-stride loop.
__global__ void copy_strided_kernel(float* dst, int ld_dst, const float* src, int ld_src, int cols, size_t n) {
    for (size_t i = thread_index(); i < n; i += thread_count()) {
        const size_t r = i / static_cast<size_t>(cols), c = i % static_cast<size_t>(cols);
        dst[r * static_cast<size_t>(ld_dst) + c] = src[r * static_cast<size_t>(ld_src) + c];
    }
}

cudaStream_t stream_of(Backend& backend) {
    return static_cast<cudaStream_t>(static_cast<CudaBackend&>(backend).stream_handle());
}
int device_of(Backend& backend) { return static_cast<CudaBackend&>(backend).device(); }

void multiply(Backend& b, const ops::Multiply& op) {
    CUDA_CHECK(device_of(b), launch_1d(stream_of(b), op.n, multiply_kernel, op.a, op.b, op.out, op.n));
}

void accumulate(Backend& b, const ops::Accumulate& op) {
    CUDA_CHECK(device_of(b), launch_1d(stream_of(b), op.n, accumulate_kernel, op.y, op.x, op.n));
}

void copy_strided(Backend& b, const ops::CopyStrided& op) {
    const size_t n = elements(op.rows, op.cols);
    CUDA_CHECK(device_of(b),
               launch_1d(stream_of(b), n, copy_strided_kernel, op.dst, op.ld_dst, op.src, op.ld_src, op.cols, n));
}

}  // namespace

void add_elementwise(KernelTable& table) {
    table.add<ops::Multiply, &multiply>();
    table.add<ops::Accumulate, &accumulate>();
    table.add<ops::CopyStrided, &copy_strided>();
}

}  // namespace gputrain::cuda_kernels

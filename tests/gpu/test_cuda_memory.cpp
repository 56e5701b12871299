// CudaBackend's memory, copies, pool, error texts and threading.
#include <cuda_runtime_api.h>

#include <exception>
#include <thread>

#include "backend/cuda/cuda_check.hpp"
#include "parity.hpp"

using namespace gpu_test;
using Catch::Matchers::Contains;

TEST_CASE("CudaBackend names its device and exposes its stream") {
    CudaBackend gpu(0);
    REQUIRE(gpu.name() == "cuda:0");
    REQUIRE(gpu.device() == 0);
    REQUIRE(gpu.stream_handle() != nullptr);

    const auto made = gputrain::make_cuda_backend(0);
    REQUIRE(made->name() == "cuda:0");
}

TEST_CASE("CudaBackend for a GPU that is not there throws an Error naming it") {
    const int count = gputrain::cuda_device_count();
    REQUIRE_THROWS_AS(CudaBackend(count), gputrain::Error);
    REQUIRE_THROWS_WITH(CudaBackend(count), Contains("cuda:" + std::to_string(count) + ": no such GPU (" +
                                                     std::to_string(count) + " visible"));
    REQUIRE_THROWS_WITH(CudaBackend(-1), Contains("cuda:-1: no such GPU"));
}

TEST_CASE("allocations are zeroed and copies round-trip") {
    CudaBackend gpu(0);
    const size_t n = GENERATE(as<size_t>{}, 1, 7, 33, 1000, 4097);
    Buffers buf(gpu);
    float* zero = buf.zeros<float>(n);
    REQUIRE(buf.download(zero, n) == std::vector<float>(n, 0.0f));

    const auto host = random_vector(n, 1);
    float* a = buf.upload(host);
    REQUIRE(buf.download(a, n) == host);

    float* b = buf.zeros<float>(n);
    gpu.copy(b, a, n * sizeof(float));
    REQUIRE(buf.download(b, n) == host);

    // Zero-byte copies are no-ops, also with null pointers.
    gpu.copy_to_device(nullptr, nullptr, 0);
    gpu.copy_to_host(nullptr, nullptr, 0);
    gpu.copy(nullptr, nullptr, 0);
    gpu.synchronize();
}

TEST_CASE("the pool reuses released blocks without cudaMalloc, and re-zeroes them") {
    CudaBackend gpu(0);
    const std::vector<size_t> sizes{1, 7, 33, 1000, 4097, 1u << 20};
    std::vector<float*> blocks;
    for (size_t n : sizes) blocks.push_back(gpu.allocate_floats(n));
    const auto after_first = gpu.pool_stats();
    REQUIRE(after_first.cuda_malloc_calls == sizes.size());
    REQUIRE(after_first.bytes_cached == 0);
    const size_t in_use = after_first.bytes_in_use;
    REQUIRE(in_use >= (4097 + 1000 + 33 + 7 + 1 + (1u << 20)) * sizeof(float));

    // A training step: dirty every block, release all, allocate the same sizes again.
    for (int step = 0; step < 3; ++step) {
        for (size_t i = 0; i < sizes.size(); ++i) gpu.fill(blocks[i], sizes[i], 5.0f);
        for (float* p : blocks) gpu.release(p);
        REQUIRE(gpu.pool_stats().bytes_in_use == 0);
        REQUIRE(gpu.pool_stats().bytes_cached == in_use);
        for (size_t i = 0; i < sizes.size(); ++i) blocks[i] = gpu.allocate_floats(sizes[i]);
        REQUIRE(gpu.pool_stats().cuda_malloc_calls == sizes.size());
        REQUIRE(gpu.pool_stats().bytes_in_use == in_use);
    }
    std::vector<float> host(sizes.back());
    gpu.copy_to_host(host.data(), blocks.back(), host.size() * sizeof(float));
    REQUIRE(host == std::vector<float>(host.size(), 0.0f));

    // A much smaller request does not take a large cached block.
    gpu.release(blocks.back());
    float* tiny = gpu.allocate_floats(1);
    REQUIRE(gpu.pool_stats().cuda_malloc_calls == sizes.size() + 1);
    gpu.release(tiny);
    for (size_t i = 0; i + 1 < blocks.size(); ++i) gpu.release(blocks[i]);

    gpu.release(nullptr);
    float host_value = 0.0f;
    REQUIRE_THROWS_WITH(gpu.release(&host_value), Contains("cuda:0: release of a pointer this backend did not allocate"));
}

TEST_CASE("out of GPU memory is an Error with the request, the free memory and a hint") {
    CudaBackend gpu(0);
    const size_t too_much = size_t{1} << 50;  // 1 PiB
    REQUIRE_THROWS_AS(gpu.allocate_bytes(too_much), gputrain::Error);
    REQUIRE_THROWS_WITH(gpu.allocate_bytes(too_much),
                        Contains("cuda:0: out of GPU memory: 1.00 PiB (1125899906842624 bytes) requested") &&
                            Contains(" free") && Contains("lower training.batch_size"));
    // The failure left nothing behind: the backend still works.
    Buffers buf(gpu);
    float* x = buf.zeros<float>(3);
    gpu.fill(x, 3, 2.0f);
    REQUIRE(buf.download(x, 3) == std::vector<float>(3, 2.0f));
}

TEST_CASE("CUDA_CHECK and CUBLAS_CHECK throw Errors naming the device, the call and the reason") {
    const auto failing_runtime_call = [] { CUDA_CHECK(3, cudaSetDevice(-1)); };
    REQUIRE_THROWS_AS(failing_runtime_call(), gputrain::Error);
    REQUIRE_THROWS_WITH(failing_runtime_call(), "cuda:3: cudaSetDevice(...) failed: invalid device ordinal");
    // The error was consumed: it does not resurface at the next check.
    REQUIRE(cudaGetLastError() == cudaSuccess);

    const auto failing_cublas_call = [] { CUBLAS_CHECK(2, cublasCreate(nullptr)); };
    REQUIRE_THROWS_WITH(failing_cublas_call(), Contains("cuda:2: cublasCreate(...) failed: "));

    // Through the backend: lda smaller than A's width is rejected by cuBLAS.
    CudaBackend gpu(0);
    Buffers buf(gpu);
    float* a = buf.zeros<float>(16);
    float* b = buf.zeros<float>(16);
    float* c = buf.zeros<float>(16);
    REQUIRE_THROWS_WITH(gpu.gemm(false, false, 2, 2, 4, 1.0f, a, 1, b, 2, 0.0f, c, 2),
                        Contains("cuda:0: cublasSgemm(...) failed: "));
}

TEST_CASE("softmax through activation_forward/backward is an Error, not a launch") {
    CudaBackend gpu(0);
    Buffers buf(gpu);
    float* x = buf.zeros<float>(4);
    REQUIRE_THROWS_WITH(gpu.activation_forward(gputrain::Activation::softmax, x, x, 4),
                        Contains("cuda:0: activation_forward: softmax is row-wise"));
    REQUIRE_THROWS_WITH(gpu.activation_backward(gputrain::Activation::softmax, x, x, x, x, 4),
                        Contains("cuda:0: activation_backward: softmax is row-wise"));
}

TEST_CASE("a backend built on one thread works on another, whatever GPU that thread has current") {
    const int device = gputrain::cuda_device_count() - 1;  // the last GPU: not the default one when there are two
    CudaBackend gpu(device);
    int bound = -1;
    std::vector<float> out;
    std::exception_ptr error;
    // Catch's assertions are not thread-safe: the worker only records.
    std::thread worker([&] {
        try {
            gpu.bind_thread();
            (void)cudaGetDevice(&bound);
            (void)cudaSetDevice(0);  // something else changes the thread's device: calls still go to `device`
            Buffers buf(gpu);
            float* x = buf.upload(random_vector(1000, 2));
            gpu.scale(x, 1000, 0.0f);
            out = buf.download(x, 1000);
        } catch (...) {
            error = std::current_exception();
        }
    });
    worker.join();
    if (error) std::rethrow_exception(error);
    REQUIRE(bound == device);
    REQUIRE(out == std::vector<float>(1000, 0.0f));
}

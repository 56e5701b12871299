// The CUDA runtime calls that the communicator fakes (test_*_communicator_fake.cpp)
// answer alike: host memory for device memory, events that are plain
// tokens, the priority range of a GPU. Each test program includes this once
// and defines the calls whose behaviour it controls itself.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdlib>

cudaError_t cudaMalloc(void** p, size_t bytes) {
    *p = std::malloc(bytes);
    return cudaSuccess;
}
cudaError_t cudaFree(void* p) {
    std::free(p);
    return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int) {
    *e = reinterpret_cast<cudaEvent_t>(new char);
    return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
    delete reinterpret_cast<char*>(e);
    return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned int) { return cudaSuccess; }
cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
    *least = 0;
    *greatest = -1;
    return cudaSuccess;
}

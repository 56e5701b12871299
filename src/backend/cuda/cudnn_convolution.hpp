// CudnnConvolution: the convolutions of one CudaBackend through cuDNN. It owns
// the cuDNN handle (bound to the backend's stream) and, per geometry, a plan:
// the descriptors and the algorithm chosen for each of the three directions.
//
// Algorithms are chosen once per geometry with cuDNN's heuristics
// (cudnnGetConvolution*Algorithm_v7): the first one that succeeds, is
// deterministic (else any; training.deterministic: false drops that rule),
// runs in plain FP32 (CUDNN_FMA_MATH: no TF32, so results agree with the CPU
// to ~1e-6 relative) and whose workspace fits.
// With allow_tensor_ops(true) (training.precision tf32, bf16 or fp16) any math
// type cuDNN ranks is taken: TF32 tensor cores on the fp32 data.
//
// Asymmetric padding: cuDNN pads both sides by the same amount. Where that
// cannot give the geometry's windows (Keras' 'same' with the odd pixel at the
// bottom/right, or more padding on top than at the bottom), cuDNN runs on a
// copy of x at the start of the workspace that carries the difference as zero
// rows/columns (or drops trailing ones no window reads); backward data writes
// that copy's gradient there and copies the part that is x back into dx.
//
// The filter gradient of a convolution with a short filter row (kernel_h *
// kernel_w * in_c <= kMaxColumnsK, a first layer on images) whose input
// columns fit kMaxColumnsBytes is, under deterministic algorithms and given a
// cuBLAS handle, one FP32 GEMM instead: dW = dy^T columns, with the columns
// written into the workspace (cuda_kernels::conv_columns). cuDNN's
// deterministic filter algorithms reduce over the batch's pixels slowly at
// such shapes (0.75 ms against 0.19 ms for its atomics-based one, for the
// CNN's first layer at batch 512 on an H200); a GEMM is deterministic too.
//
// Not thread-safe (one per backend, used by its replica's thread).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <array>
#include <cstddef>
#include <map>
#include <memory>

#include "backend/conv_geometry.hpp"

namespace gputrain {

class CudnnConvolution {
public:
    // Creates the handle on the calling thread's current device.
    CudnnConvolution(int device, cudaStream_t stream);
    ~CudnnConvolution();
    CudnnConvolution(const CudnnConvolution&) = delete;
    CudnnConvolution& operator=(const CudnnConvolution&) = delete;

    // The most cuDNN workspace a chosen algorithm may need (the padded copy
    // comes on top): enough for the fast algorithms at training batch sizes.
    static constexpr size_t kMaxAlgorithmWorkspaceBytes = size_t{256} << 20;
    // The filter gradient by GEMM (top of the file): the longest filter row
    // and the most column bytes it takes.
    static constexpr int kMaxColumnsK = 32;
    static constexpr size_t kMaxColumnsBytes = size_t{64} << 20;

    // The backend's cuBLAS handle (on the same stream), for the filter
    // gradient by GEMM; without one (the default) cuDNN computes every filter
    // gradient. Plans made before are dropped.
    void use_cublas(cublasHandle_t handle);

    // Whether algorithms may use tensor ops (TF32 on fp32 data). Plans made
    // under the other setting are dropped; set it before training starts.
    void allow_tensor_ops(bool allowed);
    // Whether to prefer deterministic algorithms (the default), which give the
    // same bits run to run, over a faster one cuDNN ranks higher that sums
    // with atomics. Plans made under the other setting are dropped.
    void prefer_deterministic(bool preferred);

    // Backend::conv2d_workspace_bytes: the padded copy plus the largest
    // workspace of the three algorithms chosen for `g`.
    size_t workspace_bytes(const Conv2dGeometry& g);
    void forward(const Conv2dGeometry& g, const float* x, const float* w, float* y, void* workspace,
                 size_t workspace_bytes);
    void backward_data(const Conv2dGeometry& g, const float* dy, const float* w, float* dx, void* workspace,
                       size_t workspace_bytes);
    void backward_filter(const Conv2dGeometry& g, const float* x, const float* dy, float* dw, void* workspace,
                         size_t workspace_bytes);

private:
    struct Plan;
    using GeometryKey = std::array<int, 15>;

    // The plan for `g`, made on first use with algorithms whose workspace is
    // at most `algorithm_cap` bytes.
    const Plan& plan_for(const Conv2dGeometry& g, size_t algorithm_cap);
    // The plan for a call given `workspace_bytes`; throws Error when they are too few.
    const Plan& plan_for_call(const Conv2dGeometry& g, size_t workspace_bytes);
    // Puts a direction's math type on the plan's descriptor before its call.
    void set_math(const Plan& plan, cudnnMathType_t math);
    // x as cuDNN reads it: x itself, or its padded copy in the workspace.
    const float* cudnn_input(const Plan& plan, const Conv2dGeometry& g, const float* x, void* workspace);

    int device_;
    cudaStream_t stream_;
    cudnnHandle_t handle_ = nullptr;
    cublasHandle_t cublas_ = nullptr;
    std::map<GeometryKey, std::unique_ptr<Plan>> plans_;
    bool tensor_ops_ = false;
    bool deterministic_ = true;
};

}  // namespace gputrain

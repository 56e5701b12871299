// Launchers for the CUDA backend's NHWC image kernels (image_kernels.cu):
// pooling, and the shifted zero-filled copy that gives cuDNN asymmetric padding.
// Same conventions as kernels.hpp: enqueue on `stream`, return the launch status.
#pragma once

#include <cuda_runtime_api.h>

#include "backend/conv_geometry.hpp"

namespace gputrain::cuda_kernels {

// dst[n, h, w, c] = src[n, h - top, w - left, c] where src has that pixel,
// else 0: pads (positive top/left, dst larger) or crops (negative offsets,
// dst smaller) every sample of a batch.
cudaError_t copy_shifted_nhwc(cudaStream_t stream, const float* src, int src_h, int src_w, float* dst, int dst_h,
                              int dst_w, int top, int left, int batch, int channels);

// The columns of a convolution's input: columns[m, k] for m = (n, oh, ow)
// over the output pixels and k = (kh, kw, c) over a filter row, holding the
// input pixel window m reads at k (x[n, oh * stride_h - pad_top + kh *
// dilation_h, ...], or 0 outside x). [M, K] row-major, M = batch * out_h *
// out_w, K = kernel_h * kernel_w * in_c: the filter gradient is dy^T columns.
cudaError_t conv_columns(cudaStream_t stream, const Conv2dGeometry& g, const float* x, float* columns);

// Backend::pool2d_forward / pool2d_backward, bit for bit what CpuBackend computes.
cudaError_t pool2d_forward(cudaStream_t stream, const Pool2dGeometry& g, const float* x, float* y);
cudaError_t pool2d_backward(cudaStream_t stream, const Pool2dGeometry& g, const float* x, const float* dy,
                            float* dx);

}  // namespace gputrain::cuda_kernels

// Launchers for the CUDA backend's NHWC image kernels (image_kernels.cu):
// pooling, and the zero-extending copy that gives cuDNN asymmetric padding.
// Same conventions as kernels.hpp: enqueue on `stream`, return the launch status.
#pragma once

#include <cuda_runtime_api.h>

#include "backend/conv_geometry.hpp"

namespace gputrain::cuda_kernels {

// dst[n, h, w, c] = src[n, h, w, c] where src has that pixel (h < src_h,
// w < src_w), else 0: pads (dst larger) or crops (dst smaller) at the bottom
// and right of every sample.
cudaError_t copy_zero_extended_nhwc(cudaStream_t stream, const float* src, int src_h, int src_w, float* dst,
                                    int dst_h, int dst_w, int batch, int channels);

// Backend::pool2d_forward / pool2d_backward, bit for bit what CpuBackend computes.
cudaError_t pool2d_forward(cudaStream_t stream, const Pool2dGeometry& g, const float* x, float* y);
cudaError_t pool2d_backward(cudaStream_t stream, const Pool2dGeometry& g, const float* x, const float* dy,
                            float* dx);

}  // namespace gputrain::cuda_kernels

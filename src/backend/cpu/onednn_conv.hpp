// CPU convolutions through oneDNN (Debian's libdnnl), when the build has it.
// CpuBackend asks `use` for each geometry; a convolution oneDNN runs only with
// its reference kernel (far slower than im2col + OpenBLAS) is left to im2col.
// Data stays NHWC and filters [out_c, kh, kw, in_c] (oneDNN's nhwc and ohwi);
// oneDNN picks its own filter layout, and the filters are reordered into it on
// each call (a few KB: the optimizer updates the plain copy every step).
//
// One instance per CpuBackend, so per replica thread: the primitives, their
// filter copies and oneDNN's stream are used by one thread at a time.
#pragma once

#include <memory>
#include <string>

#include "backend/conv_geometry.hpp"

namespace gputrain {

// Which CPU convolution code runs: `automatic` is oneDNN where it has a
// just-in-time kernel for the shape, im2col + OpenBLAS elsewhere. The
// environment variable GPUTRAIN_CPU_CONV (auto, onednn, im2col) overrides it
// for benchmarks (read once: the default of every CpuBackend's conv_path).
enum class CpuConvPath { automatic, onednn, im2col };
CpuConvPath cpu_conv_path_from_environment();
// True when this build links oneDNN.
bool have_onednn();

class OneDnnConvolutions {
public:
    OneDnnConvolutions();
    ~OneDnnConvolutions();
    OneDnnConvolutions(const OneDnnConvolutions&) = delete;
    OneDnnConvolutions& operator=(const OneDnnConvolutions&) = delete;

    // Whether oneDNN runs g on `path` (the decision does not depend on
    // g.batch, so a layer's workspace, sized for its largest batch, fits every
    // call). `onednn` runs every shape oneDNN takes, with its reference kernel
    // if need be; `automatic` only those with a faster kernel.
    bool use(const Conv2dGeometry& g, CpuConvPath path);
    void forward(const Conv2dGeometry& g, const float* x, const float* w, float* y);
    void backward_data(const Conv2dGeometry& g, const float* dy, const float* w, float* dx);
    void backward_filter(const Conv2dGeometry& g, const float* x, const float* dy, float* dw);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Which library runs the CPU's GEMMs that the small-GEMM kernel does not:
// oneDNN where the build has it, else OpenBLAS. The environment variable
// GPUTRAIN_CPU_GEMM (auto, onednn, openblas) overrides it for benchmarks
// (read once). `gputrain devices` prints cpu_gemm_description() (conv_description.hpp).
bool cpu_gemm_uses_onednn();

// C = alpha op(A) op(B) + beta C, row-major with leading dimensions, as
// cblas_sgemm(CblasRowMajor, ...), through oneDNN's sgemm (its just-in-time
// kernels, on the calling thread's oneDNN threads). False when the build has
// no oneDNN or oneDNN refused the call: the caller then runs OpenBLAS.
bool onednn_sgemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                  const float* b, int ldb, float beta, float* c, int ldc);

// Threads each oneDNN call may use on the calling thread (OpenMP's team size);
// set by set_cpu_blas_threads, one under ThreadSanitizer.
void set_onednn_threads(int threads);

}  // namespace gputrain

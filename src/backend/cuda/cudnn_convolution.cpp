#include "backend/cuda/cudnn_convolution.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "backend/cuda/conv_padding.hpp"
#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/image_kernels.hpp"

namespace gputrain {

namespace {

// The cuDNN workspace starts this far into the caller's workspace, after the padded copy.
constexpr size_t kAlignmentBytes = 256;

size_t align_up(size_t bytes) { return (bytes + kAlignmentBytes - 1) / kAlignmentBytes * kAlignmentBytes; }

using cuda_conv::axis_layout;
using cuda_conv::AxisLayout;

struct InputLayout {
    AxisLayout h, w;
    bool copies() const { return h.copies() || w.copies(); }
};

InputLayout input_layout(const Conv2dGeometry& g) {
    return {axis_layout(g.pad_top, g.pad_bottom(), g.stride_h), axis_layout(g.pad_left, g.pad_right(), g.stride_w)};
}

// Bytes of the copy of x cuDNN reads (0 when it reads x itself), aligned.
size_t input_copy_bytes(const Conv2dGeometry& g) {
    const InputLayout layout = input_layout(g);
    if (!layout.copies()) return 0;
    return align_up(static_cast<size_t>(std::max(g.batch, 0)) * std::max(layout.h.extent(g.in_h), 0) *
                    std::max(layout.w.extent(g.in_w), 0) * std::max(g.in_c, 0) * sizeof(float));
}

std::string describe(const Conv2dGeometry& g) {
    return fmt::format("conv2d {}x{}x{}x{} -> {}x{}x{} (kernel {}x{}, stride {}x{}, dilation {}x{}, pad top/left {}/{})",
                       g.batch, g.in_h, g.in_w, g.in_c, g.out_h, g.out_w, g.out_c, g.kernel_h, g.kernel_w, g.stride_h,
                       g.stride_w, g.dilation_h, g.dilation_w, g.pad_top, g.pad_left);
}

// The first usable algorithm of cuDNN's ranking: succeeded, plain FP32
// (CUDNN_FMA_MATH) unless tensor ops are allowed (then any math type: TF32 on
// fp32 data), a workspace within the cap (asked through `workspace_of`, not
// the ranking's estimate), deterministic when one such exists unless
// `deterministic` is false (then simply the first usable one).
template <class Perf, class WorkspaceOf>
bool choose(const std::vector<Perf>& ranking, int returned, bool tensor_ops, bool deterministic, size_t cap,
            WorkspaceOf workspace_of, Perf& chosen, size_t& chosen_bytes) {
    for (const bool need_deterministic : {true, false}) {
        if (need_deterministic && !deterministic) continue;
        for (int i = 0; i < returned; ++i) {
            const Perf& p = ranking[static_cast<size_t>(i)];
            if (p.status != CUDNN_STATUS_SUCCESS || (!tensor_ops && p.mathType != CUDNN_FMA_MATH)) continue;
            if (need_deterministic && p.determinism != CUDNN_DETERMINISTIC) continue;
            size_t bytes = 0;
            if (!workspace_of(p.algo, p.mathType, bytes) || bytes > cap) continue;
            chosen = p;
            chosen_bytes = bytes;
            return true;
        }
    }
    return false;
}

// One direction's algorithm: cuDNN's ranking (count_of() entries, filled by
// rank_into), the entry `choose` takes (algorithm and math type), its
// workspace folded into max_bytes. Throws no_algorithm() when none fits.
template <class Perf, class CountOf, class RankInto, class WorkspaceOf, class NoAlgorithm>
Perf pick(CountOf count_of, RankInto rank_into, WorkspaceOf workspace_of, bool tensor_ops, bool deterministic,
          size_t cap, size_t& max_bytes, NoAlgorithm no_algorithm) {
    const int count = count_of();
    int returned = 0;
    std::vector<Perf> ranking(static_cast<size_t>(std::max(count, 1)));
    rank_into(count, &returned, ranking.data());
    Perf chosen{};
    size_t bytes = 0;
    if (!choose(ranking, returned, tensor_ops, deterministic, cap, workspace_of, chosen, bytes)) throw no_algorithm();
    max_bytes = std::max(max_bytes, bytes);
    return chosen;
}

}  // namespace

struct CudnnConvolution::Plan {
    Plan() = default;
    Plan(const Plan&) = delete;
    Plan& operator=(const Plan&) = delete;
    ~Plan() {
        if (conv) (void)cudnnDestroyConvolutionDescriptor(conv);
        if (filter) (void)cudnnDestroyFilterDescriptor(filter);
        if (y) (void)cudnnDestroyTensorDescriptor(y);
        if (x) (void)cudnnDestroyTensorDescriptor(x);
    }

    cudnnTensorDescriptor_t x = nullptr;  // the input as cuDNN sees it: [batch, extent h, extent w, in_c]
    cudnnTensorDescriptor_t y = nullptr;
    cudnnFilterDescriptor_t filter = nullptr;
    cudnnConvolutionDescriptor_t conv = nullptr;
    InputLayout layout{};
    int extent_h = 0, extent_w = 0;
    bool copies_input = false;  // cuDNN reads a copy of x (layout.copies())
    size_t copy_bytes = 0;      // that copy's bytes, aligned (0 without a copy)
    cudnnConvolutionFwdAlgo_t forward_algo{};
    cudnnConvolutionBwdDataAlgo_t backward_data_algo{};
    cudnnConvolutionBwdFilterAlgo_t backward_filter_algo{};
    // The math type each direction's algorithm was ranked with; set on the
    // descriptor before each call (they may differ with tensor ops allowed).
    cudnnMathType_t forward_math = CUDNN_FMA_MATH, backward_data_math = CUDNN_FMA_MATH,
                    backward_filter_math = CUDNN_FMA_MATH;
    size_t algorithm_bytes = 0;  // the largest of the three workspaces
    // The filter gradient by GEMM over the input's columns (at the
    // algorithm workspace's start; cudnn_convolution.hpp).
    bool filter_by_gemm = false;

    size_t total_bytes() const { return copy_bytes + algorithm_bytes; }
    void* algorithm_workspace(void* workspace) const { return static_cast<char*>(workspace) + copy_bytes; }
};

CudnnConvolution::CudnnConvolution(int device, cudaStream_t stream) : device_(device), stream_(stream) {
    CUDNN_CHECK(device_, cudnnCreate(&handle_));
    try {
        CUDNN_CHECK(device_, cudnnSetStream(handle_, stream_));
    } catch (...) {
        (void)cudnnDestroy(handle_);
        throw;
    }
}

CudnnConvolution::~CudnnConvolution() {
    plans_.clear();  // descriptors before the handle
    if (handle_) (void)cudnnDestroy(handle_);
}

const CudnnConvolution::Plan& CudnnConvolution::plan_for(const Conv2dGeometry& g, size_t algorithm_cap) {
    const GeometryKey key{g.batch,    g.in_h,     g.in_w,     g.in_c,       g.out_h,      g.out_w,   g.out_c,   g.kernel_h,
                          g.kernel_w, g.stride_h, g.stride_w, g.dilation_h, g.dilation_w, g.pad_top, g.pad_left};
    if (const auto found = plans_.find(key); found != plans_.end()) return *found->second;

    const InputLayout layout = input_layout(g);
    const int extent_h = layout.h.extent(g.in_h), extent_w = layout.w.extent(g.in_w);
    if (g.batch <= 0 || g.in_h <= 0 || g.in_w <= 0 || g.in_c <= 0 || g.out_h <= 0 || g.out_w <= 0 || g.out_c <= 0 ||
        g.kernel_h <= 0 || g.kernel_w <= 0 || g.stride_h <= 0 || g.stride_w <= 0 || g.dilation_h <= 0 ||
        g.dilation_w <= 0 || g.pad_top < 0 || g.pad_left < 0 || extent_h <= 0 || extent_w <= 0)
        throw Error(fmt::format("cuda:{}: {}: not a valid geometry", device_, describe(g)));

    auto plan = std::make_unique<Plan>();
    Plan& p = *plan;
    p.layout = layout;
    p.extent_h = extent_h;
    p.extent_w = extent_w;
    p.copies_input = layout.copies();
    p.copy_bytes = input_copy_bytes(g);
    CUDNN_CHECK(device_, cudnnCreateTensorDescriptor(&p.x));
    CUDNN_CHECK(device_, cudnnCreateTensorDescriptor(&p.y));
    CUDNN_CHECK(device_, cudnnCreateFilterDescriptor(&p.filter));
    CUDNN_CHECK(device_, cudnnCreateConvolutionDescriptor(&p.conv));
    CUDNN_CHECK(device_, cudnnSetTensor4dDescriptor(p.x, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, g.batch, g.in_c,
                                                    extent_h, extent_w));
    CUDNN_CHECK(device_, cudnnSetTensor4dDescriptor(p.y, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, g.batch, g.out_c,
                                                    g.out_h, g.out_w));
    // NHWC filters are [out_c, kernel_h, kernel_w, in_c] ("KRSC"), the Backend's layout.
    CUDNN_CHECK(device_, cudnnSetFilter4dDescriptor(p.filter, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, g.out_c, g.in_c,
                                                    g.kernel_h, g.kernel_w));
    // Cross-correlation: what Keras and the CPU backend call convolution.
    CUDNN_CHECK(device_, cudnnSetConvolution2dDescriptor(p.conv, layout.h.cudnn_pad, layout.w.cudnn_pad, g.stride_h,
                                                         g.stride_w, g.dilation_h, g.dilation_w,
                                                         CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    // FMA_MATH unless tensor ops are allowed: on Ampere and later DEFAULT_MATH
    // lets FP32 convolutions run in TF32 (~1e-3 relative error).
    CUDNN_CHECK(device_, cudnnSetConvolutionMathType(p.conv, tensor_ops_ ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH));

    // Our layout arithmetic must give cuDNN the geometry's output size.
    int n = 0, c = 0, h = 0, w = 0;
    CUDNN_CHECK(device_, cudnnGetConvolution2dForwardOutputDim(p.conv, p.x, p.filter, &n, &c, &h, &w));
    if (n != g.batch || c != g.out_c || h != g.out_h || w != g.out_w)
        throw Error(fmt::format("cuda:{}: {}: cuDNN computes output {}x{}x{}x{} for input extent {}x{}", device_,
                                describe(g), n, h, w, c, extent_h, extent_w));

    const auto no_algorithm = [&](const char* direction) {
        return Error(fmt::format("cuda:{}: {}: cuDNN offers no {} {} algorithm within a {} byte workspace", device_,
                                 describe(g), tensor_ops_ ? "FP32/TF32" : "FP32", direction, algorithm_cap));
    };
    // With tensor ops allowed, puts `math` on the descriptor, which carries one
    // at a time: each ranking is asked under DEFAULT_MATH, each candidate's
    // workspace under its own math type. FP32 plans keep FMA_MATH throughout.
    const auto use_math = [&](cudnnMathType_t math) {
        return !tensor_ops_ || cudnnSetConvolutionMathType(p.conv, math) == CUDNN_STATUS_SUCCESS;
    };
    // Each direction: how many algorithms cuDNN ranks, the ranking, and the
    // workspace one of them needs; pick() does the rest.
    const auto forward_algo_perf = pick<cudnnConvolutionFwdAlgoPerf_t>(
        [&] {
            int count = 0;
            CUDNN_CHECK(device_, cudnnGetConvolutionForwardAlgorithmMaxCount(handle_, &count));
            return count;
        },
        [&](int count, int* returned, cudnnConvolutionFwdAlgoPerf_t* ranking) {
            use_math(CUDNN_DEFAULT_MATH);
            CUDNN_CHECK(device_, cudnnGetConvolutionForwardAlgorithm_v7(handle_, p.x, p.filter, p.conv, p.y, count,
                                                                        returned, ranking));
        },
        [&](cudnnConvolutionFwdAlgo_t algo, cudnnMathType_t math, size_t& bytes) {
            if (!use_math(math)) return false;
            return cudnnGetConvolutionForwardWorkspaceSize(handle_, p.x, p.filter, p.conv, p.y, algo, &bytes) ==
                   CUDNN_STATUS_SUCCESS;
        },
        tensor_ops_, deterministic_, algorithm_cap, p.algorithm_bytes, [&] { return no_algorithm("forward"); });
    p.forward_algo = forward_algo_perf.algo;
    p.forward_math = forward_algo_perf.mathType;
    const auto backward_data_algo_perf = pick<cudnnConvolutionBwdDataAlgoPerf_t>(
        [&] {
            int count = 0;
            CUDNN_CHECK(device_, cudnnGetConvolutionBackwardDataAlgorithmMaxCount(handle_, &count));
            return count;
        },
        [&](int count, int* returned, cudnnConvolutionBwdDataAlgoPerf_t* ranking) {
            use_math(CUDNN_DEFAULT_MATH);
            CUDNN_CHECK(device_, cudnnGetConvolutionBackwardDataAlgorithm_v7(handle_, p.filter, p.y, p.conv, p.x,
                                                                             count, returned, ranking));
        },
        [&](cudnnConvolutionBwdDataAlgo_t algo, cudnnMathType_t math, size_t& bytes) {
            if (!use_math(math)) return false;
            return cudnnGetConvolutionBackwardDataWorkspaceSize(handle_, p.filter, p.y, p.conv, p.x, algo, &bytes) ==
                   CUDNN_STATUS_SUCCESS;
        },
        tensor_ops_, deterministic_, algorithm_cap, p.algorithm_bytes, [&] { return no_algorithm("backward-data"); });
    p.backward_data_algo = backward_data_algo_perf.algo;
    p.backward_data_math = backward_data_algo_perf.mathType;
    const auto backward_filter_algo_perf = pick<cudnnConvolutionBwdFilterAlgoPerf_t>(
        [&] {
            int count = 0;
            CUDNN_CHECK(device_, cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(handle_, &count));
            return count;
        },
        [&](int count, int* returned, cudnnConvolutionBwdFilterAlgoPerf_t* ranking) {
            use_math(CUDNN_DEFAULT_MATH);
            CUDNN_CHECK(device_, cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle_, p.x, p.y, p.conv, p.filter,
                                                                               count, returned, ranking));
        },
        [&](cudnnConvolutionBwdFilterAlgo_t algo, cudnnMathType_t math, size_t& bytes) {
            if (!use_math(math)) return false;
            return cudnnGetConvolutionBackwardFilterWorkspaceSize(handle_, p.x, p.y, p.conv, p.filter, algo,
                                                                  &bytes) == CUDNN_STATUS_SUCCESS;
        },
        tensor_ops_, deterministic_, algorithm_cap, p.algorithm_bytes, [&] { return no_algorithm("backward-filter"); });
    p.backward_filter_algo = backward_filter_algo_perf.algo;
    p.backward_filter_math = backward_filter_algo_perf.mathType;
    const size_t columns_k = static_cast<size_t>(g.kernel_h) * g.kernel_w * g.in_c;
    const size_t columns_bytes = static_cast<size_t>(g.batch) * g.out_h * g.out_w * columns_k * sizeof(float);
    p.filter_by_gemm = cublas_ && deterministic_ && columns_k <= static_cast<size_t>(kMaxColumnsK) &&
                       columns_bytes <= kMaxColumnsBytes && columns_bytes <= algorithm_cap;
    if (p.filter_by_gemm) p.algorithm_bytes = std::max(p.algorithm_bytes, columns_bytes);
    p.algorithm_bytes = align_up(p.algorithm_bytes);
    return *plans_.emplace(key, std::move(plan)).first->second;
}

const CudnnConvolution::Plan& CudnnConvolution::plan_for_call(const Conv2dGeometry& g, size_t workspace_bytes) {
    // A geometry seen first here (e.g. the last, shorter batch) gets algorithms
    // that fit what the caller has.
    const size_t copy_bytes = input_copy_bytes(g);
    const size_t cap = workspace_bytes > copy_bytes ? workspace_bytes - copy_bytes : 0;
    const Plan& plan = plan_for(g, std::min(cap, kMaxAlgorithmWorkspaceBytes));
    if (plan.total_bytes() > workspace_bytes)
        throw Error(fmt::format("cuda:{}: {}: workspace of {} bytes given, {} needed (size it with "
                                "conv2d_workspace_bytes)",
                                device_, describe(g), workspace_bytes, plan.total_bytes()));
    return plan;
}

void CudnnConvolution::allow_tensor_ops(bool allowed) {
    if (allowed == tensor_ops_) return;
    tensor_ops_ = allowed;
    plans_.clear();  // chosen under the other math type
}

void CudnnConvolution::use_cublas(cublasHandle_t handle) {
    if (handle == cublas_) return;
    cublas_ = handle;
    plans_.clear();  // chosen without (or with) the filter gradient by GEMM
}

void CudnnConvolution::prefer_deterministic(bool preferred) {
    if (preferred == deterministic_) return;
    deterministic_ = preferred;
    plans_.clear();  // chosen under the other rule
}

void CudnnConvolution::set_math(const Plan& plan, cudnnMathType_t math) {
    // FP32 plans keep FMA_MATH throughout; with tensor ops the three
    // directions may have been ranked under different math types. Host-side
    // descriptor state only: nothing is queued, so this is fine in a graph.
    if (tensor_ops_) CUDNN_CHECK(device_, cudnnSetConvolutionMathType(plan.conv, math));
}

size_t CudnnConvolution::workspace_bytes(const Conv2dGeometry& g) {
    if (g.batch <= 0) return 0;
    return plan_for(g, kMaxAlgorithmWorkspaceBytes).total_bytes();
}

const float* CudnnConvolution::cudnn_input(const Plan& plan, const Conv2dGeometry& g, const float* x,
                                           void* workspace) {
    if (!plan.copies_input) return x;
    float* copy = static_cast<float*>(workspace);
    CUDA_CHECK(device_, cuda_kernels::copy_shifted_nhwc(stream_, x, g.in_h, g.in_w, copy, plan.extent_h, plan.extent_w,
                                                        plan.layout.h.before, plan.layout.w.before, g.batch, g.in_c));
    return copy;
}

void CudnnConvolution::forward(const Conv2dGeometry& g, const float* x, const float* w, float* y, void* workspace,
                               size_t workspace_bytes) {
    if (g.batch <= 0) return;
    const Plan& p = plan_for_call(g, workspace_bytes);
    const float* input = cudnn_input(p, g, x, workspace);
    set_math(p, p.forward_math);
    const float one = 1.0f, zero = 0.0f;
    CUDNN_CHECK(device_, cudnnConvolutionForward(handle_, &one, p.x, input, p.filter, w, p.conv, p.forward_algo,
                                                 p.algorithm_workspace(workspace), p.algorithm_bytes, &zero, p.y, y));
}

void CudnnConvolution::backward_data(const Conv2dGeometry& g, const float* dy, const float* w, float* dx,
                                     void* workspace, size_t workspace_bytes) {
    if (g.batch <= 0) return;
    const Plan& p = plan_for_call(g, workspace_bytes);
    // With a copy, cuDNN writes the gradient of the extended input there and
    // the copy back crops it (extension rows) or fills 0 (cropped-off rows,
    // which no window reads).
    float* target = p.copies_input ? static_cast<float*>(workspace) : dx;
    set_math(p, p.backward_data_math);
    const float one = 1.0f, zero = 0.0f;
    CUDNN_CHECK(device_, cudnnConvolutionBackwardData(handle_, &one, p.filter, w, p.y, dy, p.conv,
                                                      p.backward_data_algo, p.algorithm_workspace(workspace),
                                                      p.algorithm_bytes, &zero, p.x, target));
    if (p.copies_input)
        CUDA_CHECK(device_, cuda_kernels::copy_shifted_nhwc(stream_, target, p.extent_h, p.extent_w, dx, g.in_h, g.in_w,
                                                            -p.layout.h.before, -p.layout.w.before, g.batch, g.in_c));
}

void CudnnConvolution::backward_filter(const Conv2dGeometry& g, const float* x, const float* dy, float* dw,
                                       void* workspace, size_t workspace_bytes) {
    if (g.batch <= 0) {  // no samples: a zero gradient (overwritten, as documented)
        const size_t bytes = static_cast<size_t>(g.out_c) * g.kernel_h * g.kernel_w * g.in_c * sizeof(float);
        if (bytes > 0) CUDA_CHECK(device_, cudaMemsetAsync(dw, 0, bytes, stream_));
        return;
    }
    const Plan& p = plan_for_call(g, workspace_bytes);
    if (p.filter_by_gemm) {
        // Row-major dW [out_c, K] = dy^T [out_c, M] columns [M, K]; column-major,
        // as cuBLAS sees them: dW^T [K, out_c] = columns^T [K, M] dy [M, out_c].
        float* columns = static_cast<float*>(p.algorithm_workspace(workspace));
        CUDA_CHECK(device_, cuda_kernels::conv_columns(stream_, g, x, columns));
        const int k_size = g.kernel_h * g.kernel_w * g.in_c;
        const int pixels = g.batch * g.out_h * g.out_w;
        const float one = 1.0f, zero = 0.0f;
        CUBLAS_CHECK(device_, cublasSgemm(cublas_, CUBLAS_OP_N, CUBLAS_OP_T, k_size, g.out_c, pixels, &one, columns,
                                          k_size, dy, g.out_c, &zero, dw, k_size));
        return;
    }
    const float* input = cudnn_input(p, g, x, workspace);
    set_math(p, p.backward_filter_math);
    const float one = 1.0f, zero = 0.0f;
    CUDNN_CHECK(device_, cudnnConvolutionBackwardFilter(handle_, &one, p.x, input, p.y, dy, p.conv,
                                                        p.backward_filter_algo, p.algorithm_workspace(workspace),
                                                        p.algorithm_bytes, &zero, p.filter, dw));
}

}  // namespace gputrain

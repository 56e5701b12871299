// The CUDA backend's kernel of backend/ops/prepare_inputs.hpp: one thread an
// element of the shard, over a grid-stride loop; the last rows * label_width items of
// the loop gather the labels (label_width each) of a resident set, or make a
// token window's (its next ids).
#include "backend/cuda/cuda_backend.hpp"
#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/cuda_kernels.hpp"
#include "backend/cuda/kernel_launch.cuh"
#include "backend/ops/prepare_inputs.hpp"

namespace gputrain::cuda_kernels {

namespace {

__global__ void prepare_inputs_kernel(ops::PrepareInputs op, size_t n) {
    const ops::AugmentPlan& p = op.plan;
    const size_t per = op.sample_elements;
    const int64_t position = op.order ? op.params[0] : 0;
    const size_t width = static_cast<size_t>(op.label_width);
    const size_t labels = (op.order || op.token_bytes) && op.labels ? static_cast<size_t>(op.rows) * width : 0;
    for (size_t i = thread_index(); i < n + labels; i += thread_count()) {
        if (op.token_bytes) {  // a window: ids as floats, the next ids its labels (label_width = per)
            const size_t k = i >= n ? i - n : i;
            const size_t r = k / per, t = k % per;
            const int64_t sample = op.order ? op.order[position + static_cast<int64_t>(r)] : static_cast<int64_t>(r);
            const size_t at = static_cast<size_t>(sample) * op.token_stride + t;
            if (i >= n) op.labels[k] = static_cast<int32_t>(ops::token_at(op.source, op.token_bytes, at + 1));
            else op.out[i] = static_cast<float>(ops::token_at(op.source, op.token_bytes, at));
            continue;
        }
        if (i >= n) {
            const size_t r = (i - n) / width, j = (i - n) % width;
            op.labels[i - n] = op.source_labels[static_cast<size_t>(op.order[position + static_cast<int64_t>(r)]) * width + j];
            continue;
        }
        const size_t r = i / per, e = i % per;
        const int64_t sample = op.order ? op.order[position + static_cast<int64_t>(r)] : static_cast<int64_t>(r);
        const uint8_t* bytes =
            op.source_u8 ? static_cast<const uint8_t*>(op.source) + static_cast<size_t>(sample) * per : nullptr;
        const float* floats =
            op.source_u8 ? nullptr : static_cast<const float*>(op.source) + static_cast<size_t>(sample) * per;
        const int c = static_cast<int>(e % static_cast<size_t>(p.channels));
        if (!op.augment) {
            op.out[i] = bytes ? op.table[c * 256 + bytes[e]] : floats[e];
            continue;
        }
        const int64_t id = op.order ? sample : op.ids[r];
        const ops::HashedDraws key{ops::augment_key(p.seed, op.params[1], id)};
        const int pixel = static_cast<int>(e / static_cast<size_t>(p.channels));
        const int y = pixel / p.width, x = pixel % p.width;
        const float fill = bytes ? op.table[c * 256] : op.table[c];
        op.out[i] = ops::augmented_value(p, key, y, x, c, fill, [&](int sy, int sx, int sc) {
            const size_t s = (static_cast<size_t>(sy) * p.width + sx) * p.channels + sc;
            return bytes ? op.table[sc * 256 + bytes[s]] : floats[s];
        });
    }
}

cudaStream_t stream_of(Backend& backend) {
    return static_cast<cudaStream_t>(static_cast<CudaBackend&>(backend).stream_handle());
}
int device_of(Backend& backend) { return static_cast<CudaBackend&>(backend).device(); }

void prepare_inputs(Backend& b, const ops::PrepareInputs& op) {
    const size_t n = elements(op.rows, op.sample_elements);
    const size_t items =
        n + ((op.order || op.token_bytes) && op.labels ? static_cast<size_t>(op.rows) * op.label_width : 0);
    if (items == 0) return;
    CUDA_CHECK(device_of(b), launch_1d(stream_of(b), items, prepare_inputs_kernel, op, n));
}

}  // namespace

void add_prepare(KernelTable& table) { table.add<ops::PrepareInputs, &prepare_inputs>(); }

}  // namespace gputrain::cuda_kernels

#include "cli/bench_gemm.hpp"

#include <algorithm>
#include <chrono>

#include "backend/buffer.hpp"
#include "core/rng.hpp"
#include "nn/dense.hpp"

namespace gputrain::cli {

std::vector<GemmShape> dense_gemms(const nn::Model& model, int rows) {
    std::vector<GemmShape> out;
    for (size_t i = 0; i < model.layer_count(); ++i) {
        const nn::Layer& layer = model.layer(i);
        if (layer.type() != "dense") continue;
        const Shape& in_shape = model.tensor_shape(model.graph().inputs[i][0]);
        const int64_t in = in_shape.back();
        const int m = static_cast<int>(rows * (shape_elements(in_shape) / in));
        const int k = static_cast<int>(in), n = static_cast<int>(model.layer_output_shape(i).back());
        // A layer tied to an embedding (tie_weights) multiplies by its table
        // [n, k] transposed: x E^T, dE = dz^T x, dx = dz E.
        const auto* dense = dynamic_cast<const nn::Dense*>(&layer);
        if (dense && !dense->tied_to().empty()) {
            out.push_back({i, "forward", false, true, m, n, k});
            out.push_back({i, "weight grad", true, false, n, k, m});
            if (model.computes_input_gradient(i)) out.push_back({i, "input grad", false, false, m, k, n});
            continue;
        }
        out.push_back({i, "forward", false, false, m, n, k});
        out.push_back({i, "weight grad", true, false, k, n, m});
        if (model.computes_input_gradient(i)) out.push_back({i, "input grad", false, true, m, k, n});
    }
    return out;
}

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// The operands a bare GEMM reads: fp32, or their 16-bit copies made once beforehand.
struct Operands {
    const void *a = nullptr, *b = nullptr;
    bool copies = false;
};

double measure(Backend& be, const GemmShape& s, const Operands& in, float* c, double min_seconds) {
    // Leading dimensions of the row-major operands as stored (op applied by the call).
    const int lda = s.trans_a ? s.m : s.k, ldb = s.trans_b ? s.k : s.n;
    std::vector<double> times;
    double total = 0;
    while ((total < min_seconds || times.size() < 2) && times.size() < 1000) {
        const auto t = std::chrono::steady_clock::now();
        if (in.copies)
            be.gemm_copied(s.trans_a, s.trans_b, s.m, s.n, s.k, 1.0f, in.a, lda, in.b, ldb, 0.0f, c, s.n);
        else
            be.gemm(s.trans_a, s.trans_b, s.m, s.n, s.k, 1.0f, static_cast<const float*>(in.a), lda,
                    static_cast<const float*>(in.b), ldb, 0.0f, c, s.n);
        be.synchronize();
        times.push_back(seconds_since(t));
        total += times.back();
        // One call of a big shape is a measurement on its own; don't spend seconds on a second.
        if (times.size() == 1 && times[0] >= min_seconds) break;
    }
    if (times.size() > 1) times.erase(times.begin());  // the first call pays for warming up
    std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
    return s.flops() / times[times.size() / 2] / 1e9;
}

}  // namespace

std::vector<double> bare_gemm_rates(Backend& backend, const std::vector<GemmShape>& shapes, double min_seconds,
                                    BareGemm kind) {
    size_t a_n = 1, b_n = 1, c_n = 1, scratch = 0;
    for (const auto& s : shapes) {
        a_n = std::max(a_n, static_cast<size_t>(s.m) * s.k);
        b_n = std::max(b_n, static_cast<size_t>(s.k) * s.n);
        c_n = std::max(c_n, static_cast<size_t>(s.m) * s.n);
        scratch = std::max(scratch, backend.gemm_scratch_bytes(s.trans_a, s.trans_b, s.m, s.n, s.k,
                                                               s.trans_a ? s.m : s.k, s.trans_b ? s.k : s.n));
    }
    const size_t copy_bytes = backend.gemm_copy_bytes();
    const bool copies = kind == BareGemm::library_alone && copy_bytes > 0;
    if (!copies) backend.reserve_gemm_scratch(scratch);
    const Buffer a_block = float_buffer(backend, a_n), b_block = float_buffer(backend, b_n),
                 c_block = float_buffer(backend, c_n);
    float *a = a_block.floats(), *b = b_block.floats(), *c = c_block.floats();
    // Random operands, as in training: constant ones can run faster than real
    // data does (the multipliers toggle fewer bits), which would flatter the peer.
    {
        std::vector<float> host(std::max(a_n, b_n));
        Rng rng(17);
        for (float& x : host) x = static_cast<float>(rng.uniform() * 2.0 - 1.0);
        backend.copy_to_device(a, host.data(), a_n * sizeof(float));
        backend.copy_to_device(b, host.data() + (host.size() - b_n), b_n * sizeof(float));
    }
    backend.fill(c, c_n, 0.0f);
    Operands in{a, b, false};
    Buffer a16, b16;
    if (copies) {  // rounded once, outside the timing
        a16 = Buffer(backend, a_n * copy_bytes);
        b16 = Buffer(backend, b_n * copy_bytes);
        backend.gemm_copy(a, a16.get(), a_n);
        backend.gemm_copy(b, b16.get(), b_n);
        in = {a16.get(), b16.get(), true};
    }
    std::vector<double> rates(shapes.size(), 0.0);
    for (size_t i = 0; i < shapes.size(); ++i) {
        for (size_t j = 0; j < i && rates[i] == 0.0; ++j)
            if (shapes[j].same_call(shapes[i])) rates[i] = rates[j];
        if (rates[i] == 0.0) rates[i] = measure(backend, shapes[i], in, c, min_seconds);
    }
    return rates;
}

}  // namespace gputrain::cli

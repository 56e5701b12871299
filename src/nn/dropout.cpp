#include "nn/dropout.hpp"

#include <charconv>
#include <string>

#include "backend/ops/elementwise.hpp"
#include "nn/registry.hpp"

namespace gputrain::nn {

std::string Dropout::detail() const {
    // The shortest text of the float used: 0.9999999 is not 1 (%g's 6 digits).
    char buf[32];
    const auto end = std::to_chars(buf, buf + sizeof buf, rate_).ptr;
    return "rate " + std::string(buf, end);
}

Shape Dropout::build(const Shape& input_shape) {
    elements_ = shape_elements(input_shape);
    return input_shape;
}

uint64_t step_mask_key(const RunContext& ctx, int index, uint32_t salt) {
    Rng keyed(ctx.seed);
    const uint64_t key = keyed.split(static_cast<uint64_t>(index) * 0x100000001ull + salt).next_u64() ^
                         (static_cast<uint64_t>(ctx.epoch) << 40) ^ (static_cast<uint64_t>(ctx.step) << 8);
    return Rng(key).next_u64();
}

void upload_mask_key(const RunContext& ctx, uint32_t* words, uint64_t key, bool& written, uint64_t& held) {
    if (written && key == held) return;  // prepared for this step already
    const uint32_t halves[2] = {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)};
    ctx.backend.upload(words, halves, sizeof halves);
    written = true;
    held = key;
}

uint64_t Dropout::key_of(const RunContext& ctx) const { return step_mask_key(ctx, index_, 0x5bd1e995u); }

void Dropout::write_key(const RunContext& ctx) { upload_mask_key(ctx, key_, key_of(ctx), key_written_, written_key_); }

void Dropout::prepare_step(const RunContext& ctx) {
    if (ctx.training && rate_ > 0.0f) write_key(ctx);
}

void Dropout::forward(const RunContext& ctx, const float* x, float* y, int rows) {
    const size_t n = static_cast<size_t>(rows) * elements_;
    last_forward_training_ = ctx.training && rate_ > 0.0f;
    if (!last_forward_training_) {
        ctx.backend.copy(y, x, n * sizeof(float));
        return;
    }
    // Nothing to write when prepare_step ran for this step (always in training);
    // a caller that skipped it still gets the step's mask.
    write_key(ctx);
    const uint64_t first = static_cast<uint64_t>(ctx.row_offset) * static_cast<uint64_t>(elements_);
    ctx.backend.dropout_forward_keyed(x, y, mask_, n, rate_, key_, first);
}

void Dropout::backward(const RunContext& ctx, const float*, const float*, const float* dy, float* dx, int rows) {
    if (!dx) return;
    const size_t n = static_cast<size_t>(rows) * elements_;
    if (last_forward_training_)
        run_op(ctx.backend, ops::Multiply{dy, mask_, dx, n});
    else
        ctx.backend.copy(dx, dy, n * sizeof(float));
}

// dropout: rate.
void add_dropout_layer(LayerRegistry& registry) {
    registry.add("dropout", {"rate"}, [](LayerArgs& args) -> std::unique_ptr<Layer> {
        if (!args.has("rate")) args.fail("rate", "missing; give the fraction to drop, e.g. rate: 0.2");
        const double rate = args.number("rate", 0.0, 0.0, 1.0);
        if (static_cast<float>(rate) >= 1.0f)  // applied in fp32, where it would drop everything
            args.fail("rate", "is 1 in float32, which drops every input; give at most 0.9999999");
        args.finish();
        return std::make_unique<Dropout>(static_cast<float>(rate));
    });
}

}  // namespace gputrain::nn

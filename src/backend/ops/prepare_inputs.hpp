// PrepareInputs: a shard's samples as the model reads them, made in one pass
// from the data set's own storage (backend/kernels.hpp says how ops run):
// gathered by the epoch's order when the set is resident, bytes turned into
// floats through a per-channel table (data.scale and data.normalize), and,
// for training, augmented (data.augment). Kernels:
// backend/cpu/prepare_kernels.cpp, backend/cuda/prepare_kernels.cu; both call
// the functions below, so that a sample's augmentation is the same function
// of (training.seed, epoch, sample index) on every backend and replica.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "backend/math.hpp"  // GPUTRAIN_HD


namespace gputrain::ops {

enum class AugmentKind : int32_t { none = 0, random_crop, random_flip, random_translate, cutout, random_rotation };

// One step of data.augment. random_crop: a = padding, b = 1 for reflect (0:
// zero); random_flip: a = horizontal, b = vertical; random_translate: a = the
// most rows, b = the most columns, c = 1 for reflect; cutout: a = size, b =
// count; random_rotation: f = the most degrees either way.
struct AugmentStep {
    AugmentKind kind = AugmentKind::none;
    int32_t a = 0, b = 0, c = 0;
    float f = 0.0f;
};

inline constexpr int kMaxAugmentSteps = 8;
inline constexpr int kMaxCutouts = 8;

// The samples' layout (height x width x channels, channels last) and the
// augmentation steps, applied in order.
struct AugmentPlan {
    int32_t height = 1, width = 1, channels = 1;
    int32_t steps = 0;
    AugmentStep step[kMaxAugmentSteps];
    uint64_t seed = 0;
};

struct PrepareInputs {
    static constexpr const char* kName = "prepare_inputs";
    const void* source;            // samples, one after another: bytes (source_u8), token ids or floats
    bool source_u8;
    size_t sample_elements;        // height * width * channels
    // Token windows (format: text): the source holds ids of token_bytes (2
    // or 4) each, sample s starting at id s * token_stride (resident: the
    // text's ids, windows overlapping by one; copied rows: positions + 1 ids a
    // row). Input t of a row is its id t as a float, label t its id t + 1,
    // written to `labels` with or without `order`. 0: not tokens.
    int token_bytes = 0;
    size_t token_stride = 0;
    // Resident sets: row r is source sample order[params[0] + r], and its
    // label_width label values (class indices or float targets' bits) are
    // gathered into `labels`. Null: row r is source sample r (a copied shard).
    const int32_t* order;
    const int64_t* params;         // backend memory: [first position in the order, epoch]
    const int32_t* source_labels;  // with order
    int32_t* labels;               // with order
    int label_width = 1;
    const int32_t* ids;            // without order, augmenting: each row's sample index
    // Bytes: channels x 256 floats, the value of byte v in channel c at
    // [c * 256 + v]. Floats (already scaled and normalized): `channels` fill
    // values, what a black pixel (0) became.
    const float* table;
    bool augment;
    AugmentPlan plan;
    int rows;
    float* out;                    // rows x sample_elements
};

// Id i of a token source of `bytes` (2 or 4) bytes an id.
GPUTRAIN_HD uint32_t token_at(const void* source, int bytes, size_t i) {
    return bytes == 2 ? static_cast<const uint16_t*>(source)[i] : static_cast<const uint32_t*>(source)[i];
}

// ---- The per-sample random draws: counter-based, so any sample's are known without the others' ----

GPUTRAIN_HD uint64_t mix64(uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// The key of sample `id`'s augmentation in `epoch`.
GPUTRAIN_HD uint64_t augment_key(uint64_t seed, int64_t epoch, int64_t id) {
    return mix64(mix64(mix64(seed) ^ static_cast<uint64_t>(epoch)) ^ static_cast<uint64_t>(id));
}

// Draw j of step k.
GPUTRAIN_HD uint64_t augment_draw(uint64_t key, int k, int j) {
    return mix64(key ^ (static_cast<uint64_t>(k * 64 + j + 1) * 0xD1B54A32D192ED03ull));
}

// The draws of one sample, hashed when asked (the GPU: one thread a pixel).
struct HashedDraws {
    uint64_t key;
    GPUTRAIN_HD uint64_t operator()(int k, int j) const { return augment_draw(key, k, j); }
};

// The draws of one sample, hashed once for all its pixels (the CPU).
inline constexpr int kDrawsPerStep = 2 * kMaxCutouts;
struct TabledDraws {
    const uint64_t* table;  // kMaxAugmentSteps x kDrawsPerStep
    uint64_t operator()(int k, int j) const { return table[k * kDrawsPerStep + j]; }
};

// An integer in [0, n).
template <class Draws>
GPUTRAIN_HD int draw_below(const Draws& draws, int k, int j, int n) {
    return static_cast<int>(draws(k, j) % static_cast<uint64_t>(n));
}

// A float in [0, 1) with 24 random bits.
template <class Draws>
GPUTRAIN_HD float draw_unit(const Draws& draws, int k, int j) {
    return static_cast<float>(draws(k, j) >> 40) * (1.0f / 16777216.0f);
}

// Mirror an index into [0, n) without repeating the edge (torchvision's "reflect").
GPUTRAIN_HD int reflect_index(int i, int n) {
    if (n == 1) return 0;
    if (i < 0) i = -i;
    if (i >= n) i = 2 * n - 2 - i;
    return i;
}

// Maps a pixel of the output of step `from` back through the integer steps
// from..to (inclusive, to <= from) to the input of step `to`. False when the
// pixel is fill (padding, translated in, or cut out).
template <class Draws>
GPUTRAIN_HD bool map_back(const AugmentPlan& p, const Draws& key, int from, int to, int& y, int& x) {
    for (int k = from; k >= to; --k) {
        const AugmentStep& s = p.step[k];
        switch (s.kind) {
            case AugmentKind::random_crop:
            case AugmentKind::random_translate: {
                const bool crop = s.kind == AugmentKind::random_crop;
                const int most_y = s.a, most_x = crop ? s.a : s.b;
                const bool reflect = crop ? s.b != 0 : s.c != 0;
                y += draw_below(key, k, 0, 2 * most_y + 1) - most_y;
                x += draw_below(key, k, 1, 2 * most_x + 1) - most_x;
                if (reflect) {
                    y = reflect_index(y, p.height);
                    x = reflect_index(x, p.width);
                } else if (y < 0 || y >= p.height || x < 0 || x >= p.width) {
                    return false;
                }
                break;
            }
            case AugmentKind::random_flip:
                if (s.a && (key(k, 0) & 1u)) x = p.width - 1 - x;
                if (s.b && (key(k, 1) & 1u)) y = p.height - 1 - y;
                break;
            case AugmentKind::cutout:
                for (int j = 0; j < s.b; ++j) {
                    // The square's centre is anywhere in the image; the square may reach past its edges (DeVries & Taylor).
                    const int y0 = draw_below(key, k, 2 * j, p.height) - s.a / 2;
                    const int x0 = draw_below(key, k, 2 * j + 1, p.width) - s.a / 2;
                    if (y >= y0 && y < y0 + s.a && x >= x0 && x < x0 + s.a) return false;
                }
                break;
            default: break;
        }
    }
    return true;
}

// The value of element (y, x, c) of an augmented sample. `key(k, j)` is draw
// j of step k (HashedDraws or TabledDraws of augment_key); `fetch(y, x, c)`
// reads the source sample; `fill` is the channel's value of a black pixel.
template <class Draws, class Fetch>
GPUTRAIN_HD float augmented_value(const AugmentPlan& p, const Draws& key, int y, int x, int c, float fill,
                                  const Fetch& fetch) {
    int rotation = -1;
    for (int k = 0; k < p.steps; ++k)
        if (p.step[k].kind == AugmentKind::random_rotation) rotation = k;
    if (!map_back(p, key, p.steps - 1, rotation + 1, y, x)) return fill;
    if (rotation < 0) return fetch(y, x, c);
    // Rotation by an angle in [-f, f] degrees about the image's centre: the
    // output pixel reads the input at the inverse rotation of its place,
    // interpolated bilinearly; outside the input is fill.
    const float degrees = (2.0f * draw_unit(key, rotation, 0) - 1.0f) * p.step[rotation].f;
    const float radians = degrees * 0.017453292519943295f;
    const float cos_t = cosf(radians), sin_t = sinf(radians);
    const float cy = 0.5f * static_cast<float>(p.height - 1), cx = 0.5f * static_cast<float>(p.width - 1);
    const float dy = static_cast<float>(y) - cy, dx = static_cast<float>(x) - cx;
    const float sy = cy + cos_t * dy - sin_t * dx;
    const float sx = cx + sin_t * dy + cos_t * dx;
    const float fy = floorf(sy), fx = floorf(sx);
    const float wy = sy - fy, wx = sx - fx;
    const int y0 = static_cast<int>(fy), x0 = static_cast<int>(fx);
    float sum = 0.0f;
    for (int n = 0; n < 4; ++n) {
        const int ny = y0 + (n >> 1), nx = x0 + (n & 1);
        const float w = ((n >> 1) ? wy : 1.0f - wy) * ((n & 1) ? wx : 1.0f - wx);
        if (w == 0.0f) continue;
        int my = ny, mx = nx;
        float v = fill;
        if (ny >= 0 && ny < p.height && nx >= 0 && nx < p.width && map_back(p, key, rotation - 1, 0, my, mx))
            v = fetch(my, mx, c);
        sum += w * v;
    }
    return sum;
}

}  // namespace gputrain::ops

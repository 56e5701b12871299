#include "core/suggest.hpp"

#include <algorithm>
#include <cctype>

namespace gputrain {

size_t edit_distance(const std::string& a, const std::string& b) {
    const size_t n = a.size(), m = b.size();
    std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
    for (size_t i = 0; i <= n; ++i) d[i][0] = i;
    for (size_t j = 0; j <= m; ++j) d[0][j] = j;
    for (size_t i = 1; i <= n; ++i) {
        for (size_t j = 1; j <= m; ++j) {
            const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                              std::tolower(static_cast<unsigned char>(b[j - 1]));
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (same ? 0 : 1)});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    }
    return d[n][m];
}

namespace {

// Lower case, without '_', '-' and spaces: "MaxPooling2D" -> "maxpooling2d".
std::string folded(const std::string& name) {
    std::string out;
    for (const char c : name)
        if (c != '_' && c != '-' && c != ' ') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

// The alias `name` is, among those that name a candidate (or nothing).
const NameAlias* alias_of(const std::string& name, const std::vector<std::string>& candidates) {
    const std::string key = folded(name);
    for (const NameAlias& a : name_aliases())
        if (folded(a.name) == key && (*a.means == '\0' || contains(candidates, a.means))) return &a;
    return nullptr;
}

}  // namespace

const std::vector<NameAlias>& name_aliases() {
    static const std::vector<NameAlias> table{
        // Layer types (Keras' classes, PyTorch's modules). Names equal but
        // for case and underscores (Dense, Conv2D, MaxPool2d, BatchNorm,
        // GlobalAvgPool2D, ReLU, Add) need no entry.
        {"Linear", "dense", "", "layer type"},
        {"MaxPooling2D", "max_pool2d", "", "layer type"},
        {"AveragePooling2D", "avg_pool2d", "", "layer type"},
        {"GlobalAveragePooling2D", "global_avg_pool2d", "", "layer type"},
        {"AdaptiveAvgPool2d", "global_avg_pool2d", "for an output size of 1", "layer type"},
        {"BatchNormalization", "batch_norm", "", "layer type"},
        {"BatchNorm2d", "batch_norm", "", "layer type"},
        {"BatchNorm1d", "batch_norm", "", "layer type"},
        {"Concat", "concatenate", "", "layer type"},
        {"cat", "concatenate", "", "layer type"},
        // Layer keys.
        {"p", "rate", "", "dropout key"},
        {"out_features", "units", "", "dense key"},
        {"out_channels", "filters", "", "conv2d key"},
        {"stride", "strides", "", "conv2d and pooling key"},
        {"dilation", "dilation_rate", "", "conv2d key"},
        {"bias", "use_bias", "", "dense and conv2d key"},
        {"eps", "epsilon", "", "batch_norm and optimizer key"},
        {"kernel_size", "pool_size", "", "pooling key"},
        {"in_features", "", "gputrain infers a layer's input size from the layer before: remove it", "dense key"},
        {"in_channels", "", "gputrain infers a layer's input channels from the layer before: remove it",
         "conv2d key"},
        {"num_features", "", "gputrain infers the channels from the layer before: remove it", "batch_norm key"},
        // Config keys.
        {"lr", "learning_rate", "", "optimizer key"},
        {"beta_1", "beta1", "", "optimizer key"},
        {"betas", "beta1", "and beta2: one key each", "optimizer key (PyTorch's Adam)"},
        {"alpha", "rho", "", "optimizer key (PyTorch's RMSprop)"},
        {"name", "type", "", "optimizer, schedule and strategy key"},
        {"beta_2", "beta2", "", "optimizer key"},
        {"optim", "type", "", "optimizer key"},
        {"batch", "batch_size", "", "training key"},
        {"epoch", "epochs", "", "training key"},
        {"num_epochs", "epochs", "", "training key"},
        {"step_size", "decay_epochs", "", "optimizer.schedule key (PyTorch's StepLR)"},
        {"gamma", "decay_rate", "", "optimizer.schedule key (PyTorch's StepLR, ExponentialLR)"},
        {"warmup", "warmup_epochs", "", "optimizer.schedule key"},
        {"eta_min", "min_lr", "", "optimizer.schedule key (PyTorch's CosineAnnealingLR)"},
        {"T_max", "", "the cosine schedule runs over training.epochs: remove it", "optimizer.schedule key"},
        {"gradient_accumulation_steps", "accumulate_steps", "", "training key (Hugging Face's)"},
        {"accumulate_grad_batches", "accumulate_steps", "", "training key (Lightning's)"},
        {"iter_size", "accumulate_steps", "", "training key (Caffe's)"},
        {"accumulate", "accumulate_steps", "", "training key"},
        {"use_ema", "ema", "", "training key (Keras' optimizer argument)"},
        {"ema_momentum", "decay", "", "training.ema key (Keras')"},
        {"total_steps", "", "one_cycle runs over training.epochs x steps per epoch: remove it", "optimizer.schedule key (PyTorch's OneCycleLR)"},
        {"anneal_strategy", "", "one_cycle anneals by cosine: remove it", "optimizer.schedule key (PyTorch's OneCycleLR)"},
        {"polynomial", "linear", "", "schedule (Keras' PolynomialDecay with power 1)"},
        {"onecycle", "one_cycle", "", "schedule"},
        {"requires_grad", "trainable", "", "layer key (PyTorch's)"},
        {"verbose", "progress", "", "logging key"},
        {"save_best_only", "save_best", "", "checkpoint key (Keras' ModelCheckpoint)"},
        {"period", "every_epochs", "", "checkpoint key"},
        {"save_freq", "every_epochs", "", "checkpoint key"},
        {"max_to_keep", "keep_last", "", "checkpoint key"},
        {"layer", "layers", "", "model key"},
        {"input", "input_shape", "", "model key"},
        {"workers", "replicas", "", "strategy key"},
        {"gpus", "devices", "", "strategy key"},
        // Values.
        {"acc", "accuracy", "", "metric, monitor"},
        {"sparse_categorical_accuracy", "accuracy", "", "metric"},
        {"categorical_accuracy", "accuracy", "", "metric"},
        {"val_acc", "val_accuracy", "", "monitor"},
        {"mean_absolute_error", "mae", "", "metric"},
        {"mean_squared_error", "mse", "", "metric"},
        {"val_mean_absolute_error", "val_mae", "", "monitor"},
        {"val_mean_squared_error", "val_mse", "", "monitor"},
        {"CrossEntropyLoss", "sparse_categorical_crossentropy",
         "PyTorch's CrossEntropyLoss takes logits: write loss: {name: sparse_categorical_crossentropy, from_logits: "
         "true} and no softmax on the last layer",
         "loss"},
        {"NLLLoss", "sparse_categorical_crossentropy",
         "it takes the softmax's probabilities (or logits with from_logits: true), not log-probabilities", "loss"},
        {"MSELoss", "mean_squared_error", "", "loss"},
        {"mse", "mean_squared_error", "", "loss"},
        {"L1Loss", "mean_absolute_error", "", "loss"},
        {"mae", "mean_absolute_error", "", "loss"},
        {"HuberLoss", "huber", "its delta is loss.delta (default 1.0, as PyTorch's)", "loss"},
        {"SmoothL1Loss", "huber",
         "with beta 1 SmoothL1Loss equals HuberLoss with delta 1; other betas differ by a factor of beta", "loss"},
        {"StepLR", "step_decay", "", "optimizer.schedule.type"},
        {"ExponentialLR", "exponential_decay", "", "optimizer.schedule.type"},
        {"CosineAnnealingLR", "cosine", "", "optimizer.schedule.type"},
        {"CosineDecay", "cosine", "", "optimizer.schedule.type"},
        {"float32", "fp32", "", "training.precision"},
        {"float16", "fp16", "", "training.precision"},
        {"mixed_float16", "fp16", "", "training.precision"},
        {"bfloat16", "bf16", "", "training.precision"},
        {"mixed_bfloat16", "bf16", "", "training.precision"},
        {"MirroredStrategy", "mirrored", "", "strategy.type"},
        {"MultiWorkerMirroredStrategy", "multi_worker_mirrored", "", "strategy.type"},
        {"OneDeviceStrategy", "one_device", "", "strategy.type"},
        {"DistributedDataParallel", "multi_worker_mirrored",
         "across machines: one process per host, started by mpirun or srun (on one machine: mirrored)",
         "strategy.type"},
    };
    return table;
}

std::string closest_name(const std::string& name, const std::vector<std::string>& candidates) {
    if (const NameAlias* a = alias_of(name, candidates)) return a->means;
    const std::string key = folded(name);
    for (const auto& c : candidates)
        if (folded(c) == key) return c;
    std::string best;
    size_t best_distance = std::max<size_t>(1, name.size() / 3) + 1;
    for (const auto& c : candidates) {
        const size_t dist = edit_distance(name, c);
        if (dist < best_distance) {
            best_distance = dist;
            best = c;
        }
    }
    return best;
}

std::string did_you_mean(const std::string& name, const std::vector<std::string>& candidates) {
    if (const NameAlias* a = alias_of(name, candidates)) {
        if (*a->means == '\0') return std::string(" (") + a->note + ")";
        return std::string(" (did you mean '") + a->means + "'?" + (*a->note ? std::string(" ") + a->note : "") +
               ")";
    }
    const std::string best = closest_name(name, candidates);
    return best.empty() ? std::string() : " (did you mean '" + best + "'?)";
}

std::string join_names(const std::vector<std::string>& names, const std::string& sep) {
    std::string out;
    for (size_t i = 0; i < names.size(); ++i) {
        if (i) out += sep;
        out += names[i];
    }
    return out;
}

}  // namespace gputrain

#include "nn/loss.hpp"

#include "core/error.hpp"
#include "core/suggest.hpp"

namespace gputrain::nn {

const std::vector<std::string>& loss_names() {
    static const std::vector<std::string> names{"sparse_categorical_crossentropy", "categorical_crossentropy",
                                                "mean_squared_error"};
    return names;
}

Loss::Loss(const config::LossConfig& cfg) : from_logits_(cfg.from_logits) {
    const auto& names = loss_names();
    size_t i = 0;
    while (i < names.size() && names[i] != cfg.name) ++i;
    if (i == names.size())
        throw ConfigError("loss: unknown loss '" + cfg.name + "'" + did_you_mean(cfg.name, names) +
                          "; known: " + join_names(names));
    kind_ = static_cast<LossKind>(i);
}

void Loss::compute(Backend& backend, const float* output, const int32_t* labels, int rows, int classes,
                   float grad_scale, float* grad, float* stats) const {
    if (rows == 0) return;
    switch (kind_) {
        case LossKind::sparse_categorical_crossentropy:
        case LossKind::categorical_crossentropy:
            // Labels are class indices in both; categorical compares against their one-hot form,
            // which gives the same value.
            if (from_logits_)
                backend.softmax_cross_entropy(output, labels, rows, classes, grad_scale, grad, stats);
            else
                backend.cross_entropy_probs(output, labels, rows, classes, grad_scale, grad, stats);
            return;
        case LossKind::mean_squared_error:
            backend.mean_squared_error(output, labels, rows, classes, grad_scale, grad, stats);
            return;
    }
}

}  // namespace gputrain::nn

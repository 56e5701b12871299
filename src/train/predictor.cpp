#include "train/predictor.hpp"

#include <algorithm>
#include <cmath>

namespace gputrain::train {

void softmax_rows(std::vector<float>& values, int64_t classes) {
    for (size_t begin = 0; begin + classes <= values.size(); begin += static_cast<size_t>(classes)) {
        float* row = values.data() + begin;
        const double top = *std::max_element(row, row + classes);
        double sum = 0;
        for (int64_t j = 0; j < classes; ++j) sum += std::exp(row[j] - top);
        for (int64_t j = 0; j < classes; ++j) row[j] = static_cast<float>(std::exp(row[j] - top) / sum);
    }
}

std::vector<float> predict_probabilities(Replica& replica, const std::vector<float>& inputs, int64_t rows) {
    nn::Model& model = replica.model();
    const int64_t classes = model.classes();
    const int64_t outputs = model.positions() * classes;  // per sample: a sequence model scores every position
    const int64_t elements = shape_elements(model.input_shape());
    const int64_t batch = model.max_rows();
    std::vector<float> out(static_cast<size_t>(rows * outputs));
    Backend& backend = replica.backend();
    for (int64_t begin = 0; begin < rows; begin += batch) {
        const int n = static_cast<int>(std::min(batch, rows - begin));
        backend.copy_to_device(replica.inputs(), inputs.data() + begin * elements,
                               static_cast<size_t>(n * elements) * sizeof(float));
        const nn::RunContext ctx{backend, false, 0, 0, 0, 0};
        model.predict(ctx, replica.inputs(), n);
        backend.copy_to_host(out.data() + begin * outputs, model.outputs(),
                             static_cast<size_t>(n * outputs) * sizeof(float));
    }
    // Logits (a fused softmax, or a loss that takes them): to probabilities. A
    // softmax layer under a logits loss already gave them, as Keras' predict would.
    if (model.loss().is_cross_entropy() && model.loss().from_logits() && !model.softmax_under_logits_loss())
        softmax_rows(out, classes);
    return out;
}

}  // namespace gputrain::train

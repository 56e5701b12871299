#include "train/evaluator.hpp"

#include <algorithm>
#include <cmath>
#include <mutex>

#include "data/loader.hpp"
#include "core/error.hpp"
#include "train/parallel.hpp"
#include "train/predictor.hpp"

namespace gputrain::train {

EvalResult evaluate(std::vector<std::unique_ptr<Replica>>& replicas, const data::Dataset& dataset,
                    int64_t global_batch, bool with_confusion) {
    EvalResult result;
    result.samples = dataset.size();
    result.classes = replicas[0]->model().classes();
    if (with_confusion && dataset.real_targets)
        throw ConfigError("--confusion: counts predicted classes, and the targets of " + dataset.description +
                          " are real values; evaluate without --confusion");
    if (with_confusion) result.confusion.assign(static_cast<size_t>(result.classes * result.classes), 0);
    if (dataset.size() == 0) return result;

    const int n = static_cast<int>(replicas.size());
    // Scores do not depend on the batch: one larger than the replicas' input
    // buffers (built for the training batch) is cut down to what they hold.
    const int world = replicas[0]->comm().size();
    global_batch = std::max<int64_t>(1, std::min(global_batch, replicas[0]->max_rows() * world));
    data::Loader loader(dataset, global_batch, replicas[0]->comm().size(), /*shuffle=*/false, 0,
                        /*prefetch_depth=*/4, n);
    loader.start_epoch(0);
    for (auto& r : replicas) r->set_input_format(dataset);
    std::vector<double> sums(2, 0.0);
    run_on_replicas(replicas, [&](Replica& r) {
        r.reset_stats();
        const int classes = static_cast<int>(result.classes);
        std::vector<float> host_out;
        std::vector<int64_t> local_confusion(with_confusion ? result.confusion.size() : 0, 0);
        for (int64_t step = 0; step < loader.steps_per_epoch(); ++step) {
            auto batch = loader.get(step);
            const int64_t begin = batch->shard_begin[r.rank()], end = batch->shard_begin[r.rank() + 1];
            const int rows = static_cast<int>(end - begin);
            r.load_shard(*batch, begin, end, /*augmenting=*/false);
            r.prepare_shard(/*augmenting=*/false);
            nn::RunContext ctx{r.backend(), false, 0, 0, step, begin};
            r.model().evaluate(ctx, r.inputs(), r.labels(), rows, r.stats());
            if (with_confusion && rows > 0) {
                host_out.resize(static_cast<size_t>(rows) * classes);
                r.backend().copy_to_host(host_out.data(), r.model().outputs(), host_out.size() * sizeof(float));
                for (int i = 0; i < rows; ++i) {
                    const float* row = host_out.data() + static_cast<size_t>(i) * classes;
                    const int64_t predicted = std::max_element(row, row + classes) - row;
                    ++local_confusion[static_cast<size_t>(batch->labels[begin + i] * classes + predicted)];
                }
            }
        }
        double local[2];
        r.read_stats(local[0], local[1]);
        r.comm().allreduce_sum_host(local, 2);
        const bool first = &r == replicas[0].get();  // every worker keeps the global sums
        if (first) {
            sums[0] = local[0];
            sums[1] = local[1];
        }
        if (with_confusion) {
            // Summed over every replica of every worker (counts are exact in doubles).
            std::vector<double> counts(local_confusion.begin(), local_confusion.end());
            r.comm().allreduce_sum_host(counts.data(), counts.size());
            if (first)
                for (size_t i = 0; i < counts.size(); ++i) result.confusion[i] = static_cast<int64_t>(counts[i]);
        }
    });
    result.loss = sums[0] / static_cast<double>(dataset.size());
    result.metric = sums[1] / static_cast<double>(dataset.size());
    return result;
}

EvalResult evaluate_flip_tta(Replica& replica, const data::Dataset& dataset, config::LossKind loss,
                             bool with_confusion) {
    const Shape& shape = dataset.sample_shape;
    if (dataset.real_targets)
        throw ConfigError("--tta flip: averages class probabilities, and the targets of " + dataset.description +
                          " are real values; evaluate without --tta");
    if (!config::is_cross_entropy(loss))
        throw ConfigError(std::string("--tta flip: averages class probabilities, and loss.name is ") +
                          config::name_of(loss) + "; evaluate without --tta");
    if (shape.size() != 2 && shape.size() != 3)
        throw ConfigError("--tta flip: mirrors images, and the samples have shape " + shape_to_string(shape, false) +
                          "; give model.input_shape as [height, width, channels]");
    EvalResult result;
    result.samples = dataset.size();
    result.classes = replica.model().classes();
    if (with_confusion) result.confusion.assign(static_cast<size_t>(result.classes * result.classes), 0);
    if (dataset.size() == 0) return result;
    const int64_t height = shape[0], width = shape[1], channels = shape.size() == 3 ? shape[2] : 1;
    const int64_t per = dataset.sample_elements(), classes = result.classes;
    double loss_sum = 0, correct = 0;
    const int64_t chunk = 4096;  // samples converted to floats at a time
    for (int64_t first = 0; first < dataset.size(); first += chunk) {
        const int64_t rows = std::min(chunk, dataset.size() - first);
        const std::vector<float> x = data::model_inputs(dataset, first, first + rows);
        std::vector<float> mirrored(x.size());
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t y = 0; y < height; ++y)
                for (int64_t col = 0; col < width; ++col)
                    std::copy_n(x.begin() + r * per + (y * width + col) * channels, channels,
                                mirrored.begin() + r * per + (y * width + (width - 1 - col)) * channels);
        const std::vector<float> p = predict_probabilities(replica, x, rows);
        const std::vector<float> q = predict_probabilities(replica, mirrored, rows);
        for (int64_t r = 0; r < rows; ++r) {
            const int32_t label = dataset.labels[static_cast<size_t>(first + r)];
            int64_t best = 0;
            double best_p = -1;
            for (int64_t c = 0; c < classes; ++c) {
                const double mean = 0.5 * (static_cast<double>(p[r * classes + c]) + q[r * classes + c]);
                if (mean > best_p) best_p = mean, best = c;
                if (c == label) loss_sum -= std::log(std::clamp(mean, 1e-7, 1.0 - 1e-7));
            }
            correct += best == label;
            if (with_confusion) ++result.confusion[static_cast<size_t>(label * classes + best)];
        }
    }
    result.loss = loss_sum / static_cast<double>(dataset.size());
    result.metric = correct / static_cast<double>(dataset.size());
    return result;
}

}  // namespace gputrain::train

#include "train/evaluator.hpp"

#include <algorithm>
#include <mutex>

#include "data/loader.hpp"
#include "train/parallel.hpp"

namespace gputrain::train {

EvalResult evaluate(std::vector<std::unique_ptr<Replica>>& replicas, const data::Dataset& dataset,
                    int64_t global_batch, bool with_confusion) {
    EvalResult result;
    result.samples = dataset.size();
    result.classes = replicas[0]->model().classes();
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
    result.accuracy = sums[1] / static_cast<double>(dataset.size());
    return result;
}

}  // namespace gputrain::train

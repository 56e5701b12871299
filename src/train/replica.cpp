#include "train/replica.hpp"

namespace gputrain::train {

Replica::Replica(const config::RunConfig& cfg, std::unique_ptr<Backend> backend,
                 std::unique_ptr<dist::Communicator> comm, int64_t max_shard_rows)
    : backend_(std::move(backend)), comm_(std::move(comm)) {
    backend_->set_precision(precision_from_name(cfg.training.precision));
    const int64_t rows = std::max<int64_t>(1, max_shard_rows);
    model_ = std::make_unique<nn::Model>(cfg.model, cfg.loss, *backend_, rows, cfg.training.seed);
    optimizer_ = optim::make_optimizer(cfg.optimizer, *backend_, model_->param_count());
    sample_elements_ = shape_elements(model_->input_shape());
    inputs_ = backend_->allocate_floats(static_cast<size_t>(rows * sample_elements_));
    labels_ = static_cast<int32_t*>(backend_->allocate_bytes(static_cast<size_t>(rows) * sizeof(int32_t)));
    stats_ = backend_->allocate_floats(2);
}

Replica::~Replica() {
    backend_->release(inputs_);
    backend_->release(labels_);
    backend_->release(stats_);
}

void Replica::load_shard(const float* host_inputs, const int32_t* host_labels, int64_t begin, int64_t end) {
    if (end <= begin) return;
    backend_->copy_to_device(inputs_, host_inputs + begin * sample_elements_,
                             static_cast<size_t>((end - begin) * sample_elements_) * sizeof(float));
    backend_->copy_to_device(labels_, host_labels + begin, static_cast<size_t>(end - begin) * sizeof(int32_t));
}

void Replica::reset_stats() { backend_->fill(stats_, 2, 0.0f); }

void Replica::read_stats(double& loss_sum, double& correct) {
    float host[2];
    backend_->copy_to_host(host, stats_, sizeof host);
    loss_sum = host[0];
    correct = host[1];
}

}  // namespace gputrain::train

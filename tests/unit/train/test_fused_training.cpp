// training.fused_kernels end to end: with the layers' bias and activation in
// one pass each way (the default) and in two, training gives the same
// weights and losses bit for bit, and the fused passes are the ones that ran.
#include "backend/cpu/cpu_backend.hpp"
#include "dist/local_communicator.hpp"
#include "train_fixture.hpp"

using namespace gputrain;

namespace {

// A CpuBackend that counts the bias and activation passes it is asked for.
class CountingBackend : public CpuBackend {
public:
    int64_t fused = 0, plain = 0;
    void bias_activation_forward(Activation a, float* z, const float* bias, float* y, int rows, int cols) override {
        ++fused;
        CpuBackend::bias_activation_forward(a, z, bias, y, rows, cols);
    }
    void activation_bias_backward(Activation a, const float* z, const float* y, const float* dy, float* dz, float* db,
                                  int rows, int cols) override {
        ++fused;
        CpuBackend::activation_bias_backward(a, z, y, dy, dz, db, rows, cols);
    }
    void activation_forward(Activation a, const float* x, float* y, size_t n) override {
        ++plain;
        CpuBackend::activation_forward(a, x, y, n);
    }
    void activation_backward(Activation a, const float* x, const float* y, const float* dy, float* dx,
                             size_t n) override {
        ++plain;
        CpuBackend::activation_backward(a, x, y, dy, dx, n);
    }
};

std::vector<std::unique_ptr<train::Replica>> counting_replica(const config::RunConfig& cfg) {
    std::vector<std::unique_ptr<train::Replica>> out;
    auto comms = dist::make_local_communicators(1);
    out.push_back(std::make_unique<train::Replica>(cfg, std::make_unique<CountingBackend>(), std::move(comms[0]),
                                                   cfg.training.batch_size));
    return out;
}

CountingBackend& counts(train::Replica& r) { return static_cast<CountingBackend&>(r.backend()); }

config::RunConfig mixed_activations_job() {
    using specs::layer;
    auto cfg = fixture::small_job(2, 16);
    cfg.model.layers = {layer("dense", {{"units", "16"}, {"activation", "gelu"}}),
                        layer("dense", {{"units", "8"}, {"activation", "tanh"}}),
                        layer("dropout", {{"rate", "0.25"}}),
                        layer("dense", {{"units", "8"}, {"activation", "sigmoid"}, {"use_bias", "false"}}),
                        layer("dense", {{"units", "8"}}),
                        layer("dense", {{"units", "3"}, {"activation", "softmax"}})};
    return cfg;
}

config::RunConfig conv_job() {
    using specs::layer;
    auto cfg = fixture::small_job(2, 16);
    cfg.model.layers = {layer("reshape", {{"target_shape", "3,2,1"}}),
                        layer("conv2d", {{"filters", "4"}, {"kernel_size", "2"}, {"padding", "same"},
                                         {"activation", "relu"}}),
                        layer("flatten"),
                        layer("dense", {{"units", "3"}, {"activation", "softmax"}})};
    return cfg;
}

}  // namespace

TEST_CASE("Fused and plain bias + activation passes train to the same weights; the fused ones ran") {
    const bool cnn = GENERATE(false, true);
    INFO((cnn ? "conv2d relu" : "dense gelu, tanh, sigmoid without bias, linear"));
    data::DataSplits data;
    data.train = fixture::blobs(150, 4);
    auto cfg = cnn ? conv_job() : mixed_activations_job();
    fixture::TempDir fused_dir, plain_dir;
    auto fused = counting_replica(cfg);
    const auto fused_run = fixture::fit(cfg, fused, data, fused_dir.path.string());
    cfg.training.fused_kernels = false;
    auto plain = counting_replica(cfg);
    const auto plain_run = fixture::fit(cfg, plain, data, plain_dir.path.string());

    REQUIRE(fixture::params_of(*fused[0]) == fixture::params_of(*plain[0]));
    for (size_t e = 0; e < 2; ++e) REQUIRE(fused_run.history[e].loss == plain_run.history[e].loss);
    // 2 epochs x 10 steps, forward and backward: 3 element-wise layers of the
    // MLP, 1 of the CNN (the softmax and linear layers take the plain path).
    const int64_t elementwise_layers = cnn ? 1 : 3;
    CHECK(counts(*fused[0]).fused == 2 * 10 * 2 * elementwise_layers);
    CHECK(counts(*fused[0]).plain == 0);
    CHECK(counts(*plain[0]).fused == 0);
    CHECK(counts(*plain[0]).plain == 2 * 10 * 2 * elementwise_layers);
}

TEST_CASE("Fused and plain passes agree across two replicas as well") {
    data::DataSplits data;
    data.train = fixture::blobs(150, 4);
    auto cfg = mixed_activations_job();
    fixture::TempDir fused_dir, plain_dir;
    auto fused = fixture::replicas(cfg, 2);
    fixture::fit(cfg, fused, data, fused_dir.path.string());
    cfg.training.fused_kernels = false;
    auto plain = fixture::replicas(cfg, 2);
    fixture::fit(cfg, plain, data, plain_dir.path.string());
    REQUIRE(fixture::params_of(*fused[0]) == fixture::params_of(*plain[0]));
    REQUIRE(fixture::params_of(*fused[1]) == fixture::params_of(*plain[1]));
}

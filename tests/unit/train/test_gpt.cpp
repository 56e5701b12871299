// A tiny GPT (token and position embeddings, pre-norm attention and MLP
// blocks with residual adds, a head over the vocabulary at every position)
// trained on generated text: N replicas = 1 replica, a resume is bit for bit,
// and the loss is the mean cross-entropy over every position, checked
// against the model's own logits scored by hand.
#include <cmath>

#include "data/text_reader.hpp"
#include "dist/local_communicator.hpp"
#include "recording_backend.hpp"
#include "train/evaluator.hpp"
#include "train/predictor.hpp"
#include "train_fixture.hpp"

using namespace gputrain;

namespace {

config::LayerSpec reading(config::LayerSpec spec, std::vector<std::string> inputs) {
    for (auto& name : inputs) spec.inputs.push_back({name});
    return spec;
}

// Vocabulary 7, 8 positions, width 8, two heads, one block.
config::RunConfig tiny_gpt(int64_t epochs, int64_t batch) {
    using specs::layer;
    auto cfg = fixture::small_job(epochs, batch, config::OptimizerType::adamw);
    cfg.model.input_shape = {8};
    cfg.model.layers = {
        layer("embedding", {{"input_dim", "7"}, {"output_dim", "8"}}, "tok"),
        layer("positional_embedding", {}, "pos"),
        layer("layer_norm", {}, "ln1"),
        layer("causal_self_attention", {{"heads", "2"}}, "attn"),
        layer("dropout", {{"rate", "0.1"}}, "drop"),
        reading(layer("add", {}, "res1"), {"drop", "pos"}),
        layer("layer_norm", {}, "ln2"),
        layer("dense", {{"units", "16"}, {"activation", "gelu"}}, "fc"),
        layer("dense", {{"units", "8"}}, "proj"),
        reading(layer("add", {}, "res2"), {"proj", "res1"}),
        layer("layer_norm", {}, "ln_f"),
        layer("dense", {{"units", "7"}}, "head")};
    cfg.loss.from_logits = true;
    cfg.optimizer.learning_rate = 0.01;
    cfg.optimizer.weight_decay = 0.1;
    cfg.optimizer.no_decay = {"bias", "norm", "embedding"};
    cfg.training.clip_norm = 0.5;
    return cfg;
}

// A text with structure to learn: each token mostly follows from the one before.
data::Dataset tiny_text(int64_t windows, uint64_t seed) {
    data::TextTokens t;
    t.vocab_size = 7;
    Rng rng(seed);
    uint32_t id = 0;
    for (int64_t i = 0; i < windows * 8 + 1; ++i) {
        t.ids.push_back(id);
        id = rng.uniform() < 0.8f ? (id * 3 + 1) % 7 : static_cast<uint32_t>(rng.uniform() * 7) % 7;
    }
    data::Dataset d = data::text_windows(t, 8, 0, windows);
    d.description = "tiny text";
    return d;
}

}  // namespace

// SGD shows the sums agree to float rounding (measured: 3e-8 at batch 10,
// 1.2e-7 at batch 2). AdamW divides each gradient by its own running RMS, so
// the rounding of gradients near zero (attention scores that barely matter)
// becomes a relative change of the same size in their updates: 5e-6 to 1e-4
// after 2 epochs, 6e-4 without clipping; the bound leaves room for that, not
// for a wrong shard weight (which moves the weights by percents).
TEST_CASE("A tiny GPT trains the same weights on 1, 2 and 3 replicas", "[gpt]") {
    data::DataSplits data;
    data.train = tiny_text(23, 1);  // 23 windows: batches of 10, 10 and 3
    for (int64_t batch : {10, 2})  // batch 2 over 3 replicas leaves one shard empty
    for (const bool sgd : {true, false}) {
        INFO("batch " << batch << (sgd ? ", sgd" : ", adamw with clip_norm and no_decay"));
        auto cfg = tiny_gpt(2, batch);
        if (sgd) {
            cfg.optimizer.type = config::OptimizerType::sgd;
            cfg.optimizer.learning_rate = 0.05;
            cfg.optimizer.weight_decay = 0;
            cfg.optimizer.no_decay.clear();
        }
        const double bound = sgd ? 1e-6 : 1e-3;
        fixture::TempDir d1;
        auto one = fixture::replicas(cfg, 1);
        fixture::fit(cfg, one, data, d1.path.string());
        const auto reference = fixture::params_of(*one[0]);
        for (int n : {2, 3}) {
            INFO(n << " replicas");
            fixture::TempDir dn;
            auto many = fixture::replicas(cfg, n);
            fixture::fit(cfg, many, data, dn.path.string());
            REQUIRE(fixture::relative_difference(reference, fixture::params_of(*many[0])) <= bound);
            for (int r = 1; r < n; ++r) REQUIRE(fixture::params_of(*many[r]) == fixture::params_of(*many[0]));
        }
    }
}

// Token windows reach the replicas as ids: gathered from the text's ids
// (resident), or copied as rows of positions + 1 ids by the loader, staged
// ahead as on a GPU (a backend with "device memory"), uint32 or uint16. The
// model reads the same floats and labels every way: the same bits.
TEST_CASE("A tiny GPT trains the same bits from resident or copied windows, staged, of uint32 or uint16 ids, strided",
          "[gpt]") {
    data::DataSplits data;
    data.train = tiny_text(23, 1);
    auto cfg = tiny_gpt(2, 10);
    cfg.data.resident = config::ResidentMode::on;
    fixture::TempDir d0;
    auto reference_replicas = fixture::replicas(cfg, 2);
    fixture::fit(cfg, reference_replicas, data, d0.path.string());
    const auto reference = fixture::params_of(*reference_replicas[0]);

    // The same ids as a uint16 view (what a mapped token cache holds).
    data::DataSplits narrow = data;
    auto ids16 = std::make_shared<std::vector<uint16_t>>();
    for (uint32_t id : data.train.tokens->to_vector()) ids16->push_back(static_cast<uint16_t>(id));
    narrow.train.tokens = std::make_shared<const data::TokenIds>(
        std::shared_ptr<const void>(ids16), std::span<const uint16_t>(ids16->data(), ids16->size()));
    REQUIRE(narrow.train.row_bytes() == 9 * sizeof(uint16_t));

    // And windows every 3 ids (data.sequence_stride), overlapping: a reference of their own.
    data::DataSplits strided = data;
    strided.train = data::windows_every(data.train, 3);
    REQUIRE(strided.train.size() == (23 - 1) * 8 / 3 + 1);
    data::DataSplits strided16 = narrow;
    strided16.train = data::windows_every(narrow.train, 3);
    cfg.data.resident = config::ResidentMode::on;
    fixture::TempDir d1;
    auto strided_replicas = fixture::replicas(cfg, 2);
    fixture::fit(cfg, strided_replicas, strided, d1.path.string());
    const auto strided_reference = fixture::params_of(*strided_replicas[0]);
    REQUIRE(strided_reference != reference);

    for (const bool device_memory : {false, true})
        for (const auto resident : {config::ResidentMode::on, config::ResidentMode::off})
            for (const bool uint16 : {false, true})
            for (const bool stride : {false, true}) {
                INFO("device memory " << device_memory << ", data.resident " << config::name_of(resident)
                                      << (uint16 ? ", uint16 ids" : ", uint32 ids") << (stride ? ", stride 3" : ""));
                cfg.data.resident = resident;
                std::vector<std::unique_ptr<train::Replica>> reps;
                auto comms = dist::make_local_communicators(2);
                for (auto& comm : comms)
                    reps.push_back(std::make_unique<train::Replica>(
                        cfg, std::make_unique<fixture::RecordingBackend>(device_memory), std::move(comm),
                        cfg.training.batch_size));
                train::share_updates(reps);
                fixture::TempDir dir;
                const data::DataSplits& splits = stride ? (uint16 ? strided16 : strided) : (uint16 ? narrow : data);
                fixture::fit(cfg, reps, splits, dir.path.string());
                REQUIRE(reps[0]->stages_ahead() == (device_memory && resident == config::ResidentMode::off));
                REQUIRE(fixture::params_of(*reps[0]) == (stride ? strided_reference : reference));
            }
}

TEST_CASE("A tiny GPT resumed from a checkpoint ends with the weights of an uninterrupted run", "[gpt]") {
    data::DataSplits data;
    data.train = tiny_text(19, 2);
    for (int n : {1, 2}) {
        INFO(n << " replicas");
        const auto cfg3 = tiny_gpt(3, 4);
        fixture::TempDir straight, interrupted;
        auto a = fixture::replicas(cfg3, n);
        fixture::fit(cfg3, a, data, straight.path.string());
        const auto cfg1 = tiny_gpt(1, 4);
        auto b = fixture::replicas(cfg1, n);
        fixture::fit(cfg1, b, data, interrupted.path.string());
        auto c = fixture::replicas(cfg3, n);
        fixture::fit(cfg3, c, data, interrupted.path.string(), train::latest_checkpoint(interrupted.path.string()));
        REQUIRE(fixture::params_of(*c[0]) == fixture::params_of(*a[0]));
    }
}

TEST_CASE("A tiny GPT learns, and its loss is the mean cross-entropy over every position", "[gpt]") {
    data::DataSplits data;
    data.train = tiny_text(64, 3);
    const data::Dataset test = tiny_text(9, 4);
    auto cfg = tiny_gpt(6, 8);
    fixture::TempDir dir;
    auto reps = fixture::replicas(cfg, 2);
    const auto result = fixture::fit(cfg, reps, data, dir.path.string());
    // A uniform guess scores ln 7 = 1.95; the text is 80% predictable.
    REQUIRE(result.history.front().loss < 2.2);
    REQUIRE(result.history.back().loss < 1.3);
    const auto scored = train::evaluate(reps, test, 4);
    REQUIRE(scored.samples == 9);

    // The model's logits for every position, scored by hand in double.
    train::Replica& r = *reps[0];
    auto one = fixture::replicas(cfg, 1);
    std::copy(r.model().param_data(), r.model().param_data() + r.model().param_count(), one[0]->model().param_data());
    nn::Model& model = one[0]->model();
    REQUIRE(model.positions() == 8);
    double loss = 0, correct = 0;
    std::vector<float> logits(8 * 7);
    for (int64_t w = 0; w < test.size(); ++w) {
        const std::vector<float> window = data::model_inputs(test, w, w + 1);
        const std::vector<int32_t> labels = data::sample_labels(test, w, w + 1);
        std::copy_n(window.begin(), 8, one[0]->inputs());
        model.predict(nn::RunContext{one[0]->backend(), false}, one[0]->inputs(), 1);
        std::copy_n(model.outputs(), logits.size(), logits.begin());
        for (int t = 0; t < 8; ++t) {
            const float* z = logits.data() + t * 7;
            const int label = labels[static_cast<size_t>(t)];
            double top = z[0], sum = 0;
            int best = 0;
            for (int c = 1; c < 7; ++c)
                if (z[c] > top) top = z[c], best = c;
            for (int c = 0; c < 7; ++c) sum += std::exp(z[c] - top);
            loss += std::log(sum) + top - z[label];
            correct += best == label;
        }
    }
    REQUIRE(scored.loss == Approx(loss / (9 * 8)).epsilon(1e-5));
    REQUIRE(scored.metric == Approx(correct / (9 * 8)).epsilon(1e-6));
}

// The smaller sections: run_dir, loss, metrics, training, strategy, checkpoint, logging.
#include <algorithm>
#include <cstdint>
#include <filesystem>

#include "config/read_sections.hpp"
#include "config/scalar_text.hpp"
#include "core/suggest.hpp"

namespace gputrain::config {

std::string read_run_dir(const Section& top) {
    const std::string dir = top.text("run_dir", RunConfig{}.run_dir);
    if (dir.empty()) top.value("run_dir").fail("is empty", "give a directory, e.g. run_dir: runs/mnist");
    return dir;
}

LossConfig read_loss(const Section& top) {
    LossConfig loss;
    const ValueRef v = top.value("loss");
    if (v.node.IsScalar()) {
        loss.name = read_enum<LossKind>(v);
        return loss;
    }
    if (v.node.IsSequence())
        v.fail("expected a loss name or a mapping, got a list",
               "e.g. loss: categorical_crossentropy or loss: {name: categorical_crossentropy, from_logits: true}");
    const Section s = top.child("loss");
    loss.name = s.choice("name", loss.name);
    loss.from_logits = s.boolean("from_logits", loss.from_logits);
    loss.delta = s.number("delta", loss.delta, NumberRange::positive);
    if (s.has("delta") && loss.name != LossKind::huber)
        s.value("delta").fail("is huber's parameter, and the loss is " + std::string(name_of(loss.name)), "remove it");
    loss.label_smoothing = s.number("label_smoothing", loss.label_smoothing, NumberRange::fraction);
    if (s.has("label_smoothing") && !is_cross_entropy(loss.name))
        s.value("label_smoothing")
            .fail("smooths class labels, and the loss is " + std::string(name_of(loss.name)),
                  "use it with sparse_categorical_crossentropy or categorical_crossentropy, or remove it");
    return loss;
}

std::vector<std::string> read_metrics(const Section& top, LossKind loss, bool real_targets) {
    if (!top.has("metrics"))
        return needs_real_targets(loss) || real_targets ? std::vector<std::string>{"mae"} : RunConfig{}.metrics;
    const ValueRef v = top.value("metrics");
    if (v.node.IsNull()) return {};
    if (v.node.IsScalar()) return {read_choice(v, kMetricNames)};
    if (!v.node.IsSequence()) v.fail("expected a list of metrics, got " + describe(v.node), "e.g. metrics: [accuracy]");
    std::vector<std::string> metrics;
    for (size_t i = 0; i < v.node.size(); ++i) {
        const ValueRef item = list_item(v, i);
        const std::string name = read_choice(item, kMetricNames);
        if (std::find(metrics.begin(), metrics.end(), name) != metrics.end())
            item.fail("'" + name + "' is listed twice", "remove one");
        if (name != "loss")
            for (const std::string& m : metrics)
                if (m != "loss")
                    item.fail("'" + name + "' after '" + m + "': gputrain reports one metric beside the loss",
                              "keep one of accuracy, mae and mse");
        metrics.push_back(name);
    }
    return metrics;
}

TrainingConfig read_training(const Section& top) {
    const Section s = top.child("training");
    TrainingConfig t;
    t.epochs = s.positive_int("epochs", t.epochs);
    t.batch_size = s.positive_int("batch_size", t.batch_size);
    if (t.batch_size > INT32_MAX)  // a shard's rows are GEMM sizes (ints)
        s.value("batch_size").fail("a batch of " + std::to_string(t.batch_size) + " samples is more than 2147483647",
                                   "use a smaller batch");
    t.shuffle = s.boolean("shuffle", t.shuffle);
    t.seed = s.seed("seed", t.seed);
    t.on_nan = s.choice("on_nan", t.on_nan);
    t.precision = s.choice("precision", t.precision);
    t.cuda_graphs = s.boolean("cuda_graphs", t.cuda_graphs);
    t.fused_kernels = s.boolean("fused_kernels", t.fused_kernels);
    t.cast_gemm_inputs = s.boolean("cast_gemm_inputs", t.cast_gemm_inputs);
    t.gemm_epilogues = s.boolean("gemm_epilogues", t.gemm_epilogues);
    t.deterministic = s.boolean("deterministic", t.deterministic);
    t.steps_per_epoch = s.count("steps_per_epoch", t.steps_per_epoch);
    t.clip_norm = s.number("clip_norm", t.clip_norm, NumberRange::non_negative);
    t.accumulate_steps = s.positive_int("accumulate_steps", t.accumulate_steps);
    if (s.has("ema")) {
        // training.ema: true (the defaults), false, or {decay, start_epoch, evaluate}.
        const ValueRef v = s.value("ema");
        if (v.node.IsScalar()) {
            const std::string text = v.node.Scalar();
            if (text != "true" && text != "false")
                v.fail("expected true, false or a mapping, got '" + text + "'",
                       "e.g. ema: {decay: " + (text.find('.') != std::string::npos ? text : std::string("0.999")) + "}");
            t.ema.enabled = read_bool(v);
        } else if (!v.node.IsNull()) {
            const Section e = s.child("ema");
            t.ema.enabled = true;
            t.ema.decay = e.number("decay", t.ema.decay, NumberRange::any);
            if (t.ema.decay <= 0.0 || static_cast<float>(t.ema.decay) >= 1.0f)
                e.value("decay").fail("must be in (0, 1) (and below 1 in float32): the weight the average keeps each step",
                                      "e.g. decay: 0.999");
            t.ema.start_epoch = e.count("start_epoch", t.ema.start_epoch);
            t.ema.evaluate = e.boolean("evaluate", t.ema.evaluate);
        }
    }
    return t;
}

namespace {

// "all" | "cpu" | a GPU id | a list of GPU ids | "0,1" -> "all", "cpu", "0", "0,1".
std::string read_devices(const ValueRef& v) {
    struct Id {
        std::string text;
        ValueRef where;
    };
    std::vector<Id> ids;
    if (v.node.IsScalar()) {
        const std::string& text = v.node.Scalar();
        if (text == "all" || text == "cpu") return text;
        // "0,1" is what --set strategy.devices=0,1 gives.
        size_t start = 0;
        for (size_t comma; (comma = text.find(',', start)) != std::string::npos; start = comma + 1)
            ids.push_back({text.substr(start, comma - start), v});
        ids.push_back({text.substr(start), v});
        for (auto& id : ids) {
            id.text.erase(0, id.text.find_first_not_of(' '));
            id.text.erase(id.text.find_last_not_of(' ') + 1);
            if (!parse_uint(id.text))
                v.fail("expected all, cpu or GPU ids like [0, 1], got " + describe(v.node) +
                       did_you_mean(text, {"all", "cpu"}));
        }
    } else if (v.node.IsSequence()) {
        if (v.node.size() == 0) v.fail("is empty", "use all, cpu or a list of GPU ids like [0, 1]");
        for (size_t i = 0; i < v.node.size(); ++i) {
            const ValueRef item = list_item(v, i);
            if (!item.node.IsScalar() || !parse_uint(item.node.Scalar()))
                item.fail("expected a GPU id (an integer >= 0), got " + describe(item.node));
            ids.push_back({item.node.Scalar(), item});
        }
    } else {
        v.fail("expected all, cpu or a list of GPU ids like [0, 1], got " + describe(v.node));
    }
    std::vector<uint64_t> seen;
    for (const auto& id : ids) {
        const uint64_t n = *parse_uint(id.text);
        if (std::find(seen.begin(), seen.end(), n) != seen.end())
            id.where.fail("GPU " + std::to_string(n) + " is listed twice", "remove one");
        seen.push_back(n);
    }
    std::string out;
    for (uint64_t n : seen) {
        if (!out.empty()) out += ',';
        out += std::to_string(n);
    }
    return out;
}

}  // namespace

StrategyConfig read_strategy(const Section& top) {
    const Section s = top.child("strategy");
    StrategyConfig out;
    out.type = s.choice("type", out.type);
    if (s.has("devices")) out.devices = read_devices(s.value("devices"));
    out.replicas = s.count("replicas", out.replicas);
    out.communicator = s.choice("communicator", out.communicator);
    out.replicas_per_gpu = s.positive_int("replicas_per_gpu", out.replicas_per_gpu);
    out.timeout_seconds = s.positive_int("timeout_seconds", out.timeout_seconds);
    out.stall_warning_seconds = s.number("stall_warning_seconds", out.stall_warning_seconds, NumberRange::non_negative);
    out.bucket_mb = s.number("bucket_mb", out.bucket_mb, NumberRange::non_negative);
    return out;
}

CheckpointConfig read_checkpoint(const Section& top) {
    const Section s = top.child("checkpoint");
    CheckpointConfig c;
    c.dir = s.text("dir", c.dir);
    c.every_epochs = s.count("every_epochs", c.every_epochs);
    c.keep_last = s.count("keep_last", c.keep_last);
    c.save_best = s.boolean("save_best", c.save_best);
    c.monitor = s.choice("monitor", c.monitor);
    if (s.has("monitor")) c.monitor_given = true;
    c.mode = s.choice("mode", c.mode);
    return c;
}

LoggingConfig read_logging(const Section& top) {
    const Section s = top.child("logging");
    LoggingConfig l;
    l.level = s.choice("level", l.level);
    l.progress = s.choice("progress", l.progress);
    l.metrics_file = s.text("metrics_file", l.metrics_file);
    {
        // Not one of the files the run itself writes in its folder.
        const std::string name = std::filesystem::path(l.metrics_file).filename().string();
        const bool own = name == "config.yaml" || name == ".gputrain.lock" || name.rfind("config.previous-", 0) == 0 ||
                         (name.size() > 12 && name.compare(name.size() - 12, 12, ".safetensors") == 0);
        if (own)
            s.value("metrics_file")
                .fail("'" + l.metrics_file + "' is a file the run writes itself (config or checkpoint)",
                      "give another name, e.g. metrics_file: metrics.csv");
    }
    l.tensorboard = s.boolean("tensorboard", l.tensorboard);
    l.every_steps = s.count("every_steps", l.every_steps);
    return l;
}

}  // namespace gputrain::config

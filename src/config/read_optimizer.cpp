// optimizer and optimizer.schedule. Defaults follow Keras and depend on the
// type: sgd learns at 0.01, adam/adamw at 0.001; adamw decays weights by 0.004.
#include <algorithm>

#include "config/read_sections.hpp"
#include "config/scalar_text.hpp"

namespace gputrain::config {

namespace {

ScheduleConfig read_schedule(const Section& optimizer) {
    ScheduleConfig out;
    // `schedule: cosine`: the type with its defaults (as `optimizer: adam`).
    if (const ValueRef v = optimizer.value("schedule"); optimizer.has("schedule") && v.node.IsScalar()) {
        out.type = read_enum<ScheduleType>(v);
        out.min_lr_given = false;
        return out;
    }
    const Section s = optimizer.child("schedule");
    out.type = s.choice("type", out.type);
    out.decay_rate = s.number("decay_rate", out.decay_rate, NumberRange::positive);
    out.decay_epochs = s.positive_int("decay_epochs", out.decay_epochs);
    out.decay_steps = s.positive_int("decay_steps", out.decay_steps);
    out.staircase = s.boolean("staircase", out.staircase);
    out.min_lr = s.number("min_lr", out.min_lr, NumberRange::non_negative);
    out.warmup_epochs = s.count("warmup_epochs", out.warmup_epochs);
    out.warmup_steps = s.count("warmup_steps", out.warmup_steps);
    out.min_lr_given = s.has("min_lr");
    // one_cycle: PyTorch's OneCycleLR keys and defaults.
    const bool cycle = out.type == ScheduleType::one_cycle;
    for (const char* key : {"max_lr", "pct_start", "div_factor", "final_div_factor", "cycle_momentum", "base_momentum",
                            "max_momentum"})
        if (s.has(key) && !cycle)
            s.value(key).fail(std::string("is one_cycle's key, and the schedule is ") + name_of(out.type),
                              "use it with type: one_cycle, or remove it");
    out.max_lr = s.number("max_lr", out.max_lr, NumberRange::positive);
    out.pct_start = s.number("pct_start", out.pct_start, NumberRange::any);
    if (out.pct_start <= 0 || out.pct_start >= 1)
        s.value("pct_start").fail("must be in (0, 1) (the share of the steps spent rising to max_lr)", "e.g. pct_start: 0.3");
    out.div_factor = s.number("div_factor", out.div_factor, NumberRange::positive);
    out.final_div_factor = s.number("final_div_factor", out.final_div_factor, NumberRange::positive);
    out.cycle_momentum = s.boolean("cycle_momentum", out.cycle_momentum);
    out.base_momentum = s.number("base_momentum", out.base_momentum, NumberRange::non_negative);
    out.max_momentum = s.number("max_momentum", out.max_momentum, NumberRange::non_negative);
    for (const char* key : {"base_momentum", "max_momentum"})
        if (s.has(key) && !out.cycle_momentum)
            s.value(key).fail("is a key of cycle_momentum, which is off", "add cycle_momentum: true, or remove it");
    if (out.max_momentum >= 1)
        s.value("max_momentum").fail("must be below 1 (the share of the velocity kept each step)", "e.g. max_momentum: 0.95");
    if (out.base_momentum > out.max_momentum)
        s.value(s.has("base_momentum") ? "base_momentum" : "max_momentum")
            .fail("base_momentum " + format_number(out.base_momentum) + " is above max_momentum " +
                      format_number(out.max_momentum),
                  "the momentum cycles between them: give base_momentum <= max_momentum");
    if (cycle && (out.warmup_epochs > 0 || out.warmup_steps > 0))
        s.value(out.warmup_epochs > 0 ? "warmup_epochs" : "warmup_steps")
            .fail("one_cycle warms up itself (from max_lr / div_factor over pct_start of the steps)",
                  "remove it, or set pct_start");
    return out;
}

}  // namespace

OptimizerConfig read_optimizer(const Section& top) {
    OptimizerConfig out;
    const double default_rate = 0.001, sgd_rate = 0.01, adamw_decay = 0.004;
    // `optimizer: adam`, as Keras' compile(optimizer="adam"): the type with its defaults.
    if (const ValueRef v = top.value("optimizer"); top.has("optimizer") && v.node.IsScalar()) {
        out.type = read_enum<OptimizerType>(v);
        out.learning_rate = out.type == OptimizerType::sgd ? sgd_rate : default_rate;
        out.weight_decay = out.type == OptimizerType::adamw ? adamw_decay : 0.0;
        return out;
    }
    const Section s = top.child("optimizer");
    out.type = s.choice("type", out.type);
    out.learning_rate = s.number("learning_rate", out.type == OptimizerType::sgd ? sgd_rate : default_rate, NumberRange::positive);
    if (static_cast<float>(out.learning_rate) == 0.0f)  // the updates run in fp32: nothing would train
        s.value("learning_rate")
            .fail("is 0 in float32 (below 1.4e-45), so no weight would ever change", "give at least 1e-38, e.g. 0.001");
    // The updates run in fp32, where a fraction this close to 1 is 1: no
    // gradient would ever reach Adam's moments, and momentum would never decay.
    const auto fraction_below_1 = [&](const char* key, double fallback) {
        const double value = s.number(key, fallback, NumberRange::fraction);
        if (static_cast<float>(value) >= 1.0f)
            s.value(key).fail("is 1 in float32, in which the optimizer runs (it must be below 1)",
                              "give at most 0.9999999");
        return value;
    };
    out.momentum = fraction_below_1("momentum", out.momentum);
    out.nesterov = s.boolean("nesterov", out.nesterov);
    out.beta1 = fraction_below_1("beta1", out.beta1);
    out.beta2 = fraction_below_1("beta2", out.beta2);
    out.rho = fraction_below_1("rho", out.rho);
    out.centered = s.boolean("centered", out.centered);
    out.epsilon = s.number("epsilon", out.epsilon, NumberRange::positive);
    if (static_cast<float>(out.epsilon) == 0.0f)  // Adam's update runs in fp32
        s.value("epsilon").fail("is 0 in float32 (below 1.4e-45)", "give at least 1e-38, e.g. epsilon: 1.0e-7");
    out.weight_decay = s.number("weight_decay", out.type == OptimizerType::adamw ? adamw_decay : 0.0, NumberRange::non_negative);
    if (s.has("no_decay") && !s.value("no_decay").node.IsNull()) {
        const ValueRef v = s.value("no_decay");
        const char* example = "e.g. no_decay: [bias, norm, embedding] (minGPT's groups)";
        if (out.type != OptimizerType::adamw) v.fail("is only used by adamw", "remove it or set type: adamw");
        if (!v.node.IsSequence()) v.fail("expected a list of parameter kinds, got " + describe(v.node), example);
        for (size_t i = 0; i < v.node.size(); ++i) {
            const ValueRef item = list_item(v, i);
            const std::string kind = item.node.IsScalar() ? read_text(item) : "";
            if (kind != "bias" && kind != "norm" && kind != "embedding")
                item.fail("expected bias, norm or embedding, got " + (item.node.IsScalar() ? "'" + kind + "'" : describe(item.node)),
                          example);
            if (std::find(out.no_decay.begin(), out.no_decay.end(), kind) != out.no_decay.end())
                item.fail("'" + kind + "' is listed twice");
            out.no_decay.push_back(kind);
        }
    }
    out.schedule = read_schedule(s);
    if (out.schedule.type == ScheduleType::one_cycle && out.schedule.min_lr_given) {
        const double top = out.schedule.max_lr > 0 ? out.schedule.max_lr : out.learning_rate;
        if (out.schedule.min_lr > top)
            s.child("schedule").value("min_lr").fail(
                "is above the cycle's peak, max_lr " + format_number(top) +
                    (out.schedule.max_lr > 0 ? "" : " (optimizer.learning_rate)"),
                "one_cycle rises to max_lr and anneals down to min_lr: give a min_lr below it");
    }
    if (out.schedule.cycle_momentum && out.type == OptimizerType::rmsprop)
        s.child("schedule").value("cycle_momentum").fail(
            "cycles Adam's beta1 or SGD's momentum, and the optimizer is rmsprop",
            "use adam, adamw or sgd with momentum, or remove cycle_momentum");
    if (out.schedule.cycle_momentum && out.type == OptimizerType::sgd && out.momentum <= 0)
        s.child("schedule").value("cycle_momentum").fail(
            "SGD without momentum has none to cycle", "set optimizer.momentum (e.g. 0.9), or remove cycle_momentum");
    return out;
}

}  // namespace gputrain::config

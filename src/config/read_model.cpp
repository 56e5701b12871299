// model: input_shape and layers. Layer parameters are kept as text with their
// places; nn/ checks them against the layer kind.
#include "config/read_sections.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>

#include "core/error.hpp"
#include "core/shape.hpp"
#include "core/suggest.hpp"

namespace gputrain::config {

namespace {

// The layer types with weights, which a block instance's `trainable: false`
// freezes (a dropout or an add inside the block takes no such key).
bool layer_has_weights(const std::string& type) {
    static const std::set<std::string> with_weights{"dense", "conv2d", "batch_norm", "embedding",
                                                    "positional_embedding", "layer_norm", "rms_norm",
                                                    "causal_self_attention"};
    return with_weights.count(type) > 0;
}

const std::string kModelExample =
    "e.g. model: {input_shape: [28, 28], layers: [{type: flatten}, {type: dense, units: 10}]}";
const std::string kLayersExample = "e.g. layers: [{type: flatten}, {type: dense, units: 10}]";

Shape read_input_shape(const Section& model) {
    const ValueRef v = model.value("input_shape");
    const std::string example = "e.g. input_shape: [28, 28]";
    if (!model.has("input_shape")) v.fail("missing", "give the shape of one sample, " + example);
    if (v.node.IsScalar() && !v.node.Scalar().empty() && v.node.Scalar()[0] == '(') {
        std::string list = v.node.Scalar();
        list.front() = '[';
        if (list.back() == ')') list.back() = ']';
        v.fail("expected a list of positive integers, got " + v.node.Scalar() + ", a Python tuple",
               "YAML writes a list in brackets: input_shape: " + list);
    }
    if (v.node.IsScalar()) return {read_positive_int(v)};
    if (!v.node.IsSequence()) v.fail("expected a list of positive integers, got " + describe(v.node), example);
    if (v.node.size() == 0) v.fail("is empty", "give the shape of one sample, " + example);
    Shape shape;
    for (size_t i = 0; i < v.node.size(); ++i) shape.push_back(read_positive_int(list_item(v, i)));
    // Every later size (the layers' outputs, their buffers) is counted from this.
    int64_t elements = 0;
    if (!elements_within(shape, kMaxSampleElements, elements))
        v.fail(shape_to_string(shape, false) + " has more than " + std::to_string(kMaxSampleElements) +
                   " elements per sample",
               "give a smaller shape");
    return shape;
}

// A parameter's text: a scalar as written, a list of scalars joined by commas ("3,3").
std::string param_text(const ValueRef& v) {
    const std::string expected = "expected a value or a list of values, got ";
    if (v.node.IsScalar()) return v.node.Scalar();
    if (v.node.IsNull()) v.fail("missing value", "give one, or leave the key out for its default");
    if (!v.node.IsSequence()) v.fail(expected + describe(v.node));
    std::vector<std::string> items;
    for (size_t i = 0; i < v.node.size(); ++i) {
        const ValueRef item = list_item(v, i);
        if (!item.node.IsScalar()) item.fail(expected + describe(item.node));
        items.push_back(item.node.Scalar());
    }
    return join_names(items, ",");
}

// `inputs:` as written: a name, or a list of names.
std::vector<LayerInput> read_inputs(const ValueRef& v) {
    const std::string example = "e.g. inputs: conv2d, or inputs: [conv2d, shortcut] for a merge layer";
    std::vector<LayerInput> out;
    const auto one = [&](const ValueRef& item) {
        if (!item.node.IsScalar() || item.node.Scalar().empty())
            item.fail("expected a layer name, got " + describe(item.node), example);
        if (item.node.Scalar().find(", ") != std::string::npos)
            item.fail("'" + item.node.Scalar() + "' is one name with a comma in it",
                      "list several as inputs: [" + item.node.Scalar() + "]");
        out.push_back({item.node.Scalar()});
    };
    if (v.node.IsSequence()) {
        if (v.node.size() == 0) v.fail("is empty", "name the layers it reads, " + example);
        for (size_t i = 0; i < v.node.size(); ++i) one(list_item(v, i));
    } else {
        one(v);
    }
    return out;
}

LayerSpec read_layer(const ValueRef& item) {
    if (!item.node.IsMap())
        item.fail("expected a mapping with a type, got " + describe(item.node),
                  "write each layer as {type: NAME, ...}, e.g. {type: dense, units: 10}");
    const Section layer = Section::open(*item.source, item.node, item.path, item.place);
    LayerSpec spec;
    spec.where[""] = layer.place();
    spec.path = item.path;
    if (!layer.has("type")) {
        // `- dense: {units: 10}` (the layer kind as the key, as some Keras
        // configs write it): say how gputrain spells it.
        const std::vector<std::string> keys = layer.keys();
        if (keys.size() == 1 && layer.value(keys[0]).node.IsMap())
            layer.value("type").fail("missing", "write the kind as a key of the layer: {type: " + keys[0] +
                                                    ", ...} with the keys of '" + keys[0] + ":' beside it");
        layer.value("type").fail("missing", "give the layer kind, e.g. type: dense");
    }
    spec.type = layer.text("type", "");
    if (spec.type.empty()) layer.value("type").fail("is empty", "give the layer kind, e.g. type: dense");
    spec.name = layer.text("name", "");
    const std::vector<std::string> keys = layer.keys();
    for (size_t k = 0; k < keys.size(); ++k) {
        // A Python tuple, `kernel_size: (3, 3)`: inside {...} YAML splits it at
        // the comma into "(3" and a key "3)" with no value.
        const ValueRef v = layer.value(keys[k]);
        if (v.node.IsScalar() && !v.node.Scalar().empty() && v.node.Scalar()[0] == '(') {
            std::string tuple = v.node.Scalar();
            for (size_t j = k + 1; tuple.back() != ')' && j < keys.size() && layer.value(keys[j]).node.IsNull(); ++j)
                tuple += ", " + keys[j];
            std::string list = tuple;
            list.front() = '[';
            if (list.back() == ')') list.back() = ']';
            v.fail("expected a number or a list, got " + tuple + ", a Python tuple",
                   "YAML writes a list in brackets: " + keys[k] + ": " + list);
        }
    }
    for (const auto& key : keys) {
        spec.where[key] = layer.key_place(key);
        if (key == "inputs") spec.inputs = read_inputs(layer.value(key));
        // A key with no value (`key: ~`, or --set ...key=~) is the key left out: its default
        // (tie_weights: untied; activation: linear, as Keras' None), or the layer's error for one it needs.
        else if (layer.value(key).node.IsNull()) continue;
        else if (key != "type" && key != "name") spec.params[key] = param_text(layer.value(key));
    }
    return spec;
}

// ---- Blocks: `blocks: {NAME: {params: {...}, layers: [...]}}` and layers
// `{block: NAME, repeat: N, name: ..., inputs: ..., PARAM: VALUE}`, expanded
// into ordinary layers with scoped names before anything else sees them.

struct BlockDef {
    std::string name;
    std::vector<std::string> param_order;            // as written
    std::map<std::string, std::optional<std::string>> params;  // name -> default (none: required)
    std::map<std::string, ValueRef> param_refs;      // name -> where it is declared
    ValueRef layers;
    std::string place;
};

struct Blocks {
    std::map<std::string, BlockDef> defs;
    std::vector<std::string> names() const {
        std::vector<std::string> out;
        for (const auto& [name, def] : defs) out.push_back(name);
        return out;
    }
};

const std::string kBlockExample =
    "e.g. blocks: {basic: {params: {filters: 16}, layers: [{type: conv2d, filters: $filters, kernel_size: 3}]}}";

// The parameter names a block's layers refer to: every $NAME and ${NAME} in
// their values (and in the values given to blocks they use).
void collect_references(const YAML::Node& node, std::set<std::string>& names) {
    if (node.IsScalar()) {
        const std::string& text = node.Scalar();
        const auto word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
        for (size_t open = text.find('$'); open != std::string::npos; open = text.find('$', open + 1)) {
            if (open + 1 < text.size() && text[open + 1] == '{') {
                const size_t close = text.find('}', open);
                if (close != std::string::npos) names.insert(text.substr(open + 2, close - open - 2));
            } else {
                size_t end = open + 1;
                while (end < text.size() && word_char(text[end])) ++end;
                if (end > open + 1) names.insert(text.substr(open + 1, end - open - 1));
            }
        }
    } else if (node.IsSequence()) {
        for (const auto& item : node) collect_references(item, names);
    } else if (node.IsMap()) {
        for (const auto& kv : node) collect_references(kv.second, names);
    }
}

Blocks read_blocks(const Section& top) {
    Blocks out;
    if (!top.has("blocks")) return out;
    const ValueRef all = top.value("blocks");
    if (!all.node.IsMap()) all.fail("expected a mapping of block names to blocks, got " + describe(all.node), kBlockExample);
    const Section blocks = Section::open(*all.source, all.node, all.path, all.place);
    for (const auto& name : blocks.keys()) {
        const ValueRef v = blocks.value(name);
        if (name.empty() || name.find('/') != std::string::npos || name.find("${") != std::string::npos)
            v.fail("a block name may not be empty or hold '/' or '${'", kBlockExample);
        if (!v.node.IsMap()) v.fail("expected a mapping with layers (and params), got " + describe(v.node), kBlockExample);
        const Section block(*v.source, v.node, v.path, v.place, {"params", "layers"});
        BlockDef def;
        def.name = name;
        def.place = v.place;
        if (block.has("params")) {
            const ValueRef p = block.value("params");
            if (p.node.IsSequence()) {  // [filters, strides]: all required
                for (size_t i = 0; i < p.node.size(); ++i) {
                    const ValueRef item = list_item(p, i);
                    if (!item.node.IsScalar() || item.node.Scalar().empty())
                        item.fail("expected a parameter name, got " + describe(item.node), "e.g. params: [filters]");
                    def.param_order.push_back(item.node.Scalar());
                    def.params[item.node.Scalar()] = std::nullopt;
                    def.param_refs.emplace(item.node.Scalar(), item);
                }
            } else if (p.node.IsMap()) {  // {filters: ~, strides: 1}: ~ is required
                const Section params = Section::open(*p.source, p.node, p.path, p.place);
                for (const auto& key : params.keys()) {
                    const ValueRef d = params.value(key);
                    def.param_order.push_back(key);
                    if (d.node.IsNull()) def.params[key] = std::nullopt;
                    else def.params[key] = param_text(d);
                    def.param_refs.emplace(key, d);
                }
            } else if (!p.node.IsNull()) {
                p.fail("expected a mapping of parameter names to defaults (~ for none), got " + describe(p.node),
                       "e.g. params: {filters: ~, strides: 1}");
            }
        }
        for (const auto& [param, ref] : def.param_refs)
            if (param == "block" || param == "repeat" || param == "name" || param == "inputs" || param == "trainable")
                ref.fail("'" + param + "' is a key of every block instance (block, repeat, name, inputs, trainable), so an "
                         "instance could not set a parameter of that name",
                         "call it something else");
        def.layers = block.value("layers");
        // Only --set made it: a block name that the file does not define (a typo).
        if (!block.has("layers") && v.place.rfind("--set ", 0) == 0) {
            std::vector<std::string> defined;
            for (const auto& other : blocks.keys())
                if (other != name) defined.push_back(other);
            v.fail("unknown block '" + name + "'" + did_you_mean(name, defined),
                   defined.empty() ? "the config defines no blocks" : "defined blocks: " + join_names(defined));
        }
        if (!block.has("layers")) def.layers.fail("missing", "list the block's layers, " + kLayersExample);
        if (!def.layers.node.IsSequence() || def.layers.node.size() == 0)
            def.layers.fail("expected a non-empty list of layers, got " + describe(def.layers.node), kLayersExample);
        // A parameter no layer uses is a slip (a value written out where $NAME
        // was meant). A reference to a name not declared is reported with
        // its place when the block is expanded, and said first.
        std::set<std::string> used;
        collect_references(def.layers.node, used);
        bool all_declared = true;
        for (const auto& ref : used) all_declared = all_declared && def.params.count(ref) > 0;
        for (const auto& param : all_declared ? def.param_order : std::vector<std::string>{})
            if (!used.count(param))
                def.param_refs.at(param).fail("parameter '" + param + "' of block '" + name +
                                                  "' is used by none of its layers",
                                              "write $" + param + " (or ${" + param +
                                                  "}) in a layer's value, or remove it from params");
        out.defs.emplace(name, std::move(def));
    }
    return out;
}

// One level of expansion: the top level or one copy of a block.
struct Scope {
    std::string prefix;                          // "" or "stage2/block1/"
    const BlockDef* block = nullptr;             // null at the top level
    std::map<std::string, std::string> values;   // block parameters -> text
    std::map<std::string, std::string> value_places;  // block parameters -> where their value was written
    LayerInput input;                            // what `input` means here
    std::map<std::string, int> names;            // local names (and instance names) -> layer index
    std::vector<std::string> active;             // blocks being expanded, outermost first
    std::set<std::string> local_names;           // every layer name of this copy (given or automatic)
};

class Expander {
public:
    Expander(const Blocks& blocks, std::vector<LayerSpec>& out) : blocks_(blocks), out_(out) {}

    void expand_list(const ValueRef& list, Scope& scope) {
        // Keras-like auto names inside a block: counted per copy, skipping given names.
        std::map<std::string, int> type_counts;
        std::set<std::string> given;
        if (scope.block)
            for (size_t i = 0; i < list.node.size(); ++i) {
                const YAML::Node n = list.node[i];
                if (n.IsMap() && n["name"] && n["name"].IsScalar()) given.insert(substitute_raw(n["name"].Scalar(), scope));
            }
        // The names this copy's layers will get, so that reading one listed
        // later is told apart from reading a name the block does not have.
        if (scope.block) {
            std::map<std::string, int> counts;
            for (size_t i = 0; i < list.node.size(); ++i) {
                const YAML::Node n = list.node[i];
                if (!n.IsMap()) continue;
                if (n["name"] && n["name"].IsScalar()) {
                    scope.local_names.insert(substitute_raw(n["name"].Scalar(), scope));
                } else if (n["type"] && n["type"].IsScalar()) {
                    const std::string type = substitute_raw(n["type"].Scalar(), scope);
                    const int k = counts[type]++;
                    scope.local_names.insert(k == 0 ? type : type + "_" + std::to_string(k));
                }
            }
        }
        for (size_t i = 0; i < list.node.size(); ++i) {
            const ValueRef item = list_item(list, i);
            if (item.node.IsMap() && item.node["block"]) {
                expand_instance(item, scope);
                continue;
            }
            LayerSpec spec = read_layer(item);
            if (blocks_.defs.count(spec.type))
                fail_at(spec, "type", "'" + spec.type + "' is a block, not a layer type; use it as {block: " +
                                          spec.type + ", ...}");
            if (scope.block) {
                substitute(spec, scope);
                std::string local = spec.name;
                if (local.empty()) {
                    const int n = type_counts[spec.type]++;
                    local = n == 0 ? spec.type : spec.type + "_" + std::to_string(n);
                    while (given.count(local) || scope.names.count(local))
                        local = spec.type + "_" + std::to_string(type_counts[spec.type]++);
                } else if (local.find('/') != std::string::npos) {
                    fail_at(spec, "name", "'/' is not allowed in a layer name; the block adds its own scope");
                } else if (scope.names.count(local)) {
                    fail_at(spec, "name", "duplicate layer name '" + local + "' in block '" + scope.block->name + "'");
                }
                link_inputs(spec, scope);
                if (spec.inputs.empty() && out_.size() == first_of_copy_) spec.inputs.push_back(scope.input);
                spec.name = scope.prefix + local;
                spec.scoped = true;
                scope.names[local] = static_cast<int>(out_.size());
            } else {
                substitute(spec, scope);  // a $NAME outside any block is an error that says so
                link_inputs(spec, scope);
                if (!spec.name.empty()) {
                    // A block instance's name (given or automatic) stands for its last layer.
                    if (instance_names_.count(spec.name))
                        fail_at(spec, "name", "duplicate name '" + spec.name + "': a block instance above has it; "
                                              "names must be unique");
                    scope.names[spec.name] = static_cast<int>(out_.size());
                }
            }
            out_.push_back(std::move(spec));
        }
    }

    // A default given by --set that no instance takes (each sets the
    // parameter itself) would change nothing: an error, not a silent no-op.
    void require_set_defaults_used() const {
        for (const auto& [block_name, def] : blocks_.defs)
            for (const auto& [param, ref] : def.param_refs)
                if (ref.place.rfind("--set ", 0) == 0 && !defaults_used_.count(block_name + "\n" + param))
                    ref.fail("no instance of block '" + block_name + "' takes this default: each sets '" + param +
                                 "' itself (or none is used), so it would change nothing",
                             "set " + param + " on the instances in model.layers (--set model.layers[N]." + param +
                                 "=...)");
    }

private:
    [[noreturn]] static void fail_at(const LayerSpec& spec, const std::string& key, const std::string& problem,
                                     const std::string& hint = "") {
        auto it = spec.where.find(key);
        if (it == spec.where.end()) it = spec.where.find("");
        const std::string label = spec.name.empty() ? "layer (" + spec.type + ")"
                                                    : "layer '" + spec.name + "' (" + spec.type + ")";
        std::string text = (it != spec.where.end() && !it->second.empty() ? it->second + ": " : "") + label +
                           (key.empty() ? "" : ": " + key) + ": " + problem;
        if (!hint.empty()) text += "; " + hint;
        throw ConfigError(text);
    }

    // $name or ${name} -> the parameter's text; an unknown name is an error at `where`.
    std::string substitute_text(const std::string& text, const Scope& scope, const std::string& where,
                                const std::string& key) const {
        const auto word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
        const std::string at = where.empty() ? "" : where + ": ";
        std::string out;
        size_t pos = 0;
        for (size_t open; (open = text.find('$', pos)) != std::string::npos;) {
            std::string name;
            size_t end;
            if (open + 1 < text.size() && text[open + 1] == '{') {
                const size_t close = text.find('}', open);
                if (close == std::string::npos)
                    throw ConfigError(at + key + ": '" + text + "' opens '${' without '}'; write ${NAME} or $NAME");
                name = text.substr(open + 2, close - open - 2);
                end = close + 1;
            } else {
                end = open + 1;
                while (end < text.size() && word_char(text[end])) ++end;
                name = text.substr(open + 1, end - open - 1);
                if (name.empty()) {  // a lone '$' is text
                    out += text.substr(pos, end - pos);
                    pos = end;
                    continue;
                }
            }
            auto it = scope.values.find(name);
            if (it == scope.values.end()) {
                if (!scope.block)
                    throw ConfigError(at + key + ": $" + name + " is a block parameter, but this layer is not in a "
                                                            "block; define the block under blocks:");
                std::vector<std::string> known(scope.block->param_order);
                throw ConfigError(at + key + ": unknown parameter $" + name + " of block '" + scope.block->name +
                                  "'" + did_you_mean(name, known) + "; its parameters: " +
                                  (known.empty() ? std::string("none (add params: to the block)") : join_names(known)));
            }
            out += text.substr(pos, open - pos) + it->second;
            pos = end;
        }
        return out + text.substr(pos);
    }
    std::string substitute_raw(const std::string& text, const Scope& scope) const {
        try {
            return substitute_text(text, scope, "", "name");
        } catch (const ConfigError&) {
            return text;  // reported where the layer is read
        }
    }
    // NAME when `text` is exactly $NAME or ${NAME}.
    static std::string sole_reference(const std::string& text) {
        if (text.size() > 3 && text.compare(0, 2, "${") == 0 && text.back() == '}' &&
            text.find('$', 1) == std::string::npos)
            return text.substr(2, text.size() - 3);
        if (text.size() > 1 && text[0] == '$' &&
            std::all_of(text.begin() + 1, text.end(),
                        [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }))
            return text.substr(1);
        return "";
    }
    // Where a value that is one parameter was written: the instance's key
    // (or the parameter's default), so that an error in it points there.
    static std::string place_of_value(const std::string& text, const Scope& scope, const std::string& fallback) {
        const std::string name = sole_reference(text);
        auto it = name.empty() ? scope.value_places.end() : scope.value_places.find(name);
        return it != scope.value_places.end() ? it->second : fallback;
    }
    void substitute(LayerSpec& spec, const Scope& scope) const {
        spec.type = substitute_text(spec.type, scope, spec.where.at("type"), "type");
        if (!spec.name.empty()) spec.name = substitute_text(spec.name, scope, spec.where.at("name"), "name");
        for (auto& [key, value] : spec.params) {
            const std::string written = value;
            value = substitute_text(value, scope, spec.where.at(key), key);
            spec.where[key] = place_of_value(written, scope, spec.where.at(key));
        }
        for (auto& in : spec.inputs) in.name = substitute_text(in.name, scope, spec.where.at("inputs"), "inputs");
    }

    // Names the scope knows become layer indices; inside a block every name
    // must be the block's own (or `input`).
    void link_inputs(LayerSpec& spec, const Scope& scope) const {
        for (auto& in : spec.inputs) {
            if (in.name == "input") {
                in = LayerInput{"input", scope.block ? scope.input.layer : -1};
                if (scope.block && scope.input.layer == LayerInput::kByName) in = scope.input;
                continue;
            }
            auto it = scope.names.find(in.name);
            if (it != scope.names.end()) {
                in.layer = it->second;
            } else if (scope.block && scope.local_names.count(in.name)) {
                fail_at(spec, "inputs",
                        "reads '" + in.name + "', which is listed after it in block '" + scope.block->name +
                            "' (a cycle, if it reads this layer back); a block's layers run in list order: list each "
                            "layer after the layers it reads");
            } else if (scope.block) {
                std::vector<std::string> known{"input"};
                for (const auto& [name, index] : scope.names) known.push_back(name);
                fail_at(spec, "inputs",
                        "unknown input '" + in.name + "' in block '" + scope.block->name + "'" +
                            did_you_mean(in.name, known) + "; a layer in a block reads 'input' (the block's input) "
                                                           "or a layer of the block above it");
            }
        }
    }

    void expand_instance(const ValueRef& item, Scope& outer) {
        const Section inst = Section::open(*item.source, item.node, item.path, item.place);
        const ValueRef bv = inst.value("block");
        if (!bv.node.IsScalar() || bv.node.Scalar().empty())
            bv.fail("expected a block name, got " + describe(bv.node), "e.g. {block: basic, repeat: 3}");
        const std::string block_name = substitute_text(bv.node.Scalar(), outer, bv.place, "block");
        auto found = blocks_.defs.find(block_name);
        if (found == blocks_.defs.end()) {
            const std::vector<std::string> known = blocks_.names();
            bv.fail("unknown block '" + block_name + "'" + did_you_mean(block_name, known),
                    known.empty() ? "define it under the top-level blocks: section"
                                  : "defined blocks: " + join_names(known));
        }
        const BlockDef& def = found->second;
        for (size_t k = 0; k < outer.active.size(); ++k)
            if (outer.active[k] == block_name) {
                std::vector<std::string> chain(outer.active.begin() + static_cast<long>(k), outer.active.end());
                chain.push_back(block_name);
                bv.fail("blocks use each other in a cycle: " + join_names(chain, " -> "),
                        "a block may not contain itself");
            }
        if (inst.has("type")) inst.value("type").fail("a layer has either type: or block:, not both");
        int64_t repeat = 1;
        if (inst.has("repeat")) {
            const ValueRef rv = inst.value("repeat");
            if (rv.node.IsScalar() && outer.block && rv.node.Scalar().find('$') != std::string::npos) {
                // `repeat: $n` inside a block: the outer block's parameter.
                const std::string text = substitute_text(rv.node.Scalar(), outer, inst.key_place("repeat"), "repeat");
                char* end = nullptr;
                const long long n = std::strtoll(text.c_str(), &end, 10);
                if (text.empty() || *end != '\0' || n < 1)
                    rv.fail("expected a positive integer, got '" + text + "' (from " + rv.node.Scalar() + ")");
                repeat = n;
            } else {
                repeat = read_positive_int(rv);
            }
        }
        if (repeat > 10000) inst.value("repeat").fail("is too large; repeat a block at most 10000 times");
        std::string local = inst.has("name") ? substitute_text(read_text(inst.value("name")), outer,
                                                               inst.key_place("name"), "name")
                                             : "";
        if (local.empty()) {
            // Numbered past the names taken already (a layer named `basic_1`).
            do {
                const int n = outer_instance_counts_[outer.prefix + block_name]++;
                local = n == 0 ? block_name : block_name + "_" + std::to_string(n);
            } while (outer.names.count(local));
        } else if (local.find('/') != std::string::npos) {
            inst.value("name").fail("'/' is not allowed in a block instance's name; the scope adds it");
        }
        if (outer.names.count(local))
            (inst.has("name") ? inst.value("name") : bv).fail("duplicate name '" + local + "'; names must be unique");
        // The block's input: its `inputs:` or the layer before it.
        LayerInput input{"", out_.empty() ? -1 : static_cast<int>(out_.size()) - 1};
        if (outer.block && out_.size() == first_of_copy_) input = outer.input;
        if (inst.has("inputs")) {
            std::vector<LayerInput> given = read_inputs(inst.value("inputs"));
            if (given.size() != 1) inst.value("inputs").fail("a block reads one input; name one layer");
            LayerSpec holder;
            holder.type = "block " + block_name;
            holder.where["inputs"] = inst.key_place("inputs");
            holder.inputs = given;
            for (auto& in : holder.inputs)
                in.name = substitute_text(in.name, outer, holder.where["inputs"], "inputs");
            link_inputs(holder, outer);
            input = holder.inputs[0];
        }
        // Parameters: the instance's keys, given in the outer scope's terms.
        std::map<std::string, std::string> values, places;
        for (const auto& key : inst.keys()) {
            if (key == "block" || key == "repeat" || key == "name" || key == "inputs" || key == "trainable") continue;
            if (!def.params.count(key)) {
                std::vector<std::string> known(def.param_order);
                known.insert(known.end(), {"repeat", "name", "inputs", "trainable"});
                inst.value(key).fail("unknown parameter for block '" + block_name + "'" + did_you_mean(key, known),
                                     "it takes: " + join_names(known));
            }
            const std::string written = param_text(inst.value(key));
            values[key] = substitute_text(written, outer, inst.key_place(key), key);
            places[key] = place_of_value(written, outer, inst.value(key).place);
        }
        for (const auto& name : def.param_order) {
            if (values.count(name)) continue;
            const auto& fallback = def.params.at(name);
            if (!fallback)
                bv.fail("block '" + block_name + "' needs parameter '" + name + "'",
                        "e.g. {block: " + block_name + ", " + name + ": ...}");
            values[name] = *fallback;
            places[name] = def.param_refs.at(name).place;
            defaults_used_.insert(block_name + "\n" + name);
        }
        const size_t saved_first = first_of_copy_;
        const size_t instance_first = out_.size();
        for (int64_t copy = 1; copy <= repeat; ++copy) {
            Scope scope;
            scope.prefix = outer.prefix + local + "/" + (repeat > 1 ? "block" + std::to_string(copy) + "/" : "");
            scope.block = &def;
            scope.values = values;
            scope.value_places = places;
            scope.input = input;
            scope.active = outer.active;
            scope.active.push_back(block_name);
            first_of_copy_ = out_.size();
            expand_list(def.layers, scope);
            input = LayerInput{"", static_cast<int>(out_.size()) - 1};
        }
        first_of_copy_ = saved_first;
        // `trainable: false` on an instance freezes its layers that have
        // weights and set nothing themselves (nn/ checks each layer's value).
        if (inst.has("trainable")) {
            const ValueRef tv = inst.value("trainable");
            const std::string text = substitute_text(param_text(tv), outer, inst.key_place("trainable"), "trainable");
            if (text != "true" && text != "false")
                tv.fail("expected true or false, got '" + text + "'", "e.g. {block: " + block_name + ", trainable: false}");
            for (size_t i = instance_first; i < out_.size(); ++i)
                if (!out_[i].params.count("trainable") && layer_has_weights(out_[i].type)) {
                    out_[i].params["trainable"] = text;
                    out_[i].where["trainable"] = inst.key_place("trainable");
                }
        }
        outer.names[local] = static_cast<int>(out_.size()) - 1;
        if (!outer.block) instance_names_.insert(local);
    }

    const Blocks& blocks_;
    std::vector<LayerSpec>& out_;
    std::set<std::string> defaults_used_;
    std::set<std::string> instance_names_;  // the top level's block instances  // "block\nparam" whose default an instance took
    size_t first_of_copy_ = static_cast<size_t>(-1);  // index of the current copy's first layer
    std::map<std::string, int> outer_instance_counts_;
};

}  // namespace

ValueRef list_item(const ValueRef& list, size_t index) {
    const YAML::Node node = list.node[index];
    const std::string path = index_path(list.path, index);
    std::string place = list.source->place(node.Mark(), path);
    if (node.Mark().is_null() && place == list.source->name()) place = list.place;  // no mark, no pin: point at the list
    return {list.source, node, path, place};
}

// model.init_from, init_map and init_skip (train/init_from.hpp loads the file).
static void read_init(const Section& model, ModelConfig& out) {
    const char* from_example = "e.g. init_from: runs/mnist/best.safetensors";
    if (model.has("init_from") && !model.value("init_from").node.IsNull()) {  // `~`: none (a --set can drop it)
        const ValueRef v = model.value("init_from");
        out.init_from = read_text(v);
        out.init_from_place = v.place;
        if (out.init_from.empty()) v.fail("is empty", std::string("give a checkpoint's path, ") + from_example);
    }
    if (model.has("init_map")) {
        const ValueRef v = model.value("init_map");
        out.init_map_place = v.place;
        const char* map_example = "e.g. init_map: {features/conv2d/kernel: conv2d/kernel} (the file's name: the model's)";
        if (!v.node.IsMap() && !v.node.IsNull())
            v.fail("expected a mapping of the file's tensor names to the model's, got " + describe(v.node), map_example);
        const Section map = Section::open(*v.source, v.node, v.path, v.place);
        for (const std::string& key : map.keys()) {
            const ValueRef to = map.value(key);
            if (!to.node.IsScalar() || to.node.Scalar().empty())
                to.fail("expected the model's tensor name, got " + describe(to.node), map_example);
            out.init_map.emplace_back(key, to.node.Scalar());
        }
    }
    if (model.has("init_skip")) {
        const ValueRef v = model.value("init_skip");
        out.init_skip_place = v.place;
        const char* skip_example = "e.g. init_skip: [dense_1] (layers, tensors or block scopes)";
        if (v.node.IsScalar() && !v.node.IsNull() && v.node.Scalar() != "~") {
            out.init_skip.push_back(read_text(v));
        } else if (v.node.IsSequence()) {
            for (size_t i = 0; i < v.node.size(); ++i) {
                const ValueRef item = list_item(v, i);
                if (!item.node.IsScalar() || item.node.Scalar().empty())
                    item.fail("expected a layer or tensor name, got " + describe(item.node), skip_example);
                out.init_skip.push_back(item.node.Scalar());
            }
        } else if (!v.node.IsNull()) {
            v.fail("expected a list of layer or tensor names, got " + describe(v.node), skip_example);
        }
    }
    for (const char* key : {"init_map", "init_skip"})
        if ((std::string(key) == "init_map" ? !out.init_map.empty() : !out.init_skip.empty()) && out.init_from.empty())
            model.value(key).fail("needs model.init_from: it says how to load that file's tensors",
                                  std::string("add model.init_from, ") + from_example);
}

ModelConfig read_model(const Section& top) {
    if (!top.has("model")) top.value("model").fail("missing", kModelExample);
    const Section model = top.child("model");
    ModelConfig out;
    out.input_shape = read_input_shape(model);
    const ValueRef layers = model.value("layers");
    if (!model.has("layers")) layers.fail("missing", "list the layers, " + kLayersExample);
    if (!layers.node.IsSequence()) layers.fail("expected a list of layers, got " + describe(layers.node), kLayersExample);
    if (layers.node.size() == 0) layers.fail("is empty", "list at least one layer, " + kLayersExample);
    out.layers_place = layers.place;
    const Blocks blocks = read_blocks(top);
    Expander expander(blocks, out.layers);
    Scope scope;
    scope.input = LayerInput{"input", -1};
    expander.expand_list(layers, scope);
    expander.require_set_defaults_used();
    read_init(model, out);
    return out;
}

}  // namespace gputrain::config

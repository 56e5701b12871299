// model: input_shape and layers. Layer parameters are kept as text with their
// places; nn/ checks them against the layer kind.
#include "config/read_sections.hpp"

#include "core/shape.hpp"
#include "core/suggest.hpp"

namespace gputrain::config {

namespace {

const std::string kModelExample =
    "e.g. model: {input_shape: [28, 28], layers: [{type: flatten}, {type: dense, units: 10}]}";
const std::string kLayersExample = "e.g. layers: [{type: flatten}, {type: dense, units: 10}]";

Shape read_input_shape(const Section& model) {
    const ValueRef v = model.value("input_shape");
    const std::string example = "e.g. input_shape: [28, 28]";
    if (!model.has("input_shape")) v.fail("missing", "give the shape of one sample, " + example);
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
    if (v.node.IsNull()) v.fail("missing value");
    if (!v.node.IsSequence()) v.fail(expected + describe(v.node));
    std::vector<std::string> items;
    for (size_t i = 0; i < v.node.size(); ++i) {
        const ValueRef item = list_item(v, i);
        if (!item.node.IsScalar()) item.fail(expected + describe(item.node));
        items.push_back(item.node.Scalar());
    }
    return join_names(items, ",");
}

LayerSpec read_layer(const ValueRef& item) {
    if (!item.node.IsMap())
        item.fail("expected a mapping with a type, got " + describe(item.node),
                  "write each layer as {type: NAME, ...}, e.g. {type: dense, units: 10}");
    const Section layer = Section::open(*item.source, item.node, item.path, item.place);
    LayerSpec spec;
    spec.where[""] = layer.place();
    if (!layer.has("type")) layer.value("type").fail("missing", "give the layer kind, e.g. type: dense");
    spec.type = layer.text("type", "");
    if (spec.type.empty()) layer.value("type").fail("is empty", "give the layer kind, e.g. type: dense");
    spec.name = layer.text("name", "");
    for (const auto& key : layer.keys()) {
        spec.where[key] = layer.key_place(key);
        if (key != "type" && key != "name") spec.params[key] = param_text(layer.value(key));
    }
    return spec;
}

}  // namespace

ValueRef list_item(const ValueRef& list, size_t index) {
    const YAML::Node node = list.node[index];
    const std::string path = index_path(list.path, index);
    std::string place = list.source->place(node.Mark(), path);
    if (node.Mark().is_null() && place == list.source->name()) place = list.place;  // no mark, no pin: point at the list
    return {list.source, node, path, place};
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
    for (size_t i = 0; i < layers.node.size(); ++i) out.layers.push_back(read_layer(list_item(layers, i)));
    return out;
}

}  // namespace gputrain::config

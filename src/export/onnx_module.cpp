// The ONNX module, libgputrain_onnx.so: an OnnxGraph to an ONNX file with
// Debian's libonnx (the protobuf classes of onnx-ml.proto, ONNX's checker and
// shape inference) and libprotobuf. A module of its own, loaded by
// onnx_write.cpp with RTLD_DEEPBIND, because Debian's libsentencepiece (linked
// into gputrain for its tokenizer) carries its own, older copy of protobuf's
// symbols: in one symbol scope, libprotobuf would call into that copy and
// crash as the program starts. It links nothing of gputrain: errors come back
// as text through a C function.
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "export/onnx_types.hpp"

namespace gputrain::exporter {

namespace {

void set_type(::onnx::ValueInfoProto* value, const std::string& name, const std::vector<int64_t>& per_sample,
              bool int64 = false) {
    value->set_name(name);
    auto* tensor = value->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(int64 ? ::onnx::TensorProto::INT64 : ::onnx::TensorProto::FLOAT);
    auto* shape = tensor->mutable_shape();
    shape->add_dim()->set_dim_param("N");  // any batch size
    for (int64_t d : per_sample) shape->add_dim()->set_dim_value(d);
}

void add_node(::onnx::GraphProto* graph, const OnnxNode& n) {
    auto* node = graph->add_node();
    node->set_op_type(n.op);
    node->set_name(n.name);
    for (const auto& in : n.inputs) node->add_input(in);
    for (const auto& out : n.outputs) node->add_output(out);
    for (const auto& a : n.attributes) {
        auto* attr = node->add_attribute();
        attr->set_name(a.name);
        switch (a.kind) {
            case OnnxAttribute::Kind::integer:
                attr->set_type(::onnx::AttributeProto::INT);
                attr->set_i(a.i);
                break;
            case OnnxAttribute::Kind::real:
                attr->set_type(::onnx::AttributeProto::FLOAT);
                attr->set_f(a.f);
                break;
            case OnnxAttribute::Kind::integers:
                attr->set_type(::onnx::AttributeProto::INTS);
                for (int64_t v : a.ints) attr->add_ints(v);
                break;
            case OnnxAttribute::Kind::text:
                attr->set_type(::onnx::AttributeProto::STRING);
                attr->set_s(a.s);
                break;
        }
    }
}

void add_initializer(::onnx::GraphProto* graph, const OnnxTensor& t) {
    auto* tensor = graph->add_initializer();
    tensor->set_name(t.name);
    for (int64_t d : t.dims) tensor->add_dims(d);
    // raw_data is little-endian, as this machine's memory is.
    if (t.int64) {
        tensor->set_data_type(::onnx::TensorProto::INT64);
        tensor->set_raw_data(t.ints.data(), t.ints.size() * sizeof(int64_t));
    } else {
        tensor->set_data_type(::onnx::TensorProto::FLOAT);
        tensor->set_raw_data(t.floats.data(), t.floats.size() * sizeof(float));
    }
}

// "(N, 10)" as "(None, 10)": the batch axis may be named or unknown.
std::string dims_text(const ::onnx::TypeProto& type) {
    std::string s = "(None";
    const auto& shape = type.tensor_type().shape();
    for (int i = 1; i < shape.dim_size(); ++i) {
        s += ", ";
        s += shape.dim(i).has_dim_value() ? std::to_string(shape.dim(i).dim_value())
                                          : (shape.dim(i).dim_param().empty() ? "?" : shape.dim(i).dim_param());
    }
    return s + ")";
}

}  // namespace

static void write(const OnnxGraph& g, const std::string& path) {
    ::onnx::ModelProto model;
    model.set_ir_version(8);  // ONNX 1.12's: opset 17
    model.set_producer_name("gputrain");
    model.set_model_version(1);
    model.set_doc_string(g.doc);
    auto* opset = model.add_opset_import();
    opset->set_domain("");
    opset->set_version(kOnnxOpset);
    for (const auto& [key, value] : g.metadata) {
        auto* prop = model.add_metadata_props();
        prop->set_key(key);
        prop->set_value(value);
    }
    auto* graph = model.mutable_graph();
    graph->set_name(g.name);
    set_type(graph->add_input(), "input", g.input_dims, g.input_ids);
    set_type(graph->add_output(), "output", g.output_dims);
    for (const auto& t : g.initializers) add_initializer(graph, t);
    for (const auto& n : g.nodes) add_node(graph, n);

    // ONNX's own checks: the checker (operators, attributes, graph order), then
    // strict shape inference, whose output shape must be the model's.
    try {
        ::onnx::checker::check_model(model);
        ::onnx::ModelProto inferred = model;
        ::onnx::shape_inference::InferShapes(inferred, ::onnx::OpSchemaRegistry::Instance(),
                                             ::onnx::ShapeInferenceOptions(true, 1, false));
        const std::string want = dims_text(model.graph().output(0).type());
        for (const auto& v : inferred.graph().value_info())
            if (v.name() == g.nodes.back().inputs[0] && v.type().tensor_type().has_shape()) {
                std::string got = dims_text(v.type());
                if (got != want)
                    throw std::runtime_error("onnx export: ONNX's shape inference gives the model's output the shape " + got +
                                ", not " + want + "; please report this");
            }
    } catch (const ::onnx::checker::ValidationError& e) {
        throw std::runtime_error(std::string("onnx export: ONNX's checker refuses the graph (please report this): ") +
                                 e.what());
    } catch (const ::onnx::InferenceError& e) {
        throw std::runtime_error(std::string("onnx export: ONNX's shape inference refuses the graph (please report "
                                             "this): ") + e.what());
    }

    std::string bytes;
    if (!model.SerializeToString(&bytes)) throw std::runtime_error("onnx export: the model does not serialize (over 2 GB?)");
    const std::string temp = path + ".tmp-" + std::to_string(::getpid());
    {
        std::ofstream out(temp, std::ios::binary | std::ios::trunc);
        if (!out) throw std::runtime_error("--onnx: cannot write '" + temp + "': " + std::strerror(errno));
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        out.flush();
        if (!out) {
            std::error_code ec;
            std::filesystem::remove(temp, ec);
            throw std::runtime_error("--onnx: cannot write '" + temp + "' (disk full?)");
        }
    }
    std::error_code ec;
    std::filesystem::rename(temp, path, ec);
    if (ec) {
        std::filesystem::remove(temp, ec);
        throw std::runtime_error("--onnx: cannot move the file into place as '" + path + "': " + ec.message());
    }
}

}  // namespace gputrain::exporter

// 0 when written; otherwise 1 and the error, one line, in `message`.
extern "C" __attribute__((visibility("default"))) int gputrain_onnx_write(
    const gputrain::exporter::OnnxGraph* graph, const char* path, char* message, size_t message_size) {
    try {
        gputrain::exporter::write(*graph, path);
        return 0;
    } catch (const std::exception& e) {
        std::snprintf(message, message_size, "%s", e.what());
    } catch (...) {
        std::snprintf(message, message_size, "onnx export: an unknown error");
    }
    return 1;
}

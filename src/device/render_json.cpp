// `gputrain devices --json`: one JSON object, two-space indented.
#include <cstdio>
#include <optional>
#include <string_view>
#include <type_traits>
#include <vector>

#include "device/library_versions.hpp"
#include "device/render.hpp"

namespace gputrain::device {

namespace {

std::string quote(std::string_view s) {
    std::string out = "\"";
    for (const char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
                    out += buf;
                } else {
                    out += c;
                }
        }
    }
    return out + "\"";
}

// Writes keys and values in order, placing commas, newlines and indentation.
class JsonWriter {
public:
    void begin_object() { open('{'); }
    void end_object() { close('}'); }
    void begin_array() { open('['); }
    void end_array() { close(']'); }
    void key(std::string_view name) {
        before_value();
        out_ += quote(name) + ": ";
        after_key_ = true;
    }
    void raw(const std::string& text) {
        before_value();
        out_ += text;
    }
    void string(std::string_view s) { raw(quote(s)); }
    void boolean(bool b) { raw(b ? "true" : "false"); }
    void number(long long n) { raw(std::to_string(n)); }
    void null() { raw("null"); }

    // key: value, or key: null when the value is empty.
    template <typename T>
    void field(std::string_view name, const std::optional<T>& value) {
        key(name);
        if (!value) null();
        else if constexpr (std::is_same_v<T, bool>) boolean(*value);
        else if constexpr (std::is_same_v<T, std::string>) string(*value);
        else number(static_cast<long long>(*value));
    }
    void field(std::string_view name, const std::string& value) { field(name, std::optional<std::string>(value)); }
    void field(std::string_view name, long long value) { field(name, std::optional<long long>(value)); }

    std::string finish() { return out_ + "\n"; }

private:
    void before_value() {
        if (after_key_) {
            after_key_ = false;
            return;
        }
        if (items_.empty()) return;
        if (items_.back()++ > 0) out_ += ',';
        out_ += '\n';
        out_.append(2 * items_.size(), ' ');
    }
    void open(char bracket) {
        before_value();
        out_ += bracket;
        items_.push_back(0);
    }
    void close(char bracket) {
        const int items = items_.back();
        items_.pop_back();
        if (items > 0) {
            out_ += '\n';
            out_.append(2 * items_.size(), ' ');
        }
        out_ += bracket;
    }

    std::string out_;
    std::vector<int> items_;   // values written so far in each open object or array
    bool after_key_ = false;
};

std::optional<std::string> unless_empty(const std::string& s) {
    return s.empty() ? std::nullopt : std::optional<std::string>(s);
}

std::optional<std::string> library(const std::optional<int>& version) {
    return version ? std::optional<std::string>(format_library_version(*version)) : std::nullopt;
}

void write_peers(JsonWriter& w, const Discovery& d, size_t i) {
    w.key("peers");
    w.begin_array();
    for (size_t j = 0; j < d.gpus.size(); ++j) {
        if (j == i) continue;
        const PeerLink link = i < d.topology.size() && j < d.topology[i].size() ? d.topology[i][j] : PeerLink{};
        w.begin_object();
        w.field("index", d.gpus[j].index);
        w.field("peer_access", link.peer_access);
        w.field("nvlinks", link.nvlinks);
        w.field("pcie_path", unless_empty(link.pcie_path));
        w.end_object();
    }
    w.end_array();
}

void write_gpu(JsonWriter& w, const Discovery& d, size_t i) {
    const GpuInfo& g = d.gpus[i];
    w.begin_object();
    w.field("index", g.index);
    w.field("name", g.name);
    w.field("pci_bus_id", unless_empty(g.pci_bus_id));
    w.field("memory_total_bytes", static_cast<long long>(g.memory_bytes));
    w.field("memory_used_bytes", g.memory_used_bytes);
    w.field("utilization_percent", g.utilization_percent);
    w.field("memory_utilization_percent", g.memory_utilization_percent);
    w.field("temperature_celsius", g.temperature_celsius);
    w.field("power_draw_milliwatts", g.power_draw_milliwatts);
    w.field("power_limit_milliwatts", g.power_limit_milliwatts);
    w.field("compute_capability", std::to_string(g.compute_major) + "." + std::to_string(g.compute_minor));
    w.field("multiprocessors", g.multiprocessors);
    w.field("nvlink_active_links", g.nvlink_active_links);
    write_peers(w, d, i);
    w.end_object();
}

}  // namespace

std::string render_json(const Discovery& d) {
    JsonWriter w;
    w.begin_object();
    w.key("driver");
    w.begin_object();
    w.key("found");
    w.boolean(d.driver_found);
    w.field("message", unless_empty(d.driver_message));
    w.field("nvml_message", unless_empty(d.nvml_message));
    w.end_object();

    w.key("versions");
    w.begin_object();
    w.field("nvidia_driver", unless_empty(d.nvidia_driver_version));
    w.field("cuda", d.driver_version > 0 ? std::optional<std::string>(format_cuda_version(d.driver_version))
                                         : std::nullopt);
    w.field("cudnn", library(d.cudnn_version));
    w.field("nccl", library(d.nccl_version));
    w.end_object();

    w.key("gpus");
    w.begin_array();
    for (size_t i = 0; i < d.gpus.size(); ++i) write_gpu(w, d, i);
    w.end_array();

    w.key("cpu");
    w.begin_object();
    w.field("model", d.cpu.model);
    w.field("cores", d.cpu.logical_cores);
    w.field("memory_bytes", static_cast<long long>(d.cpu.memory_bytes));
    w.end_object();

    w.key("cuda_built");
    w.boolean(d.cuda_built);
    // A build without the CUDA backend trains on the CPU whatever GPUs it sees.
    w.field("training_device", std::string(d.cuda_built && !d.gpus.empty() ? "gpu" : "cpu"));
    w.end_object();
    return w.finish();
}

}  // namespace gputrain::device

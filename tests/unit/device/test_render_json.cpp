#include <catch2/catch.hpp>

#include "device/render.hpp"
#include "discovery_samples.hpp"
#include "json_check.hpp"

using namespace gputrain::device;
using gputrain::device::testing::python_accepts;

TEST_CASE("render_json: two H200s, null where NVML gave nothing") {
    const std::string json = render_json(samples::two_h200s());
    CHECK(python_accepts(json, R"py(
assert set(d) == {"driver", "versions", "gpus", "cpu", "cuda_built", "training_device"}, d.keys()
assert d["cuda_built"] is True
assert d["driver"] == {"found": True, "message": None, "nvml_message": None}, d["driver"]
assert d["versions"] == {"nvidia_driver": "570.86.15", "cuda": "12.8", "cudnn": "9.1.0", "nccl": "2.21.5"}
g0, g1 = d["gpus"]
assert g0 == {"index": 0, "name": "NVIDIA H200", "pci_bus_id": "0000:19:00.0",
              "memory_total_bytes": 150754820096, "memory_used_bytes": 1610612736,
              "utilization_percent": 35, "memory_utilization_percent": 12, "temperature_celsius": 41,
              "power_draw_milliwatts": 250400, "power_limit_milliwatts": 700000,
              "compute_capability": "9.0", "multiprocessors": 132, "nvlink_active_links": 18,
              "peers": [{"index": 1, "peer_access": True, "nvlinks": 18, "pcie_path": "NODE"}]}, g0
for key in ("memory_used_bytes", "utilization_percent", "memory_utilization_percent", "temperature_celsius",
            "power_draw_milliwatts"):
    assert g1[key] is None, (key, g1)
assert g1["power_limit_milliwatts"] == 700000 and g1["peers"][0]["index"] == 0, g1
assert d["cpu"] == {"model": "AMD EPYC 9654 96-Core Processor", "cores": 192, "memory_bytes": 1649267441664}
assert d["training_device"] == "gpu"
)py"));
}

TEST_CASE("render_json: no GPU") {
    const std::string json = render_json(samples::no_gpu());
    CHECK(python_accepts(json, R"py(
assert d["driver"] == {"found": False, "message": "no CUDA driver found (libcuda.so.1 not loadable)",
                       "nvml_message": "NVML not found (libnvidia-ml.so.1 not loadable)"}, d["driver"]
assert d["versions"] == {"nvidia_driver": None, "cuda": None, "cudnn": "9.1.0", "nccl": None}, d["versions"]
assert d["gpus"] == [] and d["training_device"] == "cpu" and d["cpu"]["cores"] == 192, d
)py"));
    // Two-space indentation, one key per line, a newline at the end.
    CHECK(json.rfind("{\n  \"driver\": {\n    \"found\": false,\n", 0) == 0);
    CHECK(json.find("\n  \"gpus\": [],\n") != std::string::npos);
    CHECK(json.substr(json.size() - 3) == "\n}\n");
}

TEST_CASE("render_json: a build without CUDA trains on the CPU even with GPUs in sight") {
    Discovery d = samples::two_h200s();
    d.cuda_built = false;
    CHECK(python_accepts(render_json(d), R"py(
assert d["cuda_built"] is False and len(d["gpus"]) == 2 and d["training_device"] == "cpu", d
)py"));
    d = samples::no_gpu();
    d.cuda_built = false;
    CHECK(python_accepts(render_json(d), R"py(
assert d["cuda_built"] is False and d["gpus"] == [] and d["training_device"] == "cpu", d
)py"));
}

TEST_CASE("render_json: names are escaped") {
    Discovery d = samples::two_h200s();
    d.gpus[0].name = "quote\" backslash\\ newline\n tab\t bell\x07 \xc3\xa9";
    d.cpu.model = "C:\\cpu \"x\"";
    const std::string json = render_json(d);
    CHECK(json.find(R"("quote\" backslash\\ newline\n tab\t bell\u0007 )") != std::string::npos);
    CHECK(python_accepts(json, R"py(
assert d["gpus"][0]["name"] == "quote\" backslash\\ newline\n tab\t bell\x07 \u00e9", d["gpus"][0]["name"]
assert d["cpu"]["model"] == 'C:\\cpu "x"', d["cpu"]["model"]
)py"));
}

#include <catch2/catch.hpp>

#include <cstdlib>

#include "build_config.hpp"
#include "device/devices.hpp"
#include "device/render.hpp"

using namespace gputrain::device;

TEST_CASE("discover on this machine: GPUs, or none with a reason; always a CPU") {
    for (const Detail detail : {Detail::basic, Detail::full}) {
        const Discovery d = discover(detail);
        CHECK(d.cpu.logical_cores > 0);
        CHECK(d.cpu.memory_bytes > 0);
        CHECK_FALSE(d.cpu.model.empty());
        CHECK(d.cuda_built == (GPUTRAIN_HAVE_CUDA != 0));
        if (d.gpus.empty()) {
            CHECK_FALSE(d.driver_message.empty());
            // A build without CUDA gives that as the reason, the words fit uses.
            const std::string reason = d.cuda_built ? d.driver_message
                                                    : "this gputrain was built without CUDA (rebuild with meson "
                                                      "-Dcuda=enabled)";
            CHECK(render_table(d).rfind("No GPU: " + reason + "; training will use the CPU.\n", 0) == 0);
        }
        for (const auto& g : d.gpus) {
            CHECK_FALSE(g.name.empty());
            CHECK(g.memory_bytes > 0);
        }
        CHECK(d.topology.size() == d.gpus.size());
    }
}

// The tests below run only as unit-device-fake-driver, where LD_LIBRARY_PATH
// puts the fake libcuda.so.1 and libnvidia-ml.so.1 of this folder first: the
// CUDA driver shows two H200s (bus 3B, then 19), NVML lists three (19, 2A, 3B).

namespace {

void set_fake_nvml(const char* topology, const char* init_error) {
    setenv("FAKE_NVML_TOPOLOGY", topology, 1);
    if (init_error) setenv("FAKE_NVML_INIT_ERROR", init_error, 1);
    else unsetenv("FAKE_NVML_INIT_ERROR");
}

}  // namespace

TEST_CASE("discover with the fake driver: NVML values follow the GPU by bus id", "[.fake-driver]") {
    set_fake_nvml("switch", nullptr);
    const Discovery d = discover(Detail::full);
    REQUIRE(d.gpus.size() == 2);
    CHECK(d.driver_found);
    CHECK(d.driver_message.empty());
    CHECK(d.driver_version == 12080);
    CHECK(d.nvidia_driver_version == "570.86.15");
    CHECK(d.nvml_message.empty());

    // CUDA device 0 is NVML's third GPU (k = 2), CUDA device 1 its first (k = 0).
    const GpuInfo& a = d.gpus[0];
    CHECK(a.index == 0);
    CHECK(a.name == "NVIDIA H200");
    CHECK(a.pci_bus_id == "0000:3b:00.0");
    CHECK(a.memory_bytes == 150754820096ull);
    CHECK(a.compute_major == 9);
    CHECK(a.multiprocessors == 132);
    CHECK(a.memory_used_bytes == 3ull << 30);
    CHECK(a.utilization_percent == 25u);
    CHECK(a.memory_utilization_percent == 4u);
    CHECK(a.temperature_celsius == 32u);
    CHECK(a.power_draw_milliwatts == 102000u);
    CHECK(a.power_limit_milliwatts == 700000u);
    CHECK(a.nvlink_active_links == 18u);

    const GpuInfo& b = d.gpus[1];
    CHECK(b.pci_bus_id == "0000:19:00.0");
    CHECK(b.temperature_celsius == 30u);
    CHECK(b.memory_used_bytes == 1ull << 30);
    CHECK_FALSE(b.power_limit_milliwatts.has_value());   // NVML: not supported on this one

    REQUIRE(d.topology.size() == 2);
    CHECK(d.topology[0][1].peer_access == true);
    CHECK(d.topology[1][0].peer_access == true);
    CHECK(d.topology[0][1].nvlinks == 18u);   // through the NVSwitches
    CHECK(d.topology[0][1].pcie_path == "NODE");
    CHECK(render_table(d).find("\n1    NVIDIA H200  0000:19:00.0  1.0 GiB / 140.4 GiB  5%    30 C  100 W / n/a") !=
          std::string::npos);
    // GPUs in sight: only a build with CUDA trains on them.
    const bool cuda_built = GPUTRAIN_HAVE_CUDA != 0;
    CHECK(d.cuda_built == cuda_built);
    CHECK(render_json(d).find(cuda_built ? "\"training_device\": \"gpu\"" : "\"training_device\": \"cpu\"") !=
          std::string::npos);
    CHECK((render_table(d).find("Note: this gputrain was built without CUDA") != std::string::npos) == !cuda_built);
}

TEST_CASE("discover with the fake driver: direct NVLink links and PCIe-only pairs", "[.fake-driver]") {
    set_fake_nvml("direct", nullptr);
    Discovery d = discover(Detail::full);
    REQUIRE(d.topology.size() == 2);
    CHECK(d.topology[0][1].nvlinks == 4u);
    CHECK(d.topology[1][0].nvlinks == 4u);

    set_fake_nvml("pcie", nullptr);
    d = discover(Detail::full);
    REQUIRE(d.topology.size() == 2);
    CHECK(d.gpus[0].nvlink_active_links == 0u);
    CHECK(d.topology[0][1].nvlinks == 0u);
    CHECK(d.topology[0][1].pcie_path == "SYS");
    CHECK(render_topology(d).find("GPU0  X     SYS\nGPU1  SYS   X\n") != std::string::npos);
}

TEST_CASE("discover with the fake driver: NVML failing leaves the CUDA columns", "[.fake-driver]") {
    set_fake_nvml("switch", "9");
    const Discovery d = discover(Detail::full);
    set_fake_nvml("switch", nullptr);
    REQUIRE(d.gpus.size() == 2);
    CHECK(d.nvml_message == "nvmlInit failed: Driver Not Loaded");
    CHECK(d.gpus[0].name == "NVIDIA H200");
    CHECK_FALSE(d.gpus[0].temperature_celsius.has_value());
    CHECK_FALSE(d.topology[0][1].nvlinks.has_value());
    CHECK(d.topology[0][1].peer_access == true);
    CHECK(render_table(d).find("\nNote: n/a = not readable: nvmlInit failed: Driver Not Loaded\n") !=
          std::string::npos);
}

TEST_CASE("discover with the fake driver: basic detail skips NVML and the libraries", "[.fake-driver]") {
    const Discovery d = discover(Detail::basic);
    REQUIRE(d.gpus.size() == 2);
    CHECK(d.gpus[0].pci_bus_id == "0000:3b:00.0");
    CHECK(d.topology[0][1].peer_access == true);
    CHECK_FALSE(d.gpus[0].temperature_celsius.has_value());
    CHECK(d.nvidia_driver_version.empty());
    CHECK_FALSE(d.cudnn_version.has_value());
}

TEST_CASE("discover with the fake driver: an empty CUDA_VISIBLE_DEVICES is named as the reason", "[.fake-driver]") {
    setenv("CUDA_VISIBLE_DEVICES", "", 1);
    const Discovery d = discover(Detail::full);
    unsetenv("CUDA_VISIBLE_DEVICES");
    CHECK(d.gpus.empty());
    CHECK(d.driver_found);
    CHECK(d.driver_version == 12080);
    CHECK(d.driver_message ==
          "CUDA driver present but cuInit failed: no CUDA-capable device is detected; CUDA_VISIBLE_DEVICES=\"\" hides "
          "every GPU; unset it (or list GPUs, e.g. 0,1) to use them");
    CHECK(render_versions(d).rfind("Versions: NVIDIA driver 570.86.15, CUDA 12.8, cuDNN ", 0) == 0);
    CHECK(render_topology(d) == "No GPU: " + d.driver_message + "; there is no GPU to show a topology for.\n");
}

TEST_CASE("discover with the fake driver: a CUDA_VISIBLE_DEVICES that hides GPUs is noted under the table",
          "[.fake-driver]") {
    setenv("CUDA_VISIBLE_DEVICES", "0,xyz", 1);
    const Discovery d = discover(Detail::basic);
    unsetenv("CUDA_VISIBLE_DEVICES");
    CHECK(d.gpus.size() == 2);  // the fake driver ignores the variable; the note is ours
    const std::string note = "Note: CUDA_VISIBLE_DEVICES=\"0,xyz\": 'xyz' is neither a GPU index nor a GPU UUID, so "
                             "CUDA hides every GPU listed from there on; list GPUs like 0,1 or GPU-<uuid> (see "
                             "nvidia-smi -L), or unset it\n";
    CHECK(render_table(d).find(note) != std::string::npos);
    setenv("CUDA_VISIBLE_DEVICES", "1,0", 1);
    const Discovery plain = discover(Detail::basic);
    unsetenv("CUDA_VISIBLE_DEVICES");
    CHECK(plain.visible_devices_note.empty());
    CHECK(render_table(plain).find("CUDA_VISIBLE_DEVICES") == std::string::npos);
}

#include <catch2/catch.hpp>

#include "device/render.hpp"
#include "discovery_samples.hpp"

using namespace gputrain::device;

TEST_CASE("render_table: two H200s, one with values NVML did not give") {
    CHECK(render_table(samples::two_h200s()) ==
          "Versions: NVIDIA driver 570.86.15, CUDA 12.8, cuDNN 9.1.0, NCCL 2.21.5\n"
          "GPU  Name         Bus ID        Memory used / total  Util  Temp  Power draw / limit  Compute  SMs\n"
          "0    NVIDIA H200  0000:19:00.0  1.5 GiB / 140.4 GiB  35%   41 C  250 W / 700 W       9.0      132\n"
          "1    NVIDIA H200  0000:3b:00.0  n/a / 140.4 GiB      n/a   n/a   n/a / 700 W         9.0      132\n"
          "Note: n/a = not readable: NVML does not report it for this GPU\n"
          "CPU  Model                            Memory   Cores\n"
          "0    AMD EPYC 9654 96-Core Processor  1.5 TiB  192\n");
}

TEST_CASE("render_table: the note gives NVML's reason when NVML could not be used") {
    Discovery d = samples::two_h200s();
    d.nvml_message = "NVML not found (libnvidia-ml.so.1 not loadable)";
    const std::string table = render_table(d);
    CHECK(table.find("\nNote: n/a = not readable: NVML not found (libnvidia-ml.so.1 not loadable)\n") !=
          std::string::npos);
}

TEST_CASE("render_table: no note when every cell was read") {
    Discovery d = samples::two_h200s();
    d.gpus.pop_back();
    d.topology = {{PeerLink{}}};
    CHECK(render_table(d).find("Note") == std::string::npos);
    d.gpus[0].pci_bus_id.clear();
    CHECK(render_table(d).find("\n0    NVIDIA H200  n/a     ") != std::string::npos);
    CHECK(render_table(d).find("Note: n/a") != std::string::npos);
}

TEST_CASE("render_table: without a GPU, the reason, the versions, then the CPU") {
    CHECK(render_table(samples::no_gpu()) ==
          "No GPU: no CUDA driver found (libcuda.so.1 not loadable); training will use the CPU.\n"
          "Versions: NVIDIA driver not found, CUDA not found, cuDNN 9.1.0, NCCL not found\n"
          "CPU  Model                            Memory   Cores\n"
          "0    AMD EPYC 9654 96-Core Processor  1.5 TiB  192\n");
}

TEST_CASE("render_table: a build without CUDA says so, as fit does, and that training uses the CPU") {
    Discovery d = samples::no_gpu();
    d.cuda_built = false;
    CHECK(render_table(d) ==
          "No GPU: this gputrain was built without CUDA (rebuild with meson -Dcuda=enabled); training will use the "
          "CPU.\n"
          "Note: nor is a GPU in sight: no CUDA driver found (libcuda.so.1 not loadable)\n"
          "Versions: NVIDIA driver not found, CUDA not found, cuDNN 9.1.0, NCCL not found (on this machine; this "
          "build, without CUDA, uses none of them)\n"
          "CPU  Model                            Memory   Cores\n"
          "0    AMD EPYC 9654 96-Core Processor  1.5 TiB  192\n");
    // GPUs in sight are listed, with a note that this build cannot train on them.
    d = samples::two_h200s();
    d.cuda_built = false;
    CHECK(render_table(d).find(
              "Note: n/a = not readable: NVML does not report it for this GPU\n"
              "Note: this gputrain was built without CUDA (rebuild with meson -Dcuda=enabled); training will use the "
              "CPU, not these GPUs.\n"
              "CPU  ") != std::string::npos);
}

TEST_CASE("render_versions: a driver whose versions could not be read says n/a, not 'not found'") {
    Discovery d = samples::no_gpu();
    d.driver_found = true;
    d.driver_message = "CUDA driver present but cuInit failed: no CUDA-capable device is detected";
    CHECK(render_versions(d) == "Versions: NVIDIA driver n/a, CUDA n/a, cuDNN 9.1.0, NCCL not found\n");
    d.driver_version = 13000;
    d.nvidia_driver_version = "580.65.06";
    d.nccl_version = 2708;   // NCCL before 2.9 encoded major*1000
    CHECK(render_versions(d) == "Versions: NVIDIA driver 580.65.06, CUDA 13.0, cuDNN 9.1.0, NCCL 2.7.8\n");
}

TEST_CASE("render_versions: a build without CUDA says the libraries it found are not its own") {
    Discovery d = samples::no_gpu();
    d.cuda_built = false;
    CHECK(render_versions(d) == "Versions: NVIDIA driver not found, CUDA not found, cuDNN 9.1.0, NCCL not found "
                                "(on this machine; this build, without CUDA, uses none of them)\n");
    d.cudnn_version.reset();
    CHECK(render_versions(d) == "Versions: NVIDIA driver not found, CUDA not found, cuDNN not found, NCCL not found\n");
}

TEST_CASE("render_topology: the link and peer-access matrices") {
    CHECK(render_topology(samples::two_h200s()) ==
          "GPU0: NVIDIA H200 (0000:19:00.0)\n"
          "GPU1: NVIDIA H200 (0000:3b:00.0)\n"
          "\n"
          "Link  GPU0  GPU1\n"
          "GPU0  X     NV18\n"
          "GPU1  NV18  X\n"
          "\n"
          "Peer access  GPU0  GPU1\n"
          "GPU0         X     yes\n"
          "GPU1         yes   X\n"
          "\n"
          "Link: NV<n> = n NVLink links; PIX = one PCIe switch; PXB = several PCIe switches; PHB = a PCIe host "
          "bridge; NODE = host bridges of one NUMA node; SYS = across NUMA nodes; BRD = one board.\n"
          "Peer access: CUDA peer-to-peer memory access (cuDeviceCanAccessPeer).\n");
}

TEST_CASE("render_topology: PCIe paths without NVLink, and what was not readable") {
    Discovery d = samples::two_h200s();
    d.topology[0][1] = PeerLink{false, 0u, "SYS"};
    d.topology[1][0] = PeerLink{std::nullopt, std::nullopt, ""};
    const std::string text = render_topology(d);
    CHECK(text.find("GPU0  X     SYS\nGPU1  n/a   X\n") != std::string::npos);
    CHECK(text.find("GPU0         X     no\nGPU1         n/a   X\n") != std::string::npos);
    CHECK(text.find("Note: n/a = not readable: the driver does not report it for this pair\n") != std::string::npos);
    d.nvml_message = "nvmlInit failed: Driver Not Loaded";
    CHECK(render_topology(d).find("Note: n/a = not readable: nvmlInit failed: Driver Not Loaded\n") !=
          std::string::npos);
}

TEST_CASE("render_topology: without a GPU it says there is nothing to show") {
    CHECK(render_topology(samples::no_gpu()) ==
          "No GPU: no CUDA driver found (libcuda.so.1 not loadable); there is no GPU to show a topology for.\n");
}

#include "build_config.hpp"
#include "device/cuda_driver.hpp"
#include "device/library_versions.hpp"
#include "device/nvml_devices.hpp"

namespace gputrain::device {

Discovery discover(Detail detail) {
    Discovery d;
    d.cuda_built = GPUTRAIN_HAVE_CUDA != 0;
    d.cpu = cpu_info();
    read_cuda_devices(d);
    if (detail == Detail::full) {
        read_nvml(d);
        d.cudnn_version = read_cudnn_version();
        d.nccl_version = read_nccl_version();
    }
    return d;
}

}  // namespace gputrain::device

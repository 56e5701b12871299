// CUDA_VISIBLE_DEVICES explained: what CUDA does with each kind of value.
#include <catch2/catch.hpp>

#include "device/visible_devices.hpp"

using gputrain::device::visible_devices_problem;

TEST_CASE("plain lists of GPU indices and UUIDs are fine") {
    for (const char* ok : {"0", "1,0", "0, 1", "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6", "GPU-8932f937",
                           "MIG-GPU-8932f937-d72c-4106-c12f-20bd9faed9f6/1/0", "0,GPU-ab12"})
        CHECK(visible_devices_problem(ok).empty());
}

TEST_CASE("empty, negative, garbage and repeated entries are explained") {
    CHECK(visible_devices_problem("") ==
          "CUDA_VISIBLE_DEVICES=\"\" hides every GPU; unset it (or list GPUs, e.g. 0,1) to use them");
    CHECK(visible_devices_problem(" ") ==
          "CUDA_VISIBLE_DEVICES=\" \" hides every GPU; unset it (or list GPUs, e.g. 0,1) to use them");
    CHECK(visible_devices_problem("-1") ==
          "CUDA_VISIBLE_DEVICES=\"-1\": '-1' is not a GPU, so CUDA hides every GPU; unset it (or list GPUs, e.g. "
          "0,1) to use them");
    CHECK(visible_devices_problem("0,2,-1,1") ==
          "CUDA_VISIBLE_DEVICES=\"0,2,-1,1\": '-1' is not a GPU, so CUDA hides every GPU listed from there on; unset "
          "it (or list GPUs, e.g. 0,1) to use them");
    CHECK(visible_devices_problem("xyz") ==
          "CUDA_VISIBLE_DEVICES=\"xyz\": 'xyz' is neither a GPU index nor a GPU UUID, so CUDA hides every GPU; list "
          "GPUs like 0,1 or GPU-<uuid> (see nvidia-smi -L), or unset it");
    CHECK(visible_devices_problem("0,,1").find("'' is neither a GPU index nor a GPU UUID") != std::string::npos);
    CHECK(visible_devices_problem("GPU-").find("'GPU-' is neither") != std::string::npos);
    CHECK(visible_devices_problem("GPU-zz").find("'GPU-zz' is neither") != std::string::npos);
    CHECK(visible_devices_problem("0,0") ==
          "CUDA_VISIBLE_DEVICES=\"0,0\": GPU 0 is listed twice, which CUDA does not accept; list each GPU once");
}

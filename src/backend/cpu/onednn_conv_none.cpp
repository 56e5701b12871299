// A build without oneDNN: every CPU convolution runs im2col + OpenBLAS.
#include "backend/cpu/onednn_conv.hpp"

#include "backend/cpu/conv_description.hpp"
#include "core/error.hpp"

namespace gputrain {

bool have_onednn() { return false; }
std::string cpu_conv_description() { return "im2col + OpenBLAS (this build has no oneDNN: meson -Donednn=enabled)"; }
void set_onednn_threads(int) {}
bool onednn_sgemm(bool, bool, int, int, int, float, const float*, int, const float*, int, float, float*, int) {
    return false;
}

struct OneDnnConvolutions::Impl {};
OneDnnConvolutions::OneDnnConvolutions() = default;
OneDnnConvolutions::~OneDnnConvolutions() = default;
bool OneDnnConvolutions::use(const Conv2dGeometry&, CpuConvPath) { return false; }
void OneDnnConvolutions::forward(const Conv2dGeometry&, const float*, const float*, float*) {
    throw Error("conv2d: this build has no oneDNN");
}
void OneDnnConvolutions::backward_data(const Conv2dGeometry&, const float*, const float*, float*) {
    throw Error("conv2d: this build has no oneDNN");
}
void OneDnnConvolutions::backward_filter(const Conv2dGeometry&, const float*, const float*, float*) {
    throw Error("conv2d: this build has no oneDNN");
}

}  // namespace gputrain

#include "train/step_guard.hpp"

namespace gputrain::train {

StepGuard::StepGuard(Backend& backend)
    : backend_(backend),
      block_(backend, Backend::kGuardWords * sizeof(int32_t)),
      words_(block_.as<int32_t>()) {}

StepGuard::~StepGuard() = default;

void StepGuard::reset() {
    const int32_t zeros[Backend::kGuardWords] = {};
    backend_.copy_to_device(words_, zeros, sizeof zeros);
}

void StepGuard::check(const float* grads, size_t n, std::optional<bool> known) {
    if (known)
        backend_.record_finite(words_, *known);
    else
        backend_.check_finite(grads, n, words_);
}

const int32_t* StepGuard::skip_flag(bool sticky) const { return sticky ? words_ + 1 : words_; }

StepGuard::Tally StepGuard::read() {
    int32_t w[Backend::kGuardWords];
    backend_.copy_to_host(w, words_, sizeof w);
    return Tally{w[0] != 0, w[1], w[2], w[3] - 1};
}

}  // namespace gputrain::train

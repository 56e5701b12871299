#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint/safetensors.hpp"
#include "core/error.hpp"
#include "scratch.hpp"

using namespace gputrain;
using namespace gputrain::checkpoint;
using namespace gputrain::checkpoint::testing;

namespace {

using Names = std::vector<std::string>;

std::string save_error(const std::string& path, const std::vector<TensorRef>& tensors,
                       const std::map<std::string, std::string>& metadata = {}) {
    try {
        save(path, tensors, metadata);
    } catch (const Error& e) {
        return e.what();
    }
    FAIL("save did not throw for " << path);
    return {};
}

const std::vector<float> kOld{1.0f, 2.0f, 3.0f};

// A folder holding a complete checkpoint "model.safetensors" with kOld.
std::string save_old(const ScratchDir& dir) {
    const std::string path = dir.file("model.safetensors");
    save(path, {{"w", {3}, kOld.data()}}, {{"epoch", "1"}});
    return path;
}

void require_old_intact(const std::string& path) {
    const Contents c = load(path);
    REQUIRE(c.find("w")->data == kOld);
    REQUIRE(c.metadata.at("epoch") == "1");
}

}  // namespace

TEST_CASE("saving over an existing checkpoint replaces it and leaves no temp file") {
    ScratchDir dir;
    const std::string path = save_old(dir);
    const std::vector<float> next{9.0f, 8.0f};
    save(path, {{"v", {1, 2}, next.data()}}, {{"epoch", "2"}});
    REQUIRE(dir.names() == Names{"model.safetensors"});
    const Contents c = load(path);
    REQUIRE(c.tensors.size() == 1);
    REQUIRE(c.find("v")->data == next);
    REQUIRE(c.metadata.at("epoch") == "2");
}

TEST_CASE("saving into a folder that does not exist throws naming the path") {
    ScratchDir dir;
    const std::string missing = dir.file("no/such/model.safetensors");
    REQUIRE(save_error(missing, {{"w", {3}, kOld.data()}}) ==
            "cannot write checkpoint '" + missing + "': No such file or directory");
    write_bytes(dir.file("plain"), "x");
    const std::string under_file = dir.file("plain/model.safetensors");
    REQUIRE(save_error(under_file, {{"w", {3}, kOld.data()}}) ==
            "cannot write checkpoint '" + under_file + "': Not a directory");
    REQUIRE(dir.names() == Names{"plain"});
}

TEST_CASE("saving into a read-only folder throws and keeps the old file") {
    ScratchDir dir;
    const std::string path = save_old(dir);
    REQUIRE(::chmod(dir.path().c_str(), 0555) == 0);
    const std::string probe = dir.file("probe");
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT, 0644);
    if (fd >= 0) {
        // root (or CAP_DAC_OVERRIDE) ignores folder permissions; the write-failure
        // test below covers the same clean-up path.
        ::close(fd);
        ::unlink(probe.c_str());
        WARN("folder permissions do not stop this user; read-only folder case skipped");
        return;
    }
    REQUIRE(save_error(path, {{"w", {1}, kOld.data()}}) == "cannot write checkpoint '" + path + "': Permission denied");
    REQUIRE(::chmod(dir.path().c_str(), 0755) == 0);
    REQUIRE(dir.names() == Names{"model.safetensors"});
    require_old_intact(path);
}

TEST_CASE("a write that fails midway removes the temp file and keeps the old file") {
    ScratchDir dir;
    const std::string path = save_old(dir);
    const std::vector<float> big(1 << 16, 0.5f);

    // A file-size limit makes write() fail with EFBIG part way through the data.
    rlimit saved{};
    REQUIRE(::getrlimit(RLIMIT_FSIZE, &saved) == 0);
    const auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
    rlimit limited = saved;
    limited.rlim_cur = 4096;
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &limited) == 0);
    std::string message;
    try {
        save(path, {{"w", {1 << 16}, big.data()}}, {});
    } catch (const Error& e) {
        message = e.what();
    }
    ::setrlimit(RLIMIT_FSIZE, &saved);
    ::signal(SIGXFSZ, old_handler);

    REQUIRE(message == "cannot write checkpoint '" + path + "': File too large");
    REQUIRE(dir.names() == Names{"model.safetensors"});
    require_old_intact(path);
}

TEST_CASE("a failed rename removes the temp file") {
    ScratchDir dir;
    const std::string path = dir.file("model.safetensors");
    std::filesystem::create_directory(path);
    write_bytes(dir.file("model.safetensors/inside"), "x");
    REQUIRE(save_error(path, {{"w", {3}, kOld.data()}}) == "cannot write checkpoint '" + path + "': Is a directory");
    REQUIRE(dir.names() == Names{"model.safetensors"});
    REQUIRE(read_bytes(dir.file("model.safetensors/inside")) == "x");
}

TEST_CASE("save rejects what no reader could load, before writing anything") {
    ScratchDir dir;
    const std::string path = dir.file("model.safetensors");
    const std::string prefix = "cannot write checkpoint '" + path + "': ";
    const float* data = kOld.data();
    REQUIRE(save_error(path, {{"w", {-3}, data}}) == prefix + "tensor 'w' has a negative dimension -3");
    REQUIRE(save_error(path, {{"w", {3}, nullptr}}) == prefix + "tensor 'w' has no data");
    REQUIRE(save_error(path, {{"w", {1}, data}, {"w", {1}, data}}) == prefix + "tensor 'w' appears twice");
    REQUIRE(save_error(path, {{"", {1}, data}}) == prefix + "a tensor has an empty name");
    REQUIRE(save_error(path, {{"__metadata__", {1}, data}}) ==
            prefix + "'__metadata__' is reserved and cannot name a tensor");
    REQUIRE(save_error(path, {{"w", {int64_t{1} << 62, 4}, data}}) == prefix + "tensor 'w' is too large to address");
    REQUIRE(save_error(path, {{"w\xFF", {1}, data}}) == prefix + "a tensor name is not valid UTF-8");
    REQUIRE(save_error(path, {}, {{"k\xC3", "v"}}) == prefix + "a metadata key is not valid UTF-8");
    REQUIRE(save_error(path, {}, {{"k", "\xC3"}}) == prefix + "metadata value for 'k' is not valid UTF-8");
    REQUIRE(dir.names().empty());
}

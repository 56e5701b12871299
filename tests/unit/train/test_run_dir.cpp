// train/run_dir: what a fit finds of an earlier run and what --overwrite
// deletes of it, the config.previous-N.yaml a resume keeps, and a run dir a
// failed fit removes again; on real files in a temporary folder.
// (tests/cli/test_resume.sh and test_crash_safety.sh run the same through the binary.)
#include <fstream>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "train/run_dir.hpp"
#include "train_fixture.hpp"

using namespace gputrain;
namespace fs = std::filesystem;

namespace {

void write_file(const fs::path& path, const std::string& text = "x") {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
}

std::string read_file(const fs::path& path) {
    std::ifstream in(path);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Every file and folder under `root`, relative to it ("a/b"); folders end in '/'.
std::set<std::string> tree(const fs::path& root) {
    std::set<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(root))
        out.insert(fs::relative(e.path(), root).generic_string() + (e.is_directory() ? "/" : ""));
    return out;
}

std::set<std::string> relative_to(const fs::path& root, const std::vector<std::string>& paths) {
    std::set<std::string> out;
    for (const auto& p : paths) out.insert(fs::relative(p, root).generic_string());
    return out;
}

config::RunConfig run_in(const fs::path& run_dir, const fs::path& checkpoint_dir) {
    config::RunConfig cfg;
    cfg.run_dir = run_dir.string();
    cfg.checkpoint.dir = checkpoint_dir.string();
    cfg.source_file = "job.yaml";
    return cfg;
}

std::string resolved(const fs::path& run_dir, double learning_rate, int epochs) {
    std::ostringstream s;
    s << "run_dir: " << run_dir.string() << "\noptimizer: {type: adam, learning_rate: " << learning_rate
      << "}\ntraining: {epochs: " << epochs << ", batch_size: 8}\n";
    return s.str();
}

}  // namespace

TEST_CASE("run dir: a fresh run finds the earlier run's checkpoints, events and kept configs; --overwrite deletes those only") {
    fixture::TempDir t;
    const fs::path run = t.path / "run", ckpt = t.path / "ckpt";  // checkpoint.dir apart from the run dir
    const auto cfg = run_in(run, ckpt);
    // The earlier run's files.
    for (const char* f : {"ckpt/epoch-001.safetensors", "ckpt/epoch-002.safetensors", "ckpt/last.safetensors",
                          "ckpt/best.safetensors", "ckpt/tensorboard/events.out.tfevents.1.host",
                          "ckpt/tensorboard/steps/events.out.tfevents.2.host", "run/config.previous-1.yaml",
                          "run/config.previous-3.yaml"})
        write_file(t.path / f);
    // Files that are not a run's checkpoints, events or kept configs: left alone.
    const std::set<std::string> others = {
        "ckpt/", "ckpt/metrics.csv", "ckpt/notes.txt", "ckpt/other.safetensors", "ckpt/epoch-x.safetensors",
        "ckpt/last.safetensors.tmp-123", "ckpt/config.previous-1.yaml",  // a kept config belongs to the run dir
        "ckpt/tensorboard/", "ckpt/tensorboard/readme.txt", "ckpt/tensorboard/steps/",
        "ckpt/tensorboard/steps/events.out.tfevents.d/",  // a folder, not an events file
        "run/", "run/config.yaml", "run/config.previous-2.yml", "run/.gputrain.lock"};
    for (const auto& f : others)
        if (f.back() == '/') fs::create_directories(t.path / f);
        else write_file(t.path / f);

    const train::EarlierRun earlier = train::find_earlier_run(cfg);
    REQUIRE_FALSE(earlier.empty());
    // In name order: what the refusal names.
    REQUIRE(earlier.checkpoints == std::vector<std::string>{(ckpt / "best.safetensors").string(),
                                                            (ckpt / "epoch-001.safetensors").string(),
                                                            (ckpt / "epoch-002.safetensors").string(),
                                                            (ckpt / "last.safetensors").string()});
    REQUIRE(relative_to(t.path, earlier.logs) ==
            std::set<std::string>{"ckpt/tensorboard/events.out.tfevents.1.host",
                                  "ckpt/tensorboard/steps/events.out.tfevents.2.host", "run/config.previous-1.yaml",
                                  "run/config.previous-3.yaml"});

    REQUIRE_THROWS_MATCHES(train::refuse_earlier_run(earlier, cfg), ConfigError,
                           Catch::Message("'" + ckpt.string() +
                                          "' holds the checkpoints of an earlier run (best.safetensors, "
                                          "epoch-001.safetensors, epoch-002.safetensors and 1 more); continue that "
                                          "run with --resume, start afresh there with --overwrite (deletes them), or "
                                          "give another --run-dir"));
    // Refusing deletes nothing.
    REQUIRE(tree(t.path).size() == others.size() + 8);

    train::clear_earlier_run(earlier, cfg);
    REQUIRE(tree(t.path) == others);
}

TEST_CASE("run dir: without checkpoints nothing is an earlier run, and nothing is refused or deleted") {
    fixture::TempDir t;
    const auto cfg = run_in(t.path, t.path);
    for (const char* f : {"tensorboard/events.out.tfevents.1.host", "config.previous-1.yaml", "metrics.csv",
                          "config.yaml"})
        write_file(t.path / f);
    const auto before = tree(t.path);
    const train::EarlierRun earlier = train::find_earlier_run(cfg);
    REQUIRE(earlier.empty());
    REQUIRE(earlier.logs.empty());
    REQUIRE_NOTHROW(train::refuse_earlier_run(earlier, cfg));
    train::clear_earlier_run(earlier, cfg);
    REQUIRE(tree(t.path) == before);
    // A checkpoint folder that does not exist: no earlier run either.
    REQUIRE(train::find_earlier_run(run_in(t.path / "none", t.path / "none")).empty());
}

TEST_CASE("run dir: --overwrite stops when a checkpoint cannot be deleted") {
    fixture::TempDir t;
    const auto cfg = run_in(t.path, t.path);
    write_file(t.path / "epoch-001.safetensors");
    write_file(t.path / "last.safetensors" / "inside");  // a folder that is not empty
    const train::EarlierRun earlier = train::find_earlier_run(cfg);
    REQUIRE(earlier.checkpoints.size() == 2);
    REQUIRE_THROWS_WITH(train::clear_earlier_run(earlier, cfg),
                        Catch::StartsWith("--overwrite: cannot delete '" + (t.path / "last.safetensors").string() + "': "));
}

TEST_CASE("run dir: config.previous-N takes the first N not taken") {
    fixture::TempDir t;
    REQUIRE(train::free_previous_config(t.path) == t.path / "config.previous-1.yaml");
    write_file(t.path / "config.previous-1.yaml");
    write_file(t.path / "config.previous-3.yaml");
    REQUIRE(train::free_previous_config(t.path) == t.path / "config.previous-2.yaml");
    write_file(t.path / "config.previous-2.yaml");
    REQUIRE(train::free_previous_config(t.path) == t.path / "config.previous-4.yaml");
}

TEST_CASE("run dir: a resume with another config keeps the earlier config.yaml as config.previous-N.yaml") {
    fixture::TempDir t;
    auto cfg = run_in(t.path, t.path);
    const fs::path config_yaml = t.path / "config.yaml";
    const std::string header = "# Resolved by gputrain from job.yaml (defaults filled in)\n";

    // A fresh run writes config.yaml and keeps nothing.
    cfg.resolved_yaml = resolved(t.path, 0.01, 1);
    REQUIRE_FALSE(train::write_resolved_config(cfg, /*resuming=*/false));
    REQUIRE(read_file(config_yaml) == header + cfg.resolved_yaml + "\n");
    const std::string first = read_file(config_yaml);

    // A resume with more epochs only, or the run dir spelled another way: the same run, nothing kept.
    cfg.resolved_yaml = resolved(t.path / ".", 0.01, 5);
    REQUIRE_FALSE(train::write_resolved_config(cfg, true));
    REQUIRE(tree(t.path) == std::set<std::string>{"config.yaml"});
    REQUIRE(read_file(config_yaml) == header + cfg.resolved_yaml + "\n");

    // Another learning rate: the earlier file kept as it was, under the first free N.
    write_file(t.path / "config.previous-1.yaml", "older");
    const std::string second = read_file(config_yaml);
    cfg.resolved_yaml = resolved(t.path, 0.1, 5);
    REQUIRE(train::write_resolved_config(cfg, true));
    REQUIRE(read_file(t.path / "config.previous-1.yaml") == "older");
    REQUIRE(read_file(t.path / "config.previous-2.yaml") == second);
    REQUIRE(read_file(config_yaml) == header + cfg.resolved_yaml + "\n");
    REQUIRE(first != second);

    // A config.yaml that is not a readable config: kept too.
    write_file(config_yaml, "[unclosed");
    REQUIRE(train::write_resolved_config(cfg, true));
    REQUIRE(read_file(t.path / "config.previous-3.yaml") == "[unclosed");

    // A fresh run (--overwrite) with another config replaces config.yaml without keeping it.
    cfg.resolved_yaml = resolved(t.path, 0.5, 5);
    REQUIRE_FALSE(train::write_resolved_config(cfg, false));
    REQUIRE(tree(t.path) == std::set<std::string>{"config.yaml", "config.previous-1.yaml", "config.previous-2.yaml",
                                                  "config.previous-3.yaml"});

    // No config.yaml to compare with (a resume into another folder): nothing kept.
    fs::remove(config_yaml);
    REQUIRE_FALSE(train::keep_previous_config(config_yaml, cfg));
    REQUIRE(tree(t.path).count("config.previous-4.yaml") == 0);
}

TEST_CASE("run dir: a run dir a failed fit created is removed again, with its lock file; one it writes into stays") {
    fixture::TempDir t;
    const fs::path made = t.path / "a" / "run";
    {
        train::NewRunDir dir(".gputrain.lock");
        dir.create(made.string());
        REQUIRE(fs::is_directory(made));
        write_file(made / ".gputrain.lock", "");
    }
    CHECK_FALSE(fs::exists(made));
    CHECK(fs::exists(t.path / "a"));  // only the run dir itself, not the parents it made
    {
        train::NewRunDir dir(".gputrain.lock");
        dir.create(made.string());
        write_file(made / ".gputrain.lock", "");
        dir.keep();
    }
    CHECK(fs::exists(made / ".gputrain.lock"));
    {
        // A folder that existed before the fit is never removed.
        train::NewRunDir dir(".gputrain.lock");
        dir.create(made.string());
    }
    CHECK(fs::exists(made / ".gputrain.lock"));
    const fs::path other = t.path / "b";
    {
        // Anything else in it (never there in a fit that failed before writing): it stays.
        train::NewRunDir dir(".gputrain.lock");
        dir.create(other.string());
        write_file(other / ".gputrain.lock", "");
        write_file(other / "keep.txt");
    }
    CHECK(tree(other) == std::set<std::string>{"keep.txt"});
    // A run dir that cannot be created: the error names it.
    write_file(t.path / "file");
    train::NewRunDir dir(".gputrain.lock");
    REQUIRE_THROWS_WITH(dir.create((t.path / "file" / "run").string()),
                        Catch::StartsWith("cannot create run dir '" + (t.path / "file" / "run").string() + "': "));
}

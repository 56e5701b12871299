// gputrain generate CONFIG --checkpoint PATH --prompt TEXT --tokens N
//   [--temperature T] [--top-k K] [--top-p P] [--seed S]: text sampled from a sequence
// model trained on format: text, one token at a time, streamed to stdout.
//
// The model is built a second time on ONE position per sample
// (model.input_shape [1], its positional embeddings and attention layers
// told the trained block size as `length`): each call runs the newest token
// at its absolute position (RunContext::position) and the attention layers
// keep every earlier position's keys and values in their cache, so the prefix
// is never computed again. When the sequence reaches the block size, the
// cache is refilled from the last half block (the model has no positions past
// its block). (nanoGPT instead runs the last full block again for every token.)
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <memory>
#include <limits>
#include <random>

#include "cli/commands.hpp"
#include "cli/flag_checks.hpp"
#include "cli/run_setup.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"
#include "core/utf8.hpp"
#include "data/sentencepiece_text.hpp"
#include "data/text_reader.hpp"
#include "device/devices.hpp"
#include "nn/sampling.hpp"
#include "train/checkpointer.hpp"
#include "train/strategy.hpp"

namespace gputrain::cli {

namespace {

// The most tokens one call may ask for.
constexpr int64_t kMaxTokens = 100'000'000;

struct GenerateArgs {
    CommonOptions common;
    std::string checkpoint;
    std::string prompt = "\n";
    int64_t tokens = 500;
    double temperature = 1.0;
    int64_t top_k = 0;
    double top_p = 1.0;
    int64_t seed = -1;  // -1: a fresh seed, printed to stderr
};

// The layers that need the block size once the model is built on one position.
bool needs_length(const std::string& type) { return type == "positional_embedding" || type == "causal_self_attention"; }

struct Vocabulary {
    bool bytes = false;
    std::u32string chars;  // chars: the character of each id
    std::unique_ptr<data::SentencePieceText> pieces;  // sentencepiece
    int64_t size() const {
        return bytes ? 256 : pieces ? pieces->vocab_size() : static_cast<int64_t>(chars.size());
    }
};

std::vector<float> encode(const std::string& prompt, const Vocabulary& vocab) {
    std::vector<float> ids;
    if (vocab.pieces) {
        for (uint32_t id : vocab.pieces->encode(prompt)) ids.push_back(static_cast<float>(id));
        return ids;
    }
    if (vocab.bytes) {
        for (char c : prompt) ids.push_back(static_cast<float>(static_cast<unsigned char>(c)));
        return ids;
    }
    const std::u32string points = data::vocabulary_from_utf8(prompt);
    if (points.empty() && !prompt.empty()) throw ConfigError("--prompt: is not UTF-8 text");
    size_t offset = 0;
    for (char32_t c : points) {
        const auto it = std::find(vocab.chars.begin(), vocab.chars.end(), c);
        if (it == vocab.chars.end()) {
            std::string shown;
            append_utf8(shown, static_cast<uint32_t>(c));
            throw ConfigError(fmt::format("--prompt: the character '{}' (U+{:04X}) at character {} is not in the "
                                          "model's vocabulary of {} characters; leave it out",
                                          c < 0x20 ? std::string("?") : shown, static_cast<uint32_t>(c), offset,
                                          vocab.chars.size()));
        }
        ids.push_back(static_cast<float>(it - vocab.chars.begin()));
        ++offset;
    }
    return ids;
}

std::string decode(int64_t id, const Vocabulary& vocab) {
    if (vocab.bytes) return std::string(1, static_cast<char>(id));
    if (vocab.pieces) return vocab.pieces->piece_text(id);
    std::string out;
    append_utf8(out, static_cast<uint32_t>(vocab.chars[static_cast<size_t>(id)]));
    return out;
}

int run_generate(GenerateArgs& args) {
    require_checkpoint_file("--checkpoint", args.checkpoint);
    config::RunConfig cfg = load_config(args.common, args.checkpoint);
    apply_log_level(cfg, /*quiet=*/true);  // stdout carries the text
    if (cfg.data.format != config::DataFormat::text)
        throw ConfigError(cfg.source_file + ": data.format is " + std::string(config::name_of(cfg.data.format)) +
                          "; generate samples from models trained on format: text");
    if (args.tokens <= 0 || args.tokens > kMaxTokens)
        throw ConfigError(fmt::format("--tokens: expected 1 to {}, got {}", kMaxTokens, args.tokens));
    if (!(args.temperature > 0) || !std::isfinite(args.temperature))
        throw ConfigError(fmt::format("--temperature: expected a finite number above 0, got {}", args.temperature));
    if (args.top_k < 0) throw ConfigError(fmt::format("--top-k: expected 0 (all) or more, got {}", args.top_k));
    if (!(args.top_p > 0 && args.top_p <= 1))
        throw ConfigError(fmt::format("--top-p: expected a number above 0 and at most 1 (1: all), got {}", args.top_p));
    const int64_t block = cfg.model.input_shape.at(0);

    // The same layers on one position, each attention layer with a cache of the block.
    config::RunConfig one = cfg;
    one.model.input_shape = {1};
    for (config::LayerSpec& layer : one.model.layers)
        if (needs_length(layer.type) && (!layer.params.count("length") || layer.params["length"] == "0"))
            layer.params["length"] = std::to_string(block);
    const device::Discovery found = device::discover();
    const train::Strategy strategy(one, found, {args.common.device, 1});
    auto replicas = strategy.make_replicas(one, 1, args.checkpoint, train::ReplicaUse::inference);
    const train::TrainingState trained = train::restore(args.checkpoint, replicas, one, /*with_optimizer=*/false);

    Vocabulary vocab;
    const auto tokenizer = trained.metadata.find("tokenizer");
    const auto characters = trained.metadata.find("vocabulary");
    if (tokenizer == trained.metadata.end())
        throw DataError(args.checkpoint + ": no tokenizer in its metadata (written by a fit on format: text); "
                                          "give a checkpoint of a text model");
    vocab.bytes = tokenizer->second == "bytes";
    if (tokenizer->second == "sentencepiece") {
        std::string model;
        if (characters == trained.metadata.end() || !data::base64_decode(characters->second, model))
            throw DataError(args.checkpoint + ": its metadata 'vocabulary' (the SentencePiece model) is missing or not "
                                              "base64");
        vocab.pieces = std::make_unique<data::SentencePieceText>(model, args.checkpoint + " (its SentencePiece model)");
    } else if (!vocab.bytes) {
        vocab.chars = data::vocabulary_from_utf8(characters == trained.metadata.end() ? "" : characters->second);
        if (vocab.chars.empty())
            throw DataError(args.checkpoint + ": its metadata 'vocabulary' is missing or not UTF-8");
    }
    warn_if_trained_differently(args.checkpoint, trained.config_yaml, cfg);
    train::Replica& r = *replicas[0];
    nn::Model& model = r.model();
    // A model wider than its vocabulary never samples the ids past it.
    if (model.classes() < vocab.size())
        throw DataError(fmt::format("{}: the model has {} outputs, fewer than its vocabulary of {} tokens",
                                    args.checkpoint, model.classes(), vocab.size()));
    std::vector<float> context = encode(args.prompt, vocab);
    if (context.empty()) throw ConfigError("--prompt: is empty; give at least one character, e.g. --prompt $'\\n'");

    const uint64_t seed = args.seed >= 0 ? static_cast<uint64_t>(args.seed) : std::random_device{}();
    if (args.seed < 0) std::fprintf(stderr, "gputrain: generate: --seed %llu\n", static_cast<unsigned long long>(seed));
    Rng rng(seed);
    const bool logits_out = model.loss().is_cross_entropy() && model.loss().from_logits();
    Backend& backend = r.backend();
    std::vector<float> scores(static_cast<size_t>(model.classes())), out(static_cast<size_t>(vocab.size()));
    // Runs `id` at `position`; `out` holds the model's scores of the next token.
    const auto run = [&](float id, int64_t position) {
        backend.copy_to_device(r.inputs(), &id, sizeof id);
        nn::RunContext ctx{backend, false, 0, 0, 0, 0};
        ctx.position = position;
        model.predict(ctx, r.inputs(), 1);
        backend.copy_to_host(scores.data(), model.outputs(), scores.size() * sizeof(float));
        std::copy_n(scores.begin(), out.size(), out.begin());
        if (!logits_out)  // probabilities: their logs are logits
            for (float& v : out) v = std::log(std::max(v, 1e-30f));
    };
    // Fills the cache with the last tokens of the context (at most the block's).
    const auto prefill = [&](int64_t keep) {
        const int64_t first = static_cast<int64_t>(context.size()) - keep;
        for (int64_t p = 0; p < keep; ++p) run(context[static_cast<size_t>(first + p)], p);
        return keep;
    };
    std::fputs(args.prompt.c_str(), stdout);
    std::fflush(stdout);
    // An error after text has streamed ends its line first, so the message starts on a line of its own.
    struct EndLineOnError {
        ~EndLineOnError() {
            if (std::uncaught_exceptions() > 0) {
                std::fputc('\n', stdout);
                std::fflush(stdout);
            }
        }
    } end_line;
    int64_t position = prefill(std::min<int64_t>(block, static_cast<int64_t>(context.size())));
    for (int64_t i = 0; i < args.tokens; ++i) {
        const int64_t id = nn::sample_token(out, {args.temperature, args.top_k, args.top_p}, rng);
        if (id >= vocab.size()) throw Error(fmt::format("the model chose token {}, past its vocabulary", id));
        const std::string text = decode(id, vocab);
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::fflush(stdout);
        context.push_back(static_cast<float>(id));
        if (i + 1 == args.tokens) break;
        if (position == block) position = prefill(std::max<int64_t>(1, block / 2));  // the block is full
        else run(context.back(), position++);
    }
    std::fputc('\n', stdout);
    if (std::fflush(stdout) != 0 || std::ferror(stdout))
        throw Error("cannot write the text to standard output");
    return 0;
}

}  // namespace

Action add_generate_command(CLI::App& app) {
    auto args = std::make_shared<GenerateArgs>();
    CLI::App* cmd = app.add_subcommand(
        "generate", "Text sampled from a checkpoint of a model trained on format: text, streamed to stdout");
    cmd->add_option("config", args->common.config_path,
                    "YAML config file the model was trained with (default: the config stored in --checkpoint)");
    cmd->add_option("--checkpoint", args->checkpoint, "Checkpoint file (.safetensors) whose weights are used")
        ->check(non_empty_path())
        ->required();
    cmd->add_option("--prompt", args->prompt, "Text the sample continues (printed first); default: a newline");
    cmd->add_option("--tokens", args->tokens, "Tokens to generate (default 500)");
    cmd->add_option("--temperature", args->temperature,
                    "Divides the logits before sampling: below 1 more likely tokens, above 1 more varied (default 1)");
    cmd->add_option("--top-k", args->top_k, "Sample from the K most likely tokens only (default 0: all)");
    cmd->add_option("--top-p", args->top_p,
                    "Nucleus sampling: from the fewest most likely tokens whose probabilities add up to P, after "
                    "--temperature and --top-k (default 1: all)");
    cmd->add_option("--seed", args->seed, "Seed of the sampling: the same seed, checkpoint and prompt give the same "
                                          "text (default: a fresh one, printed to stderr)")
        ->check(CLI::Range(int64_t{0}, std::numeric_limits<int64_t>::max()));
    cmd->add_option("--set", args->common.overrides, "Override a config key")->allow_extra_args(false);
    cmd->add_option("--device", args->common.device, "auto, cpu or gpu")->check(CLI::IsMember({"auto", "cpu", "gpu"}));
    return [args] { return run_generate(*args); };
}

}  // namespace gputrain::cli

// RunConfig: the whole YAML config as plain, validated structs. Read once by
// config::load; nothing after that reads YAML. Defaults below are the ones a
// config gets for a key it leaves out (Keras defaults where Keras has one).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/enums.hpp"
#include "core/shape.hpp"

namespace gputrain::config {

// One layer of `model.layers`. `type` is the registry name (dense, flatten,
// relu, ...); `params` holds every other key of the layer's mapping as its
// scalar text (e.g. {"units": "128", "activation": "relu"}); nn/ validates
// them against the layer kind and reports errors via `where`.
// One tensor a layer reads: a layer's name, or `input` (the model's input).
struct LayerInput {
    static constexpr int kByName = -2;
    std::string name;       // as written (after block parameters are put in)
    int layer = kByName;    // set by block expansion: the layer meant, by index (-1: the model's input)
};

struct LayerSpec {
    std::string type;
    std::string name;                           // "" = auto ("dense", "dense_1", ...)
    std::map<std::string, std::string> params;  // key -> scalar text
    std::map<std::string, std::string> where;   // key -> "file:line:col" ("" key = the layer itself)
    // `inputs:`: the tensors the layer reads; empty = the layer before it (the
    // model's input for the first layer).
    std::vector<LayerInput> inputs;
    // Layers of a block instance are named by the block (`stage2/block1/conv2d`).
    bool scoped = false;
    // Where it is written, as --set spells it: "model.layers[4]", or for a
    // block's layer "blocks.NAME.layers[1]"; "" when built in code.
    std::string path;
    // Filled by nn::resolve_layers once the layer has been built: its name
    // (auto names included) and every parameter it took, defaults included,
    // in one spelling; the resolved YAML writes these when present.
    std::string resolved_name;
    std::vector<std::pair<std::string, std::string>> resolved_params;
    // The resolved names of its inputs; empty when they are the default.
    std::vector<std::string> resolved_inputs;
};

struct ModelConfig {
    Shape input_shape;               // model.input_shape, e.g. [28, 28]
    std::vector<LayerSpec> layers;   // model.layers, with every `block:` instance expanded into its layers
    std::string layers_place;        // where model.layers is ("cfg.yaml:5:3", "--set ..."); "" when built in code
    // model.init_from: a new run's weights from a safetensors file (train/init_from.hpp); "" = the initializers.
    std::string init_from;
    // model.init_map: the file's tensor name -> the model's, in the order written.
    std::vector<std::pair<std::string, std::string>> init_map;
    // model.init_skip: tensors, layers or block scopes left at their initializers.
    std::vector<std::string> init_skip;
    std::string init_from_place, init_map_place, init_skip_place;  // where each key is ("" when absent)
};

struct LossConfig {
    // | categorical_crossentropy | mean_squared_error | mean_absolute_error | huber
    LossKind name = LossKind::sparse_categorical_crossentropy;
    bool from_logits = false;                               // loss.from_logits
    double delta = 1.0;                                     // loss.delta: huber's switch from squared to linear
    double label_smoothing = 0.0;                           // loss.label_smoothing: [0, 1), crossentropies
};

struct ScheduleConfig {
    ScheduleType type = ScheduleType::constant;  // constant | step_decay | exponential_decay | cosine | linear | one_cycle
    double decay_rate = 0.1;         // step_decay: lr *= decay_rate every decay_epochs; exponential: lr * rate^(step/decay_steps)
    int64_t decay_epochs = 10;       // step_decay
    int64_t decay_steps = 1000;      // exponential_decay (optimizer steps)
    bool staircase = false;          // exponential_decay: integer division of step/decay_steps
    double min_lr = 0.0;             // cosine: floor reached at the end of training
    int64_t warmup_epochs = 0;       // linear warmup from 0 over this many epochs (whole epochs), then the schedule
    int64_t warmup_steps = 0;        // or over this many optimizer steps (not both)
    bool min_lr_given = false;       // min_lr written (one_cycle's floor is max_lr / div_factor / final_div_factor otherwise)
    // one_cycle (PyTorch's OneCycleLR): up from max_lr / div_factor to max_lr
    // (0: optimizer.learning_rate) over pct_start of the steps, then down to
    // min_lr (or max_lr / div_factor / final_div_factor), cosine both ways.
    double max_lr = 0.0;
    double pct_start = 0.3;
    double div_factor = 25.0;
    double final_div_factor = 1e4;
    // one_cycle's cycle_momentum (PyTorch's; off by default here): the
    // momentum (Adam's beta1, SGD's momentum) falls from max_momentum to
    // base_momentum while the rate rises, and climbs back while it anneals.
    bool cycle_momentum = false;
    double base_momentum = 0.85;
    double max_momentum = 0.95;
};

struct OptimizerConfig {
    OptimizerType type = OptimizerType::adam;  // sgd | adam | adamw | rmsprop
    double learning_rate = 1e-3;     // sgd default 0.01
    double momentum = 0.0;           // sgd, rmsprop
    bool nesterov = false;           // sgd
    double beta1 = 0.9;              // adam/adamw
    double beta2 = 0.999;            // adam/adamw
    double epsilon = 1e-7;           // adam/adamw/rmsprop
    double rho = 0.9;                // rmsprop: decay of the mean square
    bool centered = false;           // rmsprop: divide by the variance estimate, not the mean square
    double weight_decay = 0.0;       // adamw default 0.004 (Keras); sgd/adam: L2-free, must be 0 unless set
    // optimizer.no_decay (adamw): parameters that take no weight decay, by
    // kind: bias, norm (layer/rms/batch norm's gamma and beta), embedding.
    std::vector<std::string> no_decay;
    ScheduleConfig schedule;         // optimizer.schedule
};

// One step of data.augment (training batches only), applied in list order.
struct AugmentConfig {
    AugmentType type = AugmentType::random_flip;
    int64_t padding = 0;              // random_crop: pixels added on each side before cropping back
    FillMode mode = FillMode::zero;   // random_crop, random_translate: past the edge, zero or a mirror image
    FlipMode flip = FlipMode::horizontal;  // random_flip
    double height_factor = 0.0;       // random_translate: the most rows moved, a fraction of the height
    double width_factor = 0.0;        // ... columns, of the width
    int64_t size = 0;                 // cutout: the square's side in pixels
    int64_t count = 1;                // cutout: squares per image
    double degrees = 0.0;             // random_rotation: the most degrees either way
    std::string place;                // where it was written, for errors found against the data
};

struct DataConfig {
    std::string dataset;             // data.dataset: NAME resolved via $GPUTRAIN_DATA, ./datasets/NAME, /usr/share/datasets/NAME
    std::string path;                // data.path: DIR (exactly one of dataset/path; or dataset: synthetic)
    DataFormat format = DataFormat::idx;  // idx | csv | synthetic | cifar10 | cifar100 | image_folder | npy
    double scale = 1.0 / 255.0;      // data.scale: inputs multiplied by this
    // data.scale: auto (the default of format npy): 1/255 for byte (uint8)
    // samples, 1 for float ones, decided when the data are read (scale_for).
    bool scale_auto = false;
    // data.target_columns (CSV): the columns of real-valued targets (0-based
    // indices, -1 the last, or header names); the other columns are the
    // features. Empty: a class label in the first column.
    std::vector<std::string> target_columns;
    // Not a key: set from loss.name when the config is read. A float labels
    // array (NPY/NPZ) holds real-valued targets, except under a crossentropy
    // loss, which reads its whole numbers as class indices.
    bool float_labels_are_targets = false;
    double scale_for(bool bytes) const { return scale_auto ? (bytes ? 1.0 / 255.0 : 1.0) : scale; }
    // data.normalize: {mean: [...], std: [...]}, per channel (or one value for
    // all), applied after scale: (x * scale - mean) / std. Empty: none.
    std::vector<double> normalize_mean;
    std::vector<double> normalize_std;
    std::vector<AugmentConfig> augment;  // data.augment
    // format: text: how the text becomes token ids: bytes (the UTF-8 bytes,
    // 256 ids) or chars (the text's distinct characters, sorted by code point).
    Tokenizer tokenizer = Tokenizer::chars;
    // tokenizer: sentencepiece: a .model file to load (data.tokenizer_model),
    // or the pieces of one trained from the training text (data.vocab_size).
    std::string tokenizer_model;
    int64_t vocab_size = 0;
    // format: text: ids from one training window to the next
    // (data.sequence_stride, Keras' name); 0: the window's length, T.
    int64_t sequence_stride = 0;
    // format: image_folder only
    bool crop_to_aspect_ratio = false;  // data.crop_to_aspect_ratio: resize the largest centered crop of the input's aspect
    bool skip_bad_files = false;        // data.skip_bad_files: skip (and count) files that are not readable images
    std::string cache_dir;              // data.cache_dir: where decoded images are cached ("" = default_cache_dir())
    // data.stream: the training and test samples stay on disk and each batch's
    // rows are read when the loader gathers them (IDX, NPY uint8, image folders' caches)
    bool stream = false;
    // data.stream: auto: stream a split whose samples take more than this
    // fraction of the memory available (data.stream_memory_fraction), where
    // its file can be streamed.
    bool stream_auto = false;
    double stream_memory_fraction = 0.5;
    // data.workers: threads that gather batches ahead (reading streamed rows,
    // copying in-memory ones); not part of the digest: they change no batch.
    int64_t workers = 1;
    double validation_split = 0.0;   // data.validation_split in [0, 1): last fraction of the training set
    int64_t limit = 0;               // data.limit: first N training samples (0 = all)
    int64_t test_limit = 0;          // data.test_limit: first N test samples (0 = all)
    bool shard_files = false;        // data.shard_files: each multi_worker_mirrored worker reads only its part
    // synthetic only (format: synthetic or dataset: synthetic)
    int64_t synthetic_samples = 2048;  // data.synthetic.samples (train); test gets a quarter
    int64_t synthetic_classes = 10;    // data.synthetic.classes
    uint64_t synthetic_seed = 1;       // data.synthetic.seed
    // data.resident: auto | true | false. GPU replicas upload the training set
    // once and gather batches on the device (auto: when it fits in half the
    // free device memory). The CPU holds it in memory anyway: no effect there.
    ResidentMode resident = ResidentMode::automatic;
};

// training.ema: an exponential moving average of the weights (train/step.cpp).
struct EmaConfig {
    bool enabled = false;
    double decay = 0.999;       // the weight the average keeps each step
    int64_t start_epoch = 0;    // before this epoch (from 0) the average copies the weights
    bool evaluate = true;       // validation, best.safetensors, evaluate and predict use the average
};

struct TrainingConfig {
    int64_t epochs = 5;
    int64_t batch_size = 32;         // the GLOBAL batch, split across replicas
    bool shuffle = true;
    uint64_t seed = 42;
    OnNan on_nan = OnNan::stop;      // stop | skip_step: what a non-finite gradient does
    Precision precision = Precision::fp32;  // fp32 | tf32 | bf16 | fp16: what GPU matrix products compute in
    bool cuda_graphs = true;         // GPU: replay each step shape as a recorded CUDA graph where possible
    bool fused_kernels = true;       // a layer's bias + activation (and their gradients) in one pass each
    // bf16/fp16 on a GPU: round each GEMM's inputs to 16 bits in a kernel of
    // their own and multiply them in cuBLAS's native 16-bit GEMM (true), or let
    // cuBLAS round the fp32 inputs inside the GEMM (false, CUBLAS_COMPUTE_32F_FAST_*).
    bool cast_gemm_inputs = true;
    // On a GPU: a dense layer's bias add and relu (forward) and bias gradient
    // (backward, linear layers) in cuBLASLt's GEMM epilogue instead of kernels
    // of their own; where cuBLASLt has no such kernel, the plain path runs.
    bool gemm_epilogues = false;
    // On a GPU: prefer cuDNN algorithms that give the same bits run to run
    // (true) or take the one cuDNN ranks first, which may sum with atomics.
    bool deterministic = true;
    // training.steps_per_epoch: an epoch is the first N batches of the
    // epoch's shuffled order (random windows of a text each epoch, as
    // nanoGPT samples them); 0 = every sample once.
    int64_t steps_per_epoch = 0;
    // training.clip_norm: gradients scaled down so that their global L2 norm
    // (over every parameter, after the all-reduce) is at most this; 0 = off.
    double clip_norm = 0.0;
    // training.accumulate_steps: each optimizer step sums the gradients of
    // this many micro-batches of batch_size, one all-reduce per step.
    int64_t accumulate_steps = 1;
    // The samples of one optimizer step (the loader's global batch).
    int64_t step_batch() const { return batch_size * accumulate_steps; }
    EmaConfig ema;                   // training.ema
};

// Every replica is a thread with its own copy of the model; past this many,
// creating them takes minutes or fails on the system's thread limit.
inline constexpr int64_t kMaxReplicas = 1024;

struct StrategyConfig {
    StrategyType type = StrategyType::mirrored;  // one_device | mirrored | multi_worker_mirrored (processes under mpirun/srun)
    std::string devices = "all";     // "all" | "cpu" | comma-separated GPU ids "0,1"
    int64_t replicas = 0;            // CPU replicas (threads); 0 = auto (a replica per core, 8+ samples each)
    CommunicatorKind communicator = CommunicatorKind::automatic;  // GPU replicas: auto | nccl | device (auto: nccl, or device when replicas share a GPU)
    int64_t replicas_per_gpu = 1;    // GPU replicas placed on each GPU (more than 1 needs the device communicator)
    int64_t timeout_seconds = 300;   // multi_worker_mirrored: a collective without an answer for this long is an error
    // multi_worker_mirrored: a collective waiting this long logs which workers
    // have and have not arrived, and again every as many seconds (0: never).
    double stall_warning_seconds = 60;
    double bucket_mb = 4.0;          // gradient all-reduce in buckets of >= this many MiB, overlapping backward; 0 = one after backward
};

struct CheckpointConfig {
    std::string dir;                 // checkpoint.dir: "" = the run dir
    int64_t every_epochs = 1;        // write epoch-NNN every N epochs (0 = never)
    int64_t keep_last = 3;           // keep the newest N epoch-NNN files (0 = keep all)
    bool save_best = true;
    Monitor monitor = Monitor::val_loss;  // loss | accuracy | val_loss | val_accuracy (val_* fall back to the train metric without validation)
    MonitorMode mode = MonitorMode::automatic;  // min | max | auto (max for accuracy, min for loss)
    // Whether the config (or --set) gave monitor: only then is its fallback
    // without validation data worth a warning (the default falls back quietly).
    bool monitor_given = false;
};

// early_stopping: Keras' EarlyStopping callback. On when the config has the
// section; its rule (Keras'): an epoch improves when its monitored value beats
// the best so far by more than min_delta; training stops after `patience`
// epochs in a row that did not (patience 0: at the first).
struct EarlyStoppingConfig {
    bool enabled = false;
    Monitor monitor = Monitor::val_loss;  // loss | accuracy | val_loss | val_accuracy (val_* fall back like checkpoint.monitor)
    int64_t patience = 0;              // epochs without improvement before training stops
    double min_delta = 0.0;            // an improvement must exceed this
    MonitorMode mode = MonitorMode::automatic;  // min | max | auto (max for accuracy, min for loss)
    int64_t start_from_epoch = 0;      // epochs trained before the first one watched
};

// reduce_lr_on_plateau: Keras' ReduceLROnPlateau callback, on when the config
// has the section. After `patience` epochs in a row whose monitored value did
// not beat the best by more than min_delta, the learning rate is multiplied by
// `factor` (not below min_lr), and `cooldown` epochs follow that count nothing.
// Works on a constant schedule (warmup allowed), as Keras' does.
struct ReduceLrOnPlateauConfig {
    bool enabled = false;
    Monitor monitor = Monitor::val_loss;  // loss | accuracy | val_loss | val_accuracy
    double factor = 0.1;               // in (0, 1)
    int64_t patience = 10;
    double min_delta = 1e-4;
    int64_t cooldown = 0;
    double min_lr = 0.0;
    MonitorMode mode = MonitorMode::automatic;  // min | max | auto
};

struct LoggingConfig {
    LogLevel level = LogLevel::info;  // trace | debug | info | warn | error
    ProgressStyle progress = ProgressStyle::automatic;  // auto (bar on a terminal) | bar | lines | none
    std::string metrics_file = "metrics.csv";  // relative to the run dir; "" = none
    bool tensorboard = false;        // TensorBoard event files in RUN_DIR/tensorboard/
    // Steps between progress updates and TensorBoard batch/* scalars; 0 = auto,
    // max(1, steps per epoch / 100). The end of an epoch always reports.
    int64_t every_steps = 0;
};

struct RunConfig {
    std::string source_file;         // the YAML file it came from
    std::string run_dir = "runs/default";  // run_dir: where checkpoints and logs go (--run-dir overrides)
    ModelConfig model;
    LossConfig loss;
    // accuracy | mae | mse | loss ("loss" is always reported): at most one of the
    // first three. Default: [accuracy], or [mae] with a loss for real targets
    // or data.target_columns.
    std::vector<std::string> metrics{"accuracy"};
    bool metrics_given = false;      // the config (or --set) has the key
    OptimizerConfig optimizer;
    DataConfig data;
    TrainingConfig training;
    StrategyConfig strategy;
    CheckpointConfig checkpoint;
    EarlyStoppingConfig early_stopping;
    ReduceLrOnPlateauConfig reduce_lr_on_plateau;
    LoggingConfig logging;
    std::string resolved_yaml;       // the full config with defaults filled in, as YAML (written to the run dir)
    std::string digest;              // hex FNV-1a 64 of resolved_yaml minus training.epochs (stored in checkpoints)
    // The digest gputrain gave this config before its layers were resolved
    // (nn::resolve_layers): what checkpoints of an earlier version store.
    std::string digest_of_layers_as_given;

    // The metric reported beside the loss (progress bar, metrics.csv, TensorBoard,
    // evaluate): the one of accuracy, mae and mse that `metrics` lists; with
    // none listed, accuracy (mae for a loss of real targets), computed all the same.
    std::string metric() const {
        for (const std::string& m : metrics)
            if (m != "loss") return m;
        const bool real = needs_real_targets(loss.name) || (!is_cross_entropy(loss.name) && !data.target_columns.empty());
        return real ? "mae" : "accuracy";
    }
};

}  // namespace gputrain::config

// The exact texts of the image layers' configuration and shape errors.
#include <catch2/catch.hpp>

#include "backend/cpu/sizing_backend.hpp"
#include "core/error.hpp"
#include "model_specs.hpp"
#include "nn/model.hpp"

using namespace gputrain;
using specs::layer;

namespace {

std::string message_of(Shape input, std::vector<config::LayerSpec> layers, int64_t rows = 1) {
    SizingBackend be;  // nothing allocated: some models below would take terabytes
    config::ModelConfig mc;
    mc.input_shape = std::move(input);
    mc.layers = std::move(layers);
    config::LossConfig loss;
    try {
        nn::Model m(mc, loss, be, rows, 1);
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "no error";
}

config::LayerSpec conv(std::map<std::string, std::string> extra = {}) {
    std::map<std::string, std::string> p{{"filters", "4"}, {"kernel_size", "3"}};
    for (auto& [k, v] : extra) p[k] = v;
    return layer("conv2d", p);
}

}  // namespace

TEST_CASE("Image layers fed the wrong shape name the layer, both shapes and the fix") {
    REQUIRE(message_of({784}, {conv()}) ==
            "test.yaml:3:7: layer 'conv2d' (conv2d): needs input (height, width, channels), got (784); add a reshape layer with "
            "target_shape [28, 28, 1]");
    REQUIRE(message_of({28, 28, 1}, {conv({{"filters", "3"}}), layer("flatten"), conv()}) ==
            "test.yaml:3:7: layer 'conv2d_1' (conv2d): needs input (height, width, channels), got (2028); add a reshape layer "
            "with target_shape [height, width, channels] before it");
    REQUIRE(message_of({28, 28}, {layer("max_pool2d")}) ==
            "test.yaml:3:7: layer 'max_pool2d' (max_pool2d): needs input (height, width, channels), got (28, 28); add a reshape "
            "layer with target_shape [28, 28, 1], or give model.input_shape [28, 28, 1]");
    REQUIRE(message_of({10}, {layer("global_avg_pool2d")}) ==
            "test.yaml:3:7: layer 'global_avg_pool2d' (global_avg_pool2d): needs input (height, width, channels), got (10); add a "
            "reshape layer with target_shape [height, width, channels] before it");
    REQUIRE(message_of({4, 4, 1}, {conv({{"kernel_size", "5"}})}) ==
            "test.yaml:3:7: layer 'conv2d' (conv2d): kernel 5x5 is larger than its input (4, 4, 1) with padding valid; use a "
            "smaller kernel_size or padding: same");
    REQUIRE(message_of({5, 5, 1}, {conv({{"dilation_rate", "3"}})}) ==
            "test.yaml:3:7: layer 'conv2d' (conv2d): kernel 3x3 (dilation 3x3) is larger than its input (5, 5, 1) with padding "
            "valid; use a smaller kernel_size or padding: same");
    REQUIRE(message_of({4, 4, 1}, {conv({{"kernel_size", "5"}, {"padding", "same"}}), layer("flatten"),
                                   layer("dense", {{"units", "3"}})}) == "no error");
    REQUIRE(message_of({9, 9, 1}, {conv({{"strides", "2"}, {"dilation_rate", "2"}})}) ==
            "test.yaml:3:7: layer 'conv2d' (conv2d): strides 2x2 with dilation_rate 2x2; Keras allows a stride above 1 or a "
            "dilation above 1, not both");
    REQUIRE(message_of({2, 3, 4}, {layer("avg_pool2d", {{"pool_size", "3"}})}) ==
            "test.yaml:3:7: layer 'avg_pool2d' (avg_pool2d): pool_size 3x3 is larger than its input (2, 3, 4) with padding valid; "
            "use a smaller pool_size or padding: same");
    REQUIRE(message_of({784}, {layer("reshape", {{"target_shape", "28,28,2"}})}) ==
            "test.yaml:3:7: layer 'reshape' (reshape): target_shape [28, 28, 2] has 1568 elements but input (784) has 784; the "
            "sizes must multiply to the same count");
    REQUIRE(message_of({784}, {layer("reshape", {{"target_shape", "-1,5"}})}) ==
            "test.yaml:3:7: layer 'reshape' (reshape): target_shape [-1, 5] cannot hold the 784 elements of input (784): 784 is not "
            "a multiple of 5");
}

TEST_CASE("Image layer parameters are checked key by key") {
    REQUIRE(message_of({8, 8, 1}, {conv({{"kernel_size", "0"}})}) ==
            "test.yaml:3:21: model.layers[0] (conv2d): kernel_size: expected a positive integer or a list of two "
            "(e.g. [3, 3]), got '0'");
    REQUIRE(message_of({8, 8, 1}, {conv({{"kernel_size", "3,3,3"}})}) ==
            "test.yaml:3:21: model.layers[0] (conv2d): kernel_size: expected a positive integer or a list of two "
            "(e.g. [3, 3]), got [3,3,3]");
    REQUIRE(message_of({8, 8, 1}, {conv({{"strides", "1,-2"}})}) ==
            "test.yaml:3:17: model.layers[0] (conv2d): strides: expected a positive integer or a list of two (e.g. "
            "[3, 3]), got [1,-2]");
    REQUIRE(message_of({8, 8, 1}, {layer("conv2d", {{"filters", "4"}})}) ==
            "test.yaml:3:7: model.layers[0] (conv2d): kernel_size: missing; this layer needs it (e.g. kernel_size: 3 "
            "or kernel_size: [3, 3])");
    REQUIRE(message_of({8, 8, 1}, {layer("conv2d", {{"filters", "4"}, {"kernel_sise", "3"}})}) ==
            "test.yaml:3:21: model.layers[0] (conv2d): kernel_sise: unknown parameter for conv2d (did you mean "
            "'kernel_size'?); it takes: filters, kernel_size, strides, padding, dilation_rate, use_bias, activation, trainable, lr_multiplier");
    // An unknown key comes before a missing one, with Keras' and PyTorch's names answered.
    REQUIRE(message_of({8, 8, 1}, {layer("conv2d", {{"out_channels", "4"}, {"kernel_size", "3"}})}) ==
            "test.yaml:3:22: model.layers[0] (conv2d): out_channels: unknown parameter for conv2d (did you mean "
            "'filters'?); it takes: filters, kernel_size, strides, padding, dilation_rate, use_bias, activation, trainable, lr_multiplier");
    REQUIRE(message_of({8, 8, 1}, {layer("dropout", {{"p", "0.2"}})}) ==
            "test.yaml:3:11: model.layers[0] (dropout): p: unknown parameter for dropout (did you mean 'rate'?); it "
            "takes: rate");
    REQUIRE(message_of({8, 8, 1}, {layer("conv2d", {{"in_channels", "1"}, {"filters", "4"}, {"kernel_size", "3"}})}) ==
            "test.yaml:3:21: model.layers[0] (conv2d): in_channels: unknown parameter for conv2d (gputrain infers a "
            "layer's input channels from the layer before: remove it); it takes: filters, kernel_size, strides, "
            "padding, dilation_rate, use_bias, activation, trainable, lr_multiplier");
    REQUIRE(message_of({8, 8, 1}, {layer("dense", {{"unitz", "4"}, {"foo", "1"}})}) ==
            "test.yaml:3:13: model.layers[0] (dense): foo: unknown parameter for dense; it takes: units, activation, "
            "use_bias, tie_weights, trainable, lr_multiplier");
    REQUIRE(message_of({8, 8, 1}, {conv({{"padding", "sam"}})}) ==
            "test.yaml:3:17: model.layers[0] (conv2d): padding: expected same or valid, got 'sam' (did you mean "
            "'same'?)");
    REQUIRE(message_of({8, 8, 1}, {conv({{"activation", "rleu"}})}) ==
            "test.yaml:3:20: model.layers[0] (conv2d): activation: unknown activation 'rleu' (did you mean 'relu'?); "
            "known: linear, relu, sigmoid, tanh, softmax, gelu");
    REQUIRE(message_of({8, 8, 1}, {conv({{"dilaton_rate", "2"}})}) ==
            "test.yaml:3:22: model.layers[0] (conv2d): dilaton_rate: unknown parameter for conv2d (did you mean "
            "'dilation_rate'?); it takes: filters, kernel_size, strides, padding, dilation_rate, use_bias, activation, trainable, lr_multiplier");
    REQUIRE(message_of({8, 8, 1}, {layer("max_pool2d", {{"pool_sise", "2"}})}) ==
            "test.yaml:3:19: model.layers[0] (max_pool2d): pool_sise: unknown parameter for max_pool2d (did you mean "
            "'pool_size'?); it takes: pool_size, strides, padding");
    REQUIRE(message_of({4}, {layer("batch_norm", {{"momentum", "1"}})}) ==
            "test.yaml:3:18: model.layers[0] (batch_norm): momentum: must be in [0.0, 1.0), got 1");
    REQUIRE(message_of({4}, {layer("batch_norm", {{"epsilon", "0"}})}) ==
            "test.yaml:3:17: model.layers[0] (batch_norm): epsilon: must be positive (e.g. epsilon: 0.001)");
    REQUIRE(message_of({4}, {layer("batch_norm", {{"sync", "maybe"}})}) ==
            "test.yaml:3:14: model.layers[0] (batch_norm): sync: expected true or false, got 'maybe'");
    // yes/no and on/off are booleans here as in every other section.
    REQUIRE(message_of({4}, {layer("batch_norm", {{"sync", "yes"}}),
                              layer("dense", {{"units", "2"}, {"use_bias", "off"}})}) == "no error");
    REQUIRE(message_of({4}, {layer("batch_norm", {{"synch", "true"}})}) ==
            "test.yaml:3:15: model.layers[0] (batch_norm): synch: unknown parameter for batch_norm (did you mean "
            "'sync'?); it takes: momentum, epsilon, center, scale, sync, trainable, lr_multiplier");
    REQUIRE(message_of({784}, {layer("reshape", {{"target_shape", "-1,-1"}})}) ==
            "test.yaml:3:22: model.layers[0] (reshape): target_shape: only one size may be -1");
    REQUIRE(message_of({784}, {layer("reshape", {{"target_shape", "28,0"}})}) ==
            "test.yaml:3:22: model.layers[0] (reshape): target_shape: sizes must be positive (one may be -1 to infer "
            "it), got 0");
    REQUIRE(message_of({784}, {layer("reshape", {{"target_shape", "28,x"}})}) ==
            "test.yaml:3:22: model.layers[0] (reshape): target_shape: expected a list of integers, got [28,x]");
    REQUIRE(message_of({784}, {layer("reshape", {{"target_shap", "28,28,1"}})}) ==
            "test.yaml:3:21: model.layers[0] (reshape): target_shap: unknown parameter for reshape (did you mean "
            "'target_shape'?); it takes: target_shape");
    REQUIRE(message_of({784}, {layer("reshape")}) ==
            "test.yaml:3:7: model.layers[0] (reshape): target_shape: missing; this layer needs it (e.g. target_shape: "
            "[28, 28, 1])");
}

TEST_CASE("Sizes the backends cannot count with int are config errors, not crashes") {
    const auto tail = [](std::vector<config::LayerSpec> layers) {
        layers.push_back(layer("flatten"));
        layers.push_back(layer("dense", {{"units", "3"}}));
        return layers;
    };
    // Each integer at most 2^31 - 1, however it is written.
    REQUIRE(message_of({28, 28, 1}, tail({conv({{"strides", "4294967296"}})})) ==
            "test.yaml:3:17: model.layers[0] (conv2d): strides: 4294967296 is too large; layer sizes are at most "
            "2147483647");
    REQUIRE(message_of({28, 28, 1}, tail({conv({{"kernel_size", "3,99999999999999999999"}})})) ==
            "test.yaml:3:21: model.layers[0] (conv2d): kernel_size: 99999999999999999999 is too large; layer sizes "
            "are at most 2147483647");
    REQUIRE(message_of({784}, {layer("dense", {{"units", "2147483648"}})}) ==
            "test.yaml:3:15: model.layers[0] (dense): units: 2147483648 is too large; layer sizes are at most "
            "2147483647");
    REQUIRE(message_of({784}, {layer("reshape", {{"target_shape", "-1,4294967296"}})}) ==
            "test.yaml:3:22: model.layers[0] (reshape): target_shape: 4294967296 is too large; layer sizes are at "
            "most 2147483647");
    // Within that, what they multiply to is checked too.
    REQUIRE(message_of({28, 28, 1}, tail({conv({{"dilation_rate", "2147483647"}, {"padding", "same"}})})) ==
            "test.yaml:3:7: layer 'conv2d' (conv2d): kernel 3x3 stride 1x1 dilation 2147483647x2147483647 padding same: its padded "
            "input would be larger than 2147483647 pixels along an axis; use smaller sizes");
    REQUIRE(message_of({28, 28, 1}, tail({layer("max_pool2d", {{"pool_size", "2147483647"}, {"padding", "same"},
                                                               {"strides", "1"}})})) ==
            "test.yaml:3:7: layer 'max_pool2d' (max_pool2d): pool_size 2147483647x2147483647 strides 1x1 padding same: its padded "
            "input would be larger than 2147483647 pixels along an axis; use smaller sizes");
    REQUIRE(message_of({784}, {layer("reshape", {{"target_shape", "2147483647,2147483647,-1"}})}) ==
            "test.yaml:3:7: layer 'reshape' (reshape): target_shape [2147483647, 2147483647, -1] has more than 2147483647 elements, "
            "more than its input (784) has (784)");
    REQUIRE(message_of({65536, 65536}, {layer("flatten")}) ==
            "model.input_shape: (65536, 65536) has more than 2147483647 elements per sample; give a smaller shape");
    REQUIRE(message_of({46341, 1, 1}, tail({conv({{"filters", "46341"}, {"kernel_size", "1"}})})) ==
            "test.yaml:3:7: model.layers[0] (conv2d): its output (None, 46341, 1, 46341) has more than 2147483647 "
            "elements per sample; use smaller sizes");
    REQUIRE(message_of({131072}, {layer("dense", {{"units", "131073"}})}) ==
            "test.yaml:3:7: model.layers[0] (dense): its kernel (131072, 131073) has more than 17179869184 elements; "
            "use smaller sizes");
    // A stride as large as allowed is fine where the window fits: one output per axis.
    REQUIRE(message_of({28, 28, 1}, tail({conv({{"strides", "2147483647"}, {"padding", "same"}})})) == "no error");
}

TEST_CASE("The model's output must be one vector per sample; layer names take '/' only between scopes") {
    REQUIRE(message_of({28, 28, 1}, {layer("dense", {{"units", "10"}})}) ==
            "test.yaml:3:7: model.layers[0] (dense): the model's output (None, 28, 28, 10) must be one vector per "
            "sample, (None, classes), for the loss (or (None, positions, classes) with a crossentropy loss); add a "
            "flatten layer before the last dense layer");
    // (None, positions, classes) is a sequence model's (format text): fit checks it against the data.
    REQUIRE(message_of({28, 28}, {layer("dense", {{"units", "10"}})}) == "no error");
    config::LayerSpec named = layer("dense", {{"units", "10"}});
    named.name = "optimizer/adam_m/dense";
    REQUIRE(message_of({784}, {named}) ==
            "test.yaml:3:7: model.layers[0] (dense 'optimizer/adam_m/dense'): name: a layer name may not start with "
            "'optimizer/' (checkpoints keep the optimizer's state under it); give the layer another name");
    for (const std::string bad : {"/dense", "dense/", "a//b", "a\tb"}) {
        named.name = bad;
        REQUIRE(message_of({784}, {named}) ==
                "test.yaml:3:7: model.layers[0] (dense '" + bad + "'): name: control characters and a '/' at either "
                "end or twice in a row are not allowed in a layer name; use letters, digits, '_', '-' or '.'");
    }
    named.name = "stage1/block2/dense";  // a block's scoped name, as config.yaml writes it
    REQUIRE(message_of({784}, {named}) == "no error");
}

TEST_CASE("Sizes that cannot be indexed are config errors: conv patches, a shard's buffers, a dense layer's rows") {
    // 46341^2 > 2^31: the patch of one output pixel overflows an int.
    REQUIRE(message_of({1, 1, 1}, {conv({{"filters", "1"}, {"kernel_size", "46341"}, {"padding", "same"}})}) ==
            "test.yaml:3:7: layer 'conv2d' (conv2d): kernel 46341x46341 over 1 input channels makes patches of more "
            "than 2147483647 values, more than can be indexed; use a smaller kernel_size or fewer channels");
    REQUIRE(message_of({1, 1, 1048576}, {conv({{"filters", "1"}, {"kernel_size", "1"}}), layer("flatten")}) == "no error");
    // 2^21 output pixels of 2^20-value patches: 2^41 im2col values a sample.
    REQUIRE_THAT(message_of({2048, 1024, 1}, {conv({{"filters", "1"}, {"kernel_size", "1024"}, {"padding", "same"}})}),
                 Catch::Contains("makes patches of 1048576 values, 2097152 a sample: more than 2^40 values, more than can be "
                                 "indexed"));
    // 2^20 samples of 2^21 values: 2^41 in one buffer.
    REQUIRE(message_of({2048, 1024}, {layer("flatten"), layer("dense", {{"units", "2"}})}, int64_t{1} << 20) ==
            "training.batch_size: 1048576 samples per replica of the input (None, 2048, 1024) are more than "
            "1099511627776 values in one buffer; lower training.batch_size");
    // (100, 30): 100 rows of 30 a sample, as a dense layer's GEMM sees them.
    REQUIRE(message_of({100, 30}, {layer("dense", {{"units", "4"}}), layer("flatten"), layer("dense", {{"units", "2"}})},
                       30000000) ==
            "training.batch_size: 30000000 samples per replica of the input (None, 100, 30) make more than 2147483647 "
            "rows of 30 values, more than the kernels index; lower training.batch_size");
    REQUIRE(message_of({3000}, {layer("dense", {{"units", "2"}})}, 30000000) == "no error");
    // An image batch: its pixels are rows to convolution and batch norm.
    REQUIRE(message_of({28, 28, 1}, {layer("batch_norm"), layer("flatten"), layer("dense", {{"units", "2"}})}, 2739138) ==
            "training.batch_size: 2739138 samples per replica of the input (None, 28, 28, 1) make more than 2147483647 "
            "rows of 1 values, more than the kernels index; lower training.batch_size");
    REQUIRE(message_of({28, 28, 1}, {layer("batch_norm"), layer("flatten"), layer("dense", {{"units", "2"}})}, 2739137) ==
            "no error");
}

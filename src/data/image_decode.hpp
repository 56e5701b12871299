// PNG and JPEG files decoded into 8-bit grayscale or RGB pixels (libpng's
// simplified API, libjpeg-turbo), and resized to a model's input size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gputrain::data {

struct Image {
    int height = 0, width = 0, channels = 0;
    std::vector<uint8_t> pixels;  // height x width x channels, row-major
};

// Whether the file's name says PNG or JPEG (.png, .jpg, .jpeg, any case).
bool is_image_file(const std::string& path);

// Decodes `path` (PNG or JPEG, by its first bytes) into `channels` (1: gray,
// 3: RGB) whatever the file holds, as Keras' color_mode converts.
// DataError naming the file and what is wrong (not an image, corrupt or
// truncated data, an unsupported color space).
Image decode_image(const std::string& path, int channels);

// `image` at height x width: bilinear with half-pixel centers (TensorFlow's
// tf.image.resize, which Keras' image_dataset_from_directory uses), after
// cutting the largest centered region of the target's aspect ratio when
// `crop_to_aspect_ratio` (Keras' option). Unchanged when already that size.
Image resize_image(const Image& image, int height, int width, bool crop_to_aspect_ratio);

}  // namespace gputrain::data

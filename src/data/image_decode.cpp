#include "data/image_decode.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <memory>

#include <jpeglib.h>
#include <png.h>

#include "core/error.hpp"

namespace gputrain::data {

namespace {

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// Decoded as RGBA (or gray + alpha), then the alpha dropped as TensorFlow's
// decode_png does; a color image becomes gray by ITU-R 601's weights, as
// Pillow's convert("L") and libjpeg do (libpng's own conversion is gamma-aware
// and gives other values).
Image decode_png(const std::string& path, int channels) {
    png_image png;
    std::memset(&png, 0, sizeof png);
    png.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&png, path.c_str()))
        throw DataError(path + ": not a readable PNG (libpng: " + png.message + ")");
    const bool color = (png.format & PNG_FORMAT_FLAG_COLOR) != 0;
    png.format = color ? PNG_FORMAT_RGBA : PNG_FORMAT_GA;
    const int stored = color ? 4 : 2;
    std::vector<uint8_t> raw(PNG_IMAGE_SIZE(png));
    if (!png_image_finish_read(&png, nullptr, raw.data(), 0, nullptr)) {
        const std::string message = png.message;
        png_image_free(&png);
        throw DataError(path + ": corrupt or truncated PNG (libpng: " + message + ")");
    }
    Image out{static_cast<int>(png.height), static_cast<int>(png.width), channels, {}};
    const size_t pixels = static_cast<size_t>(out.height) * out.width;
    out.pixels.resize(pixels * channels);
    for (size_t i = 0; i < pixels; ++i) {
        const uint8_t* p = raw.data() + i * stored;
        if (!color) {
            for (int c = 0; c < channels; ++c) out.pixels[i * channels + c] = p[0];
        } else if (channels == 3) {
            std::copy_n(p, 3, out.pixels.data() + i * 3);
        } else {
            out.pixels[i] = static_cast<uint8_t>((p[0] * 19595 + p[1] * 38470 + p[2] * 7471 + 0x8000) >> 16);
        }
    }
    return out;
}

// libjpeg reports errors through a callback that must not return: it jumps
// back to decode_jpeg (C code cannot be unwound by a C++ exception).
struct JpegError {
    jpeg_error_mgr manager;
    std::jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
};

void jpeg_fail(j_common_ptr info) {
    auto* error = reinterpret_cast<JpegError*>(info->err);
    (*info->err->format_message)(info, error->message);
    std::longjmp(error->jump, 1);
}

// Warnings (corrupt data libjpeg decodes around, a truncated file) fail too:
// the image would be partly invented.
void jpeg_warning(j_common_ptr info, int level) {
    if (level < 0) jpeg_fail(info);
}

struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
};

Image decode_jpeg(const std::string& path, int channels) {
    std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
    if (!file) throw DataError(path + ": cannot be opened (" + std::strerror(errno) + ")");
    jpeg_decompress_struct info;
    JpegError error;
    info.err = jpeg_std_error(&error.manager);
    error.manager.error_exit = jpeg_fail;
    error.manager.emit_message = jpeg_warning;
    Image out;
    std::vector<uint8_t>& pixels = out.pixels;  // filled below; no object with a destructor is made after setjmp
    if (setjmp(error.jump)) {
        jpeg_destroy_decompress(&info);
        throw DataError(path + ": corrupt or truncated JPEG (libjpeg: " + error.message + ")");
    }
    jpeg_create_decompress(&info);
    jpeg_stdio_src(&info, file.get());
    jpeg_read_header(&info, TRUE);
    info.out_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_start_decompress(&info);
    out.height = static_cast<int>(info.output_height);
    out.width = static_cast<int>(info.output_width);
    out.channels = channels;
    pixels.resize(static_cast<size_t>(out.height) * out.width * channels);
    while (info.output_scanline < info.output_height) {
        JSAMPROW row = pixels.data() + static_cast<size_t>(info.output_scanline) * out.width * channels;
        jpeg_read_scanlines(&info, &row, 1);
    }
    jpeg_finish_decompress(&info);
    jpeg_destroy_decompress(&info);
    return out;
}

}  // namespace

bool is_image_file(const std::string& path) {
    const std::string name = lower(path);
    for (const char* ext : {".png", ".jpg", ".jpeg"}) {
        const size_t n = std::strlen(ext);
        if (name.size() > n && name.compare(name.size() - n, n, ext) == 0) return true;
    }
    return false;
}

Image decode_image(const std::string& path, int channels) {
    unsigned char magic[8] = {};
    {
        std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
        if (!file) throw DataError(path + ": cannot be opened (" + std::strerror(errno) + ")");
        const size_t got = std::fread(magic, 1, sizeof magic, file.get());
        if (got == 0) throw DataError(path + ": empty file, not an image");
    }
    static const unsigned char png_magic[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
    if (std::memcmp(magic, png_magic, 8) == 0) return decode_png(path, channels);
    if (magic[0] == 0xFF && magic[1] == 0xD8) return decode_jpeg(path, channels);
    throw DataError(path + ": not a PNG or JPEG image (its first bytes say otherwise)");
}

Image resize_image(const Image& image, int height, int width, bool crop_to_aspect_ratio) {
    // The source region: all of it, or the largest centered one of the target's aspect ratio.
    double top = 0, left = 0, region_h = image.height, region_w = image.width;
    if (crop_to_aspect_ratio) {
        const double target = static_cast<double>(width) / height;
        if (static_cast<double>(image.width) / image.height > target) {
            region_w = std::round(image.height * target);
            left = std::floor((image.width - region_w) / 2);
        } else {
            region_h = std::round(image.width / target);
            top = std::floor((image.height - region_h) / 2);
        }
    }
    if (image.height == height && image.width == width && region_h == height && region_w == width) return image;
    Image out{height, width, image.channels, {}};
    out.pixels.resize(static_cast<size_t>(height) * width * image.channels);
    const double sy = region_h / height, sx = region_w / width;
    for (int y = 0; y < height; ++y) {
        const double fy = std::clamp((y + 0.5) * sy - 0.5, 0.0, region_h - 1) + top;
        const int y0 = static_cast<int>(fy), y1 = std::min(y0 + 1, image.height - 1);
        const double wy = fy - y0;
        for (int x = 0; x < width; ++x) {
            const double fx = std::clamp((x + 0.5) * sx - 0.5, 0.0, region_w - 1) + left;
            const int x0 = static_cast<int>(fx), x1 = std::min(x0 + 1, image.width - 1);
            const double wx = fx - x0;
            for (int c = 0; c < image.channels; ++c) {
                const auto at = [&](int yy, int xx) {
                    return static_cast<double>(image.pixels[(static_cast<size_t>(yy) * image.width + xx) * image.channels + c]);
                };
                const double v = (1 - wy) * ((1 - wx) * at(y0, x0) + wx * at(y0, x1)) +
                                 wy * ((1 - wx) * at(y1, x0) + wx * at(y1, x1));
                out.pixels[(static_cast<size_t>(y) * width + x) * image.channels + c] =
                    static_cast<uint8_t>(std::clamp(std::lround(v), 0L, 255L));
            }
        }
    }
    return out;
}

}  // namespace gputrain::data

// convolution: a synthetic RGB image (sycl::float3 pixels) is blurred with a 5x5 Gaussian
// (neighborhood access of the image, access::all of the filter) and then sharpened with a
// 3x3 kernel; both passes are checked against a serial computation.
//   convolution [-W width (192)] [-H height (128)]
#include <celerity.h>

#include "example_common.hpp"

namespace {
constexpr int radius = 2;
constexpr int taps = 2 * radius + 1;

sycl::float3 pixel(size_t y, size_t x) {
    return sycl::float3(static_cast<float>((x * 7 + y * 3) % 17) / 16.f, static_cast<float>((x ^ y) % 11) / 10.f, static_cast<float>((x * y) % 13) / 12.f);
}

CELERITY_HD bool inside(size_t y, size_t x, size_t h, size_t w, size_t border) { return y >= border && x >= border && y + border < h && x + border < w; }

template <typename In, typename Filter>
CELERITY_HD sycl::float3 blur_at(size_t y, size_t x, const In& in, const Filter& filter) {
    sycl::float3 sum(0.f, 0.f, 0.f);
    for(int dy = -radius; dy <= radius; ++dy) {
        for(int dx = -radius; dx <= radius; ++dx) sum += filter(dy + radius, dx + radius) * in(y + dy, x + dx);
    }
    return sum;
}

template <typename In>
CELERITY_HD sycl::float3 sharpen_at(size_t y, size_t x, const In& in) {
    sycl::float3 s = 5.f * in(y, x) - in(y - 1, x) - in(y + 1, x) - in(y, x - 1) - in(y, x + 1);
    return sycl::float3(sycl::fmin(1.f, s.x()), sycl::fmin(1.f, s.y()), sycl::fmin(1.f, s.z()));
}
} // namespace

int main(int argc, char** argv) {
    const size_t w = static_cast<size_t>(example::option(argc, argv, "-W", 192));
    const size_t h = static_cast<size_t>(example::option(argc, argv, "-H", 128));
    std::vector<sycl::float3> image(w * h);
    for(size_t y = 0; y < h; ++y) {
        for(size_t x = 0; x < w; ++x) image[y * w + x] = pixel(y, x);
    }
    std::vector<float> gauss(taps * taps);
    float total = 0.f;
    for(int i = 0; i < taps; ++i) {
        for(int j = 0; j < taps; ++j) total += gauss[i * taps + j] = std::exp(-static_cast<float>((i - radius) * (i - radius) + (j - radius) * (j - radius)) / 4.f);
    }
    for(auto& g : gauss) g /= total;

    example::timer timer;
    celerity::queue q;
    const celerity::range<2> extent(h, w);
    celerity::buffer<sycl::float3, 2> input(image.data(), extent), blurred(extent), output(extent);
    celerity::buffer<float, 2> filter(gauss.data(), celerity::range<2>(taps, taps));

    q.submit([&](celerity::handler& cgh) {
        celerity::accessor in{input, cgh, celerity::access::neighborhood{{radius, radius}}, celerity::read_only};
        celerity::accessor f{filter, cgh, celerity::access::all{}, celerity::read_only};
        celerity::accessor out{blurred, cgh, celerity::access::one_to_one{}, celerity::write_only, celerity::no_init};
        cgh.parallel_for(extent, [=] CELERITY_DEVICE_LAMBDA(celerity::item<2> it) {
            if(!inside(it[0], it[1], h, w, radius)) {
                out[it] = sycl::float3(0.f, 0.f, 0.f);
                return;
            }
            out[it] = blur_at(it[0], it[1], [&](size_t y, size_t x) { return in[{y, x}]; }, [&](size_t i, size_t j) { return f[{i, j}]; });
        });
    });
    q.submit([&](celerity::handler& cgh) {
        celerity::accessor in{blurred, cgh, celerity::access::neighborhood({1, 1}), celerity::read_only};
        celerity::accessor out{output, cgh, celerity::access::one_to_one{}, celerity::write_only, celerity::no_init};
        cgh.parallel_for(extent, [=] CELERITY_DEVICE_LAMBDA(celerity::item<2> it) {
            out[it] = inside(it[0], it[1], h, w, radius + 1) ? sharpen_at(it[0], it[1], [&](size_t y, size_t x) { return in[y][x]; }) : sycl::float3(0.f, 0.f, 0.f);
        });
    });
    const auto result = q.fence(output).get();
    const double seconds = timer.seconds();

    std::vector<sycl::float3> b(w * h, sycl::float3(0.f, 0.f, 0.f));
    for(size_t y = 0; y < h; ++y) {
        for(size_t x = 0; x < w; ++x) {
            if(inside(y, x, h, w, radius)) b[y * w + x] = blur_at(y, x, [&](size_t yy, size_t xx) { return image[yy * w + xx]; }, [&](size_t i, size_t j) { return gauss[i * taps + j]; });
        }
    }
    float max_error = 0.f;
    for(size_t y = 0; y < h; ++y) {
        for(size_t x = 0; x < w; ++x) {
            const sycl::float3 expected = inside(y, x, h, w, radius + 1) ? sharpen_at(y, x, [&](size_t yy, size_t xx) { return b[yy * w + xx]; }) : sycl::float3(0.f, 0.f, 0.f);
            const sycl::float3 diff = result[{y, x}] - expected;
            for(int c = 0; c < 3; ++c) max_error = std::max(max_error, std::fabs(diff[c]));
        }
    }
    return example::report("convolution", max_error <= 1e-5f, seconds, std::to_string(w) + "x" + std::to_string(h) + ", max error " + std::to_string(max_error));
}

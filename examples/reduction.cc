// reduction: the minimum and maximum luminance of a synthetic RGBA image (sycl::uchar4) and
// its pixel sum, in one kernel with three built-in reductions, then a contrast stretch that
// reads the 0-D results, and a user-defined reduction (a bounding box of bright pixels, with
// its identity). Everything is checked against serial results.
//   reduction [-W width (256)] [-H height (160)]
#include <celerity.h>

#include "example_common.hpp"

namespace {
struct box {
    int16_t x0, y0, x1, y1; // inclusive bounds, empty while x0 > x1 (8 bytes: fits a CUDA atomic)
};
/// Combines two bounding boxes (associative and commutative; identity: the empty box).
struct box_union {
    CELERITY_HD box operator()(const box& a, const box& b) const {
        return {sycl::min(a.x0, b.x0), sycl::min(a.y0, b.y0), sycl::max(a.x1, b.x1), sycl::max(a.y1, b.y1)};
    }
};
constexpr box empty_box{INT16_MAX, INT16_MAX, INT16_MIN, INT16_MIN};

sycl::uchar4 pixel(size_t y, size_t x) {
    const auto v = [&](size_t k) { return static_cast<unsigned char>(40 + (x * k + y * (k + 3)) % 150); };
    return sycl::uchar4(v(1), v(2), v(5), 255);
}
CELERITY_HD float luminance(const sycl::float4& p) { return 0.2126f * p.r() + 0.7152f * p.g() + 0.0722f * p.b(); }
CELERITY_HD bool bright(float l) { return l > 0.72f; }
} // namespace

int main(int argc, char** argv) {
    const size_t w = static_cast<size_t>(example::option(argc, argv, "-W", 256));
    const size_t h = static_cast<size_t>(example::option(argc, argv, "-H", 160));
    std::vector<sycl::uchar4> image(w * h);
    for(size_t y = 0; y < h; ++y) {
        for(size_t x = 0; x < w; ++x) image[y * w + x] = pixel(y, x);
    }

    example::timer timer;
    celerity::queue q;
    const celerity::range<2> extent(h, w);
    celerity::buffer<sycl::uchar4, 2> rgba(image.data(), extent);
    celerity::buffer<float, 2> lum(extent);
    celerity::buffer<float, 0> min_lum, max_lum;
    celerity::buffer<uint64_t, 0> channel_sum;
    celerity::buffer<box, 0> bright_box;

    q.submit([&](celerity::handler& cgh) {
        celerity::accessor in{rgba, cgh, celerity::access::one_to_one{}, celerity::read_only};
        celerity::accessor out{lum, cgh, celerity::access::one_to_one{}, celerity::write_only, celerity::no_init};
        const auto init = celerity::property::reduction::initialize_to_identity{};
        auto lo = celerity::reduction(min_lum, cgh, sycl::minimum<float>(), init);
        auto hi = celerity::reduction(max_lum, cgh, sycl::maximum<float>(), init);
        auto sum = celerity::reduction(channel_sum, cgh, sycl::plus<uint64_t>(), init);
        auto bb = celerity::reduction(bright_box, cgh, empty_box, box_union{}, init);
        cgh.parallel_for(extent, lo, hi, sum, bb, [=] CELERITY_DEVICE_LAMBDA(celerity::item<2> it, celerity::reducer<float, sycl::minimum<float>>& mn,
                                          celerity::reducer<float, sycl::maximum<float>>& mx,
                                          celerity::reducer<uint64_t, sycl::plus<uint64_t>>& s, celerity::reducer<box, box_union>& b) {
            // Reducers are named, not `auto&`: nvcc allows no generic extended lambdas (docs/porting.md).
            const auto p = in[it].convert<float>() / 255.f;
            const float l = luminance(p);
            out[it] = l;
            mn.combine(l);
            mx.combine(l);
            s += uint64_t{in[it].r()} + in[it].g() + in[it].b();
            if(bright(l)) b.combine(box{static_cast<int16_t>(it[1]), static_cast<int16_t>(it[0]), static_cast<int16_t>(it[1]), static_cast<int16_t>(it[0])});
        });
    });
    celerity::buffer<float, 2> stretched(extent);
    q.submit([&](celerity::handler& cgh) {
        celerity::accessor in{lum, cgh, celerity::access::one_to_one{}, celerity::read_only};
        celerity::accessor lo{min_lum, cgh, celerity::read_only};
        celerity::accessor hi{max_lum, cgh, celerity::read_only};
        celerity::accessor out{stretched, cgh, celerity::access::one_to_one{}, celerity::write_only, celerity::no_init};
        cgh.parallel_for(extent, [=] CELERITY_DEVICE_LAMBDA(celerity::item<2> it) { out[it] = (in[it] - *lo) / (*hi - *lo); });
    });
    const float got_min = *q.fence(min_lum).get(), got_max = *q.fence(max_lum).get();
    const uint64_t got_sum = *q.fence(channel_sum).get();
    const box got_box = *q.fence(bright_box).get();
    const auto got_stretched = q.fence(stretched).get();
    const double seconds = timer.seconds();

    float e_min = 1e30f, e_max = -1e30f;
    uint64_t e_sum = 0;
    box e_box = empty_box;
    for(size_t y = 0; y < h; ++y) {
        for(size_t x = 0; x < w; ++x) {
            const auto& p = image[y * w + x];
            const float l = luminance(p.convert<float>() / 255.f);
            e_min = std::min(e_min, l), e_max = std::max(e_max, l);
            e_sum += uint64_t{p.r()} + p.g() + p.b();
            if(bright(l)) e_box = box_union{}(e_box, box{static_cast<int16_t>(x), static_cast<int16_t>(y), static_cast<int16_t>(x), static_cast<int16_t>(y)});
        }
    }
    bool ok = got_min == e_min && got_max == e_max && got_sum == e_sum && got_box.x0 == e_box.x0 && got_box.y0 == e_box.y0 && got_box.x1 == e_box.x1
              && got_box.y1 == e_box.y1;
    float lo_s = 1.f, hi_s = 0.f;
    for(size_t i = 0; i < w * h; ++i) lo_s = std::min(lo_s, got_stretched.get_data()[i]), hi_s = std::max(hi_s, got_stretched.get_data()[i]);
    ok = ok && lo_s == 0.f && std::fabs(hi_s - 1.f) < 1e-6f;
    char detail[200];
    std::snprintf(detail, sizeof detail, "min %.4f max %.4f sum %llu bright box (%d,%d)-(%d,%d)", got_min, got_max, static_cast<unsigned long long>(got_sum),
        got_box.x0, got_box.y0, got_box.x1, got_box.y1);
    return example::report("reduction", ok, seconds, detail);
}

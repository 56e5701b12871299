// bench_conv_onednn: gputrain's CPU convolution (CpuBackend: im2col + OpenBLAS)
// against oneDNN 2.6 (Debian's libdnnl-dev) on ResNet-20's shapes
// (configs/fashion_mnist_resnet.yaml), batch 128, NHWC / [out_c, kh, kw, in_c]
// (oneDNN: nhwc / ohwi), fp32. Issue 24. Not part of the build; by hand:
//
//   cd /work/main && g++ -O2 -std=c++20 -I src -I build -I /usr/include/x86_64-linux-gnu/openblas-pthread \
//     tests/tools/onednn/bench_conv_onednn.cpp \
//     build/src/backend/libgputrain_backend.a build/src/core/libgputrain_core.a \
//     -ldnnl -lopenblas -fopenmp -lpthread -o /tmp/bench_conv_onednn
//   OMP_NUM_THREADS=2 nice -n 5 /tmp/bench_conv_onednn 2 9     # threads, timed repetitions
//   OMP_NUM_THREADS=1 nice -n 5 /tmp/bench_conv_onednn 1 9
//
// oneDNN variants (each created for every shape, its implementation printed):
//   plain: nhwc data, ohwi weights fixed. oneDNN 2.6 has only its reference
//          kernel (ref:any) for ohwi weights on AVX2: 1000x slower, not timed.
//   wany:  nhwc data fixed, weights in the layout oneDNN picks (reordered from
//          and to ohwi in every call: a few KB): the realistic drop-in.
//   any:   data and weights in oneDNN's blocked layouts, with the reorders of
//          x, y, dy, dx, w, dw to and from NHWC/ohwi around each call (what a
//          drop-in into gputrain's NHWC graph would pay), and "core": the same
//          convolution without the reorders (a network kept blocked throughout).
// Per shape and pass, gputrain and the variants run interleaved in each
// repetition: the median of the timed repetitions after 2 warm-ups.
// Correctness: max |oneDNN - gputrain| / max |gputrain| over each output.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <oneapi/dnnl/dnnl.hpp>
#include <random>
#include <string>
#include <vector>

#include <cblas.h>

#include "backend/cpu/blas_core.hpp"
#include "backend/cpu/cpu_backend.hpp"

using gputrain::Conv2dGeometry;
using gputrain::CpuBackend;
using clk = std::chrono::steady_clock;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

namespace {

double seconds_since(clk::time_point t) { return std::chrono::duration<double>(clk::now() - t).count(); }

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Shape {
    const char* name;
    const char* what;
    int per_step;  // how many layers of this shape ResNet-20 has
    Conv2dGeometry g;
};

Conv2dGeometry geometry(int batch, int in_hw, int in_c, int out_hw, int out_c, int k, int stride, int pad_top) {
    Conv2dGeometry g;
    g.batch = batch;
    g.in_h = g.in_w = in_hw, g.in_c = in_c;
    g.out_h = g.out_w = out_hw, g.out_c = out_c;
    g.kernel_h = g.kernel_w = k;
    g.stride_h = g.stride_w = stride;
    g.pad_top = g.pad_left = pad_top;
    return g;
}

// max |a - b| / max |b|
double rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
    double d = 0, m = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        d = std::max(d, std::fabs(double(a[i]) - double(b[i])));
        m = std::max(m, std::fabs(double(b[i])));
    }
    return m > 0 ? d / m : d;
}

// One oneDNN convolution's three passes, with memory descriptors either fixed
// (nhwc/ohwi: the user's buffers used directly) or "any" (oneDNN picks,
// reorders to and from the user's buffers around each call).
struct OneDnnConv {
    dnnl::engine& eng;
    dnnl::stream& strm;
    int mode;  // 0 plain, 1 weights any, 2 all any
    dnnl::convolution_forward::primitive_desc fpd;
    dnnl::convolution_backward_data::primitive_desc bdpd;
    dnnl::convolution_backward_weights::primitive_desc bwpd;
    dnnl::convolution_forward fwd;
    dnnl::convolution_backward_data bwd_data;
    dnnl::convolution_backward_weights bwd_weights;
    double create_seconds = 0;
    // user memories (NHWC / ohwi)
    dnnl::memory x, w, y, dy, dx, dw;
    // internal memories in oneDNN's layouts ("any") and their reorders
    struct Staged {
        dnnl::memory mem;
        bool needs = false;
        dnnl::reorder in, out;  // user -> mem, mem -> user
    };
    Staged fx, fw, fy, bd_dy, bd_w, bd_dx, bw_x, bw_dy, bw_dw;

    OneDnnConv(dnnl::engine& e, dnnl::stream& s, const Conv2dGeometry& g, int layout_mode, float* px, float* pw,
               float* py, float* pdy, float* pdx, float* pdw)
        : eng(e), strm(s), mode(layout_mode) {
        const bool any = mode == 2;
        using dims = dnnl::memory::dims;
        const dims src_dims{g.batch, g.in_c, g.in_h, g.in_w}, wei_dims{g.out_c, g.in_c, g.kernel_h, g.kernel_w},
            dst_dims{g.batch, g.out_c, g.out_h, g.out_w};
        const dims strides{g.stride_h, g.stride_w}, pad_l{g.pad_top, g.pad_left}, pad_r{g.pad_bottom(), g.pad_right()};
        const dnnl::memory::desc src_u(src_dims, dt::f32, tag::nhwc), wei_u(wei_dims, dt::f32, tag::ohwi),
            dst_u(dst_dims, dt::f32, tag::nhwc);
        const dnnl::memory::desc src_md = any ? dnnl::memory::desc(src_dims, dt::f32, tag::any) : src_u;
        const dnnl::memory::desc wei_md = mode >= 1 ? dnnl::memory::desc(wei_dims, dt::f32, tag::any) : wei_u;
        const dnnl::memory::desc dst_md = any ? dnnl::memory::desc(dst_dims, dt::f32, tag::any) : dst_u;

        const auto t0 = clk::now();
        fpd = dnnl::convolution_forward::primitive_desc(
            dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                            src_md, wei_md, dst_md, strides, pad_l, pad_r),
            eng);
        bdpd = dnnl::convolution_backward_data::primitive_desc(
            dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, src_md, wei_md, dst_md, strides,
                                                  pad_l, pad_r),
            eng, fpd);
        bwpd = dnnl::convolution_backward_weights::primitive_desc(
            dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, src_md, wei_md, dst_md,
                                                     strides, pad_l, pad_r),
            eng, fpd);
        fwd = dnnl::convolution_forward(fpd);
        bwd_data = dnnl::convolution_backward_data(bdpd);
        bwd_weights = dnnl::convolution_backward_weights(bwpd);
        create_seconds = seconds_since(t0);

        x = dnnl::memory(src_u, eng, px), w = dnnl::memory(wei_u, eng, pw), y = dnnl::memory(dst_u, eng, py);
        dy = dnnl::memory(dst_u, eng, pdy), dx = dnnl::memory(src_u, eng, pdx), dw = dnnl::memory(wei_u, eng, pdw);
        stage(fx, fpd.src_desc(), x), stage(fw, fpd.weights_desc(), w), stage(fy, fpd.dst_desc(), y);
        stage(bd_dy, bdpd.diff_dst_desc(), dy), stage(bd_w, bdpd.weights_desc(), w),
            stage(bd_dx, bdpd.diff_src_desc(), dx);
        stage(bw_x, bwpd.src_desc(), x), stage(bw_dy, bwpd.diff_dst_desc(), dy),
            stage(bw_dw, bwpd.diff_weights_desc(), dw);
    }

    void stage(Staged& s, const dnnl::memory::desc& md, const dnnl::memory& user) {
        s.needs = md != user.get_desc();
        if (!s.needs) {
            s.mem = user;
            return;
        }
        s.mem = dnnl::memory(md, eng);
        s.in = dnnl::reorder(user, s.mem);
        s.out = dnnl::reorder(s.mem, user);
    }
    void in(Staged& s, dnnl::memory& user) {
        if (s.needs) s.in.execute(strm, user, s.mem);
    }
    void out(Staged& s, dnnl::memory& user) {
        if (s.needs) s.out.execute(strm, s.mem, user);
    }

    // Weights reorders are counted in the pass: gputrain's optimizer updates the
    // ohwi weights every step, so a drop-in would reorder them once per step.
    // reorder = false: the convolution alone, on whatever the staged buffers hold.
    void forward(bool reorder = true) {
        if (reorder) in(fx, x), in(fw, w);
        fwd.execute(strm, {{DNNL_ARG_SRC, fx.mem}, {DNNL_ARG_WEIGHTS, fw.mem}, {DNNL_ARG_DST, fy.mem}});
        if (reorder) out(fy, y);
        strm.wait();
    }
    void backward_data(bool reorder = true) {
        if (reorder) in(bd_dy, dy), in(bd_w, w);
        bwd_data.execute(strm,
                         {{DNNL_ARG_DIFF_DST, bd_dy.mem}, {DNNL_ARG_WEIGHTS, bd_w.mem}, {DNNL_ARG_DIFF_SRC, bd_dx.mem}});
        if (reorder) out(bd_dx, dx);
        strm.wait();
    }
    void backward_weights(bool reorder = true) {
        if (reorder) in(bw_x, x), in(bw_dy, dy);
        bwd_weights.execute(strm,
                            {{DNNL_ARG_SRC, bw_x.mem}, {DNNL_ARG_DIFF_DST, bw_dy.mem}, {DNNL_ARG_DIFF_WEIGHTS, bw_dw.mem}});
        if (reorder) out(bw_dw, dw);
        strm.wait();
    }
    int reorders(int pass) const {
        const Staged* const s[3][3] = {{&fx, &fw, &fy}, {&bd_dy, &bd_w, &bd_dx}, {&bw_x, &bw_dy, &bw_dw}};
        int n = 0;
        for (const Staged* p : s[pass]) n += p->needs;
        return n;
    }
};

const char* const kPass[3] = {"fwd", "bwd-data", "bwd-wgt"};

struct Totals {
    double gp = 0, wany = 0, any = 0, core = 0, best = 0;  // best: faster of gputrain and wany per layer-pass
};

}  // namespace

int main(int argc, char** argv) {
    gputrain::cpu::exec_with_better_blas_core(argv);  // as gputrain's main does (blas_core.hpp)
    const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
    const int reps = argc > 2 ? std::atoi(argv[2]) : 9;
    gputrain::set_cpu_blas_threads(threads);
    CpuBackend be;
    be.bind_thread();  // FTZ/DAZ, as a replica thread
    std::printf("threads %d (OpenBLAS %d, core %s; OpenMP max %d), median of %d reps after 2 warm-ups, oneDNN %d.%d.%d\n",
                threads, openblas_get_num_threads(), openblas_get_corename(), omp_get_max_threads(), reps,
                dnnl_version()->major, dnnl_version()->minor, dnnl_version()->patch);

    const int n = 128;
    // ResNet-20 on 28x28x1 (configs/fashion_mnist_resnet.yaml); per_step = layers of the shape.
    const std::vector<Shape> shapes = {
        {"A", "28x28 16->16 3x3 s1", 6, geometry(n, 28, 16, 28, 16, 3, 1, 1)},
        {"B", "28x28 16->14x14 32 3x3 s2", 1, geometry(n, 28, 16, 14, 32, 3, 2, 0)},
        {"C", "14x14 32->32 3x3 s1", 5, geometry(n, 14, 32, 14, 32, 3, 1, 1)},
        {"D", "7x7 64->64 3x3 s1", 5, geometry(n, 7, 64, 7, 64, 3, 1, 1)},
        {"E", "28x28 1->16 3x3 s1 (stem)", 1, geometry(n, 28, 1, 28, 16, 3, 1, 1)},
        {"F", "14x14 32->7x7 64 3x3 s2", 1, geometry(n, 14, 32, 7, 64, 3, 2, 0)},
        {"G", "28x28 16->14x14 32 1x1 s2", 1, geometry(n, 28, 16, 14, 32, 1, 2, 0)},
        {"H", "14x14 32->7x7 64 1x1 s2", 1, geometry(n, 14, 32, 7, 64, 1, 2, 0)},
    };

    dnnl::engine eng(dnnl::engine::kind::cpu, 0);
    dnnl::stream strm(eng);
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    auto random = [&](size_t count) {
        std::vector<float> v(count);
        for (float& f : v) f = dist(rng);
        return v;
    };
    Totals step;
    std::printf("%-2s %-9s %8s %8s %8s %8s | %6s %6s %6s %6s | %6s %6s %6s | %-15s | %s\n", "", "pass", "gp ms",
                        "wany ms", "any ms", "core ms", "gp GF", "wany", "any", "core", "gp/wa", "gp/any", "gp/cor",
                        "rel diff wa any", "1st call ms gp wany any core");

    for (const Shape& s : shapes) {
        const Conv2dGeometry& g = s.g;
        const size_t xs = size_t(g.batch) * g.in_h * g.in_w * g.in_c, ws = size_t(g.out_c) * g.kernel_h * g.kernel_w * g.in_c,
                     ys = size_t(g.batch) * g.out_h * g.out_w * g.out_c;
        const double flops = 2.0 * ys * g.kernel_h * g.kernel_w * g.in_c;
        auto x = random(xs), w = random(ws), dy = random(ys);
        std::vector<float> gy(ys), gdx(xs), gdw(ws);  // gputrain's results
        std::vector<float> py(ys), pdx(xs), pdw(ws);  // oneDNN plain (created only)
        std::vector<float> wy(ys), wdx(xs), wdw(ws);  // oneDNN wany
        std::vector<float> ay(ys), adx(xs), adw(ws);  // oneDNN any
        const size_t wsb = be.conv2d_workspace_bytes(g);
        void* workspace = be.allocate_bytes(wsb);

        OneDnnConv plain(eng, strm, g, 0, x.data(), w.data(), py.data(), dy.data(), pdx.data(), pdw.data());
        OneDnnConv wany(eng, strm, g, 1, x.data(), w.data(), wy.data(), dy.data(), wdx.data(), wdw.data());
        OneDnnConv any(eng, strm, g, 2, x.data(), w.data(), ay.data(), dy.data(), adx.data(), adw.data());
        std::printf("%s: %s, batch %d, GEMM M=%d N=%d K=%d, %.3f GFLOP/pass; ResNet-20 has %d\n", s.name, s.what,
                    g.batch, g.batch * g.out_h * g.out_w, g.out_c, g.kernel_h * g.kernel_w * g.in_c, flops * 1e-9,
                    s.per_step);
        for (const OneDnnConv* c : {&plain, &wany, &any})
            std::printf("   oneDNN %-5s: %s | %s | %s  (3 primitives created in %.2f ms; reorders per pass %d/%d/%d)\n",
                        c->mode == 0 ? "plain" : c->mode == 1 ? "wany" : "any", c->fpd.impl_info_str(),
                        c->bdpd.impl_info_str(), c->bwpd.impl_info_str(), c->create_seconds * 1e3, c->reorders(0),
                        c->reorders(1), c->reorders(2));

        const std::function<void()> run[3][4] = {
            {[&] { be.conv2d_forward(g, x.data(), w.data(), gy.data(), workspace, wsb); }, [&] { wany.forward(); },
             [&] { any.forward(); }, [&] { any.forward(false); }},
            {[&] { be.conv2d_backward_data(g, dy.data(), w.data(), gdx.data(), workspace, wsb); },
             [&] { wany.backward_data(); }, [&] { any.backward_data(); }, [&] { any.backward_data(false); }},
            {[&] { be.conv2d_backward_filter(g, x.data(), dy.data(), gdw.data(), workspace, wsb); },
             [&] { wany.backward_weights(); }, [&] { any.backward_weights(); }, [&] { any.backward_weights(false); }},
        };
        const std::vector<float>* outs[3][3] = {{&gy, &wy, &ay}, {&gdx, &wdx, &adx}, {&gdw, &wdw, &adw}};
        for (int p = 0; p < 3; ++p) {
            double first[4];  // the first call of each (oneDNN's first execution allocates its scratchpad)
            for (int i = 0; i < 4; ++i) {
                const auto t = clk::now();
                run[p][i]();
                first[i] = seconds_since(t);
            }
            for (int i = 0; i < 4; ++i) run[p][i]();  // second warm-up
            std::vector<double> t[4];
            for (int r = 0; r < reps; ++r)
                for (int i = 0; i < 4; ++i) {
                    const auto t0 = clk::now();
                    run[p][i]();
                    t[i].push_back(seconds_since(t0));
                }
            double m[4];
            for (int i = 0; i < 4; ++i) m[i] = median(t[i]);
            std::printf("%-2s %-9s %8.2f %8.2f %8.2f %8.2f | %6.1f %6.1f %6.1f %6.1f | %6.2f %6.2f %6.2f | %.1e %.1e"
                        " | %.1f %.1f %.1f %.1f\n",
                        s.name, kPass[p], m[0] * 1e3, m[1] * 1e3, m[2] * 1e3, m[3] * 1e3, flops / m[0] * 1e-9,
                        flops / m[1] * 1e-9, flops / m[2] * 1e-9, flops / m[3] * 1e-9, m[0] / m[1], m[0] / m[2],
                        m[0] / m[3], rel_diff(*outs[p][1], *outs[p][0]), rel_diff(*outs[p][2], *outs[p][0]),
                        first[0] * 1e3, first[1] * 1e3, first[2] * 1e3, first[3] * 1e3);
            if (s.name[0] == 'E' && p == 1) continue;  // the stem's input needs no gradient
            step.gp += s.per_step * m[0];
            step.wany += s.per_step * m[1];
            step.any += s.per_step * m[2];
            step.core += s.per_step * m[3];
            step.best += s.per_step * std::min(m[0], m[1]);
        }
        be.release(workspace);
    }
    std::printf("ResNet-20 step, batch %d, all convs (fwd + bwd-weights + bwd-data except the stem's): gputrain %.1f ms, "
                "oneDNN wany %.1f ms, any+reorders %.1f ms, any core only %.1f ms, faster of gputrain/wany per "
                "layer-pass %.1f ms\n",
                n, step.gp * 1e3, step.wany * 1e3, step.any * 1e3, step.core * 1e3, step.best * 1e3);
    return 0;
}

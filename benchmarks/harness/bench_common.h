/* bench_common.h: shared by the timing harnesses of benchmarks/run.py (C and C++).
 *
 * A states file holds, little-endian: int32 nstates, nq, nv, then nstates*nq doubles q,
 * nstates*nv doubles v, nstates*nv doubles u (u is tau for forward dynamics and qdd for inverse
 * dynamics). Every harness has three modes:
 *   HARNESS STATES time R TARGET_MS [FUNC ...]  -> "SAMPLES FUNC ns ns ..." (R samples, ns per call)
 *   HARNESS STATES calls K FUNC                 -> exactly K calls of FUNC (states cycled); for callgrind
 *   HARNESS STATES check                        -> "OUT FUNC x0 x1 ..." results at state 0
 * One sample = ITERS passes over all states, ITERS chosen so that a sample lasts >= TARGET_MS.
 */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct { int ns, nq, nv; double *q, *v, *u; } bench_states;

static bench_states bench_read_states(const char *path)
{
    bench_states st;
    int hdr[3];
    FILE *fh = fopen(path, "rb");
    if (!fh || fread(hdr, sizeof(int), 3, fh) != 3) { fprintf(stderr, "cannot read %s\n", path); exit(2); }
    st.ns = hdr[0]; st.nq = hdr[1]; st.nv = hdr[2];
    st.q = (double *)malloc(sizeof(double) * (size_t)st.ns * st.nq);
    st.v = (double *)malloc(sizeof(double) * (size_t)st.ns * st.nv);
    st.u = (double *)malloc(sizeof(double) * (size_t)st.ns * st.nv);
    if (fread(st.q, sizeof(double), (size_t)st.ns * st.nq, fh) != (size_t)st.ns * st.nq
        || fread(st.v, sizeof(double), (size_t)st.ns * st.nv, fh) != (size_t)st.ns * st.nv
        || fread(st.u, sizeof(double), (size_t)st.ns * st.nv, fh) != (size_t)st.ns * st.nv) {
        fprintf(stderr, "short states file %s\n", path); exit(2);
    }
    fclose(fh);
    return st;
}

static double bench_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void bench_print_samples(const char *label, const double *x, int R, long iters)
{
    int r;
    printf("SAMPLES %s %ld", label, iters);
    for (r = 0; r < R; r++) printf(" %.4f", x[r]);
    printf("\n");
    fflush(stdout);
}

static void bench_print_out(const char *label, const double *x, int n)
{
    int k;
    printf("OUT %s", label);
    for (k = 0; k < n; k++) printf(" %.17g", x[k]);
    printf("\n");
}

/* Times BODY (which may use the state index `s`) over all NS states: two warm-up passes, a
 * calibration pass, then R samples of ITERS passes each; prints ns per call. */
#define BENCH_TIME(LABEL, R, TARGET_NS, NS, BODY) do {                                   \
    int s; long bi_, it_; int r_; double t0_, pass_, *x_;                                  \
    for (r_ = 0; r_ < 2; r_++) for (s = 0; s < (NS); s++) { BODY; }                        \
    t0_ = bench_now_ns();                                                                  \
    for (s = 0; s < (NS); s++) { BODY; }                                                   \
    pass_ = bench_now_ns() - t0_;                                                          \
    it_ = pass_ > 0 ? (long)((TARGET_NS) / pass_) : 1;                                     \
    if (it_ < 1) it_ = 1;                                                                  \
    x_ = (double *)malloc(sizeof(double) * (R));                                           \
    for (r_ = 0; r_ < (R); r_++) {                                                         \
        t0_ = bench_now_ns();                                                              \
        for (bi_ = 0; bi_ < it_; bi_++) for (s = 0; s < (NS); s++) { BODY; }               \
        x_[r_] = (bench_now_ns() - t0_) / ((double)it_ * (NS));                            \
    }                                                                                      \
    bench_print_samples(LABEL, x_, (R), it_);                                              \
    free(x_);                                                                              \
} while (0)

/* Exactly K calls of BODY, cycling through the NS states (K = 0: none). */
#define BENCH_CALLS(K, NS, BODY) do {                                                      \
    long k_; int s;                                                                        \
    for (k_ = 0; k_ < (K); k_++) { s = (int)(k_ % (NS)); BODY; }                           \
} while (0)

/* argv handling shared by the harnesses */
typedef struct { int mode; int R; double target_ns; long K; int nfunc; char **funcs; } bench_args;
enum { BENCH_TIME_MODE = 1, BENCH_CALLS_MODE = 2, BENCH_CHECK_MODE = 3 };

static bench_args bench_parse(int argc, char **argv)
{
    bench_args a;
    memset(&a, 0, sizeof a);
    if (argc >= 5 && strcmp(argv[2], "time") == 0) {
        a.mode = BENCH_TIME_MODE; a.R = atoi(argv[3]); a.target_ns = atof(argv[4]) * 1e6;
        a.nfunc = argc - 5; a.funcs = argv + 5;
    } else if (argc == 5 && strcmp(argv[2], "calls") == 0) {
        a.mode = BENCH_CALLS_MODE; a.K = atol(argv[3]); a.nfunc = 1; a.funcs = argv + 4;
    } else if (argc == 3 && strcmp(argv[2], "check") == 0) {
        a.mode = BENCH_CHECK_MODE;
    } else {
        fprintf(stderr, "usage: %s STATES time R TARGET_MS [FUNC...] | calls K FUNC | check\n", argv[0]);
        exit(2);
    }
    return a;
}

/* in time mode with no FUNC given, every function is wanted */
static int bench_wants(const bench_args *a, const char *f)
{
    int k;
    if (a->nfunc == 0) return 1;
    for (k = 0; k < a->nfunc; k++) if (strcmp(a->funcs[k], f) == 0) return 1;
    return 0;
}
#endif

/* mujoco_bench.c: the MuJoCo timing harness of benchmarks/run.py (C, against the wheel's
 * mujoco/include and libmujoco.so). Usage: mujoco_bench MODEL.mjb STATES time|calls|check ...
 * run.py writes MODEL.mjb with contacts, constraints, limits, springs, dampers and actuation
 * disabled. Every timed call first copies the state into mjData (qpos, qvel and qfrc_applied or
 * qacc), as a caller of MuJoCo must. FUNC:
 *   forward  mj_forward (the whole smooth pipeline, qfrc_applied = tau)          -> qacc
 *   fd_min   mj_kinematics, mj_comPos, mj_makeM, mj_factorM, mj_comVel,
 *            mj_rne(flg_acc=0), mj_solveM(tau - qfrc_bias)                        -> qacc
 *   inverse  mj_inverse                                                          -> qfrc_inverse
 *   id_min   mj_kinematics, mj_comPos, mj_comVel, mj_rne(flg_acc=1)              -> M qacc + bias
 *   M        mj_kinematics, mj_comPos, mj_makeM (sparse M; mj_fullM not timed)   -> M
 *   h        mj_kinematics, mj_comPos, mj_comVel, mj_rne(flg_acc=0)              -> qfrc_bias
 */
#include "bench_common.h"
#include <mujoco/mujoco.h>

static const mjModel *m;
static mjData *d;
static double *tmp, *res;

static void set_q(const bench_states *st, int s) { memcpy(d->qpos, st->q + (size_t)s * m->nq, sizeof(double) * m->nq); }
static void set_v(const bench_states *st, int s) { memcpy(d->qvel, st->v + (size_t)s * m->nv, sizeof(double) * m->nv); }

static void f_forward(const bench_states *st, int s)
{
    set_q(st, s); set_v(st, s);
    memcpy(d->qfrc_applied, st->u + (size_t)s * m->nv, sizeof(double) * m->nv);
    mj_forward(m, d);
}

static void f_fd_min(const bench_states *st, int s)
{
    int k;
    const double *tau = st->u + (size_t)s * m->nv;
    set_q(st, s); set_v(st, s);
    mj_kinematics(m, d); mj_comPos(m, d); mj_makeM(m, d); mj_factorM(m, d);
    mj_comVel(m, d); mj_rne(m, d, 0, d->qfrc_bias);
    for (k = 0; k < m->nv; k++) tmp[k] = tau[k] - d->qfrc_bias[k];
    mj_solveM(m, d, d->qacc, tmp, 1);
}

static void f_inverse(const bench_states *st, int s)
{
    set_q(st, s); set_v(st, s);
    memcpy(d->qacc, st->u + (size_t)s * m->nv, sizeof(double) * m->nv);
    mj_inverse(m, d);
}

static void f_id_min(const bench_states *st, int s)
{
    set_q(st, s); set_v(st, s);
    memcpy(d->qacc, st->u + (size_t)s * m->nv, sizeof(double) * m->nv);
    mj_kinematics(m, d); mj_comPos(m, d); mj_comVel(m, d); mj_rne(m, d, 1, res);
}

static void f_M(const bench_states *st, int s)
{
    set_q(st, s);
    mj_kinematics(m, d); mj_comPos(m, d); mj_makeM(m, d);
}

static void f_h(const bench_states *st, int s)
{
    set_q(st, s); set_v(st, s);
    mj_kinematics(m, d); mj_comPos(m, d); mj_comVel(m, d); mj_rne(m, d, 0, d->qfrc_bias);
}

typedef void (*bench_fn)(const bench_states *, int);
static const char *names[] = {"forward", "fd_min", "inverse", "id_min", "M", "h"};
static bench_fn fns[] = {f_forward, f_fd_min, f_inverse, f_id_min, f_M, f_h};

int main(int argc, char **argv)
{
    int k;
    bench_args a;
    bench_states st;
    if (argc < 4) { fprintf(stderr, "usage: mujoco_bench MODEL.mjb STATES ...\n"); return 2; }
    m = mj_loadModel(argv[1], NULL);
    if (!m) { fprintf(stderr, "cannot load %s\n", argv[1]); return 2; }
    d = mj_makeData(m);
    a = bench_parse(argc - 1, argv + 1);
    st = bench_read_states(argv[2]);
    if (st.nq != m->nq || st.nv != m->nv) { fprintf(stderr, "state size mismatch\n"); return 2; }
    tmp = (double *)calloc(m->nv, sizeof(double));
    res = (double *)calloc(m->nv, sizeof(double));
    if (a.mode == BENCH_TIME_MODE) {
        for (k = 0; k < 6; k++)
            if (bench_wants(&a, names[k])) { bench_fn f = fns[k]; BENCH_TIME(names[k], a.R, a.target_ns, st.ns, f(&st, s)); }
    } else if (a.mode == BENCH_CALLS_MODE) {
        for (k = 0; k < 6; k++) if (strcmp(a.funcs[0], names[k]) == 0) break;
        if (k == 6) { fprintf(stderr, "unknown function %s\n", a.funcs[0]); return 2; }
        { bench_fn f = fns[k]; BENCH_CALLS(a.K, st.ns, f(&st, s)); }
        printf("DONE %ld\n", a.K);
    } else {
        double *M = (double *)calloc((size_t)m->nv * m->nv, sizeof(double));
        f_forward(&st, 0); bench_print_out("forward", d->qacc, m->nv);
        f_fd_min(&st, 0); bench_print_out("fd_min", d->qacc, m->nv);
        f_inverse(&st, 0); bench_print_out("inverse", d->qfrc_inverse, m->nv);
        f_id_min(&st, 0); bench_print_out("id_min", res, m->nv);
        f_M(&st, 0); mj_fullM(m, d, M); bench_print_out("M", M, m->nv * m->nv);
        f_h(&st, 0); bench_print_out("h", d->qfrc_bias, m->nv);
        free(M);
    }
    mj_deleteData(d);
    return 0;
}

// pin_bench.cpp: the Pinocchio timing harness of benchmarks/run.py, one translation unit of
// header-only Pinocchio compiled -O3 -march=native (splitting it into several units made the
// total compile time about 3x longer, each unit re-instantiating the joint visitors).
//
// It builds a Pinocchio model from the description that benchmarks/run.py exports
// from the Python-built model (pin.buildModelFromUrdf or the RC chain), then times
//   aba_local, aba_world, rnea, crba_local, crba_world, nle
// and, where the model file lists frames (the frames of scleron's frame_names, in that order),
//   fk_frames         forwardKinematics + updateFramePlacements
//   jac_frames_lwa    computeJointJacobians + getFrameJacobian(LOCAL_WORLD_ALIGNED) of every listed frame
//   jac_frames_local  the same, LOCAL
//   jcom              jacobianCenterOfMass
//   cmap              computeCentroidalMap (the centroidal momentum matrix Ag)
// and the derivatives (issue 11; named only by benchmarks/derivatives.py)
//   aba_derivs        computeABADerivatives (ddq, ddq_dq, ddq_dv, Minv)
//   rnea_derivs       computeRNEADerivatives (dtau_dq, dtau_dv, M)
//   minv              computeMinverse
// with the conventions of bench_common.h. Usage: pin_bench MODEL.txt STATES ...
//
// MODEL.txt: "njoints" then one line per joint (after the universe):
//   TYPE PARENT R00 R01 R02 R10 R11 R12 R20 R21 R22 T0 T1 T2 AX AY AZ MASS CX CY CZ IXX IXY IYY IXZ IYZ IZZ
// TYPE is Pinocchio's short name without "JointModel" (RX, RZ, PY, RUBZ, FreeFlyer,
// RevoluteUnaligned, PrismaticUnaligned, RevoluteUnboundedUnaligned).
// Optionally then "nframes" and one line per frame: NAME PARENT_JOINT R00 ... R22 T0 T1 T2
// (its placement in the parent joint's frame; added with Model::addFrame as OP_FRAME).
#include <pinocchio/multibody.hpp>
#include <pinocchio/algorithm/aba.hpp>
#include <pinocchio/algorithm/rnea.hpp>
#include <pinocchio/algorithm/crba.hpp>
#include <pinocchio/algorithm/kinematics.hpp>
#include <pinocchio/algorithm/frames.hpp>
#include <pinocchio/algorithm/jacobian.hpp>
#include <pinocchio/algorithm/center-of-mass.hpp>
#include <pinocchio/algorithm/centroidal.hpp>
#include <pinocchio/algorithm/aba-derivatives.hpp>
#include <pinocchio/algorithm/rnea-derivatives.hpp>
#include <vector>

using ConstMap = Eigen::Map<const Eigen::VectorXd>;

void run_aba(const pinocchio::Model &model, pinocchio::Data &data, const double *q,
             const double *v, const double *tau, bool world)
{
    ConstMap Q(q, model.nq), V(v, model.nv), T(tau, model.nv);
    pinocchio::aba(model, data, Q, V, T,
                   world ? pinocchio::Convention::WORLD : pinocchio::Convention::LOCAL);
}

void run_rnea(const pinocchio::Model &model, pinocchio::Data &data, const double *q,
              const double *v, const double *a)
{
    ConstMap Q(q, model.nq), V(v, model.nv), A(a, model.nv);
    pinocchio::rnea(model, data, Q, V, A);
}

void run_nle(const pinocchio::Model &model, pinocchio::Data &data, const double *q, const double *v)
{
    ConstMap Q(q, model.nq), V(v, model.nv);
    pinocchio::nonLinearEffects(model, data, Q, V);
}

void run_crba(const pinocchio::Model &model, pinocchio::Data &data, const double *q, bool world)
{
    ConstMap Q(q, model.nq);
    pinocchio::crba(model, data, Q,
                    world ? pinocchio::Convention::WORLD : pinocchio::Convention::LOCAL);
}

void run_fk_frames(const pinocchio::Model &model, pinocchio::Data &data, const double *q)
{
    ConstMap Q(q, model.nq);
    pinocchio::forwardKinematics(model, data, Q);
    pinocchio::updateFramePlacements(model, data);
}

// J[k] (6 x nv, zeroed once by the caller: getFrameJacobian writes the columns of the frame's
// support only) of every listed frame
void run_frame_jacobians(const pinocchio::Model &model, pinocchio::Data &data, const double *q,
                         const std::vector<pinocchio::FrameIndex> &frames,
                         std::vector<pinocchio::Data::Matrix6x> &J, bool local)
{
    ConstMap Q(q, model.nq);
    pinocchio::computeJointJacobians(model, data, Q);
    const pinocchio::ReferenceFrame rf = local ? pinocchio::LOCAL : pinocchio::LOCAL_WORLD_ALIGNED;
    for (std::size_t k = 0; k < frames.size(); k++)
        pinocchio::getFrameJacobian(model, data, frames[k], rf, J[k]);
}

void run_jcom(const pinocchio::Model &model, pinocchio::Data &data, const double *q)
{
    ConstMap Q(q, model.nq);
    pinocchio::jacobianCenterOfMass(model, data, Q);
}
void run_cmap(const pinocchio::Model &model, pinocchio::Data &data, const double *q)
{
    ConstMap Q(q, model.nq);
    pinocchio::computeCentroidalMap(model, data, Q);
}

void run_aba_derivatives(const pinocchio::Model &model, pinocchio::Data &data, const double *q,
                         const double *v, const double *tau)
{
    ConstMap Q(q, model.nq), V(v, model.nv), T(tau, model.nv);
    pinocchio::computeABADerivatives(model, data, Q, V, T);
}

void run_rnea_derivatives(const pinocchio::Model &model, pinocchio::Data &data, const double *q,
                          const double *v, const double *a)
{
    ConstMap Q(q, model.nq), V(v, model.nv), A(a, model.nv);
    pinocchio::computeRNEADerivatives(model, data, Q, V, A);
}

void run_minv(const pinocchio::Model &model, pinocchio::Data &data, const double *q)
{
    ConstMap Q(q, model.nq);
    pinocchio::computeMinverse(model, data, Q);
}
extern "C" {
#include "bench_common.h"
}
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>

using namespace pinocchio;

static JointModel make_joint(const std::string &type, const Eigen::Vector3d &axis)
{
    if (type == "RX") return JointModelRX();
    if (type == "RY") return JointModelRY();
    if (type == "RZ") return JointModelRZ();
    if (type == "PX") return JointModelPX();
    if (type == "PY") return JointModelPY();
    if (type == "PZ") return JointModelPZ();
    if (type == "RUBX") return JointModelRUBX();
    if (type == "RUBY") return JointModelRUBY();
    if (type == "RUBZ") return JointModelRUBZ();
    if (type == "FreeFlyer") return JointModelFreeFlyer();
    if (type == "RevoluteUnaligned") return JointModelRevoluteUnaligned(axis);
    if (type == "PrismaticUnaligned") return JointModelPrismaticUnaligned(axis);
    if (type == "RevoluteUnboundedUnaligned") return JointModelRevoluteUnboundedUnaligned(axis);
    throw std::runtime_error("unsupported joint type " + type);
}

static SE3 read_placement(std::istream &in)
{
    double R[9], t[3];
    for (double &x : R) in >> x;
    for (double &x : t) in >> x;
    Eigen::Matrix3d Rm;
    Rm << R[0], R[1], R[2], R[3], R[4], R[5], R[6], R[7], R[8];
    return SE3(Rm, Eigen::Vector3d(t[0], t[1], t[2]));
}

static Model read_model(const char *path, std::vector<FrameIndex> &frames)
{
    std::ifstream in(path);
    if (!in) throw std::runtime_error(std::string("cannot open ") + path);
    int nj;
    in >> nj;
    Model model;
    for (int j = 0; j < nj; j++) {
        std::string type;
        int parent;
        double R[9], t[3], ax[3], mass, c[3], I[6];
        in >> type >> parent;
        for (double &x : R) in >> x;
        for (double &x : t) in >> x;
        for (double &x : ax) in >> x;
        in >> mass;
        for (double &x : c) in >> x;
        for (double &x : I) in >> x;
        if (!in) throw std::runtime_error("bad model file");
        Eigen::Matrix3d Rm;
        Rm << R[0], R[1], R[2], R[3], R[4], R[5], R[6], R[7], R[8];
        SE3 placement(Rm, Eigen::Vector3d(t[0], t[1], t[2]));
        JointIndex id = model.addJoint((JointIndex)parent, make_joint(type, Eigen::Vector3d(ax[0], ax[1], ax[2])),
                                       placement, "joint" + std::to_string(j + 1));
        Inertia inertia(mass, Eigen::Vector3d(c[0], c[1], c[2]), Symmetric3(I[0], I[1], I[2], I[3], I[4], I[5]));
        model.appendBodyToJoint(id, inertia, SE3::Identity());
    }
    int nf = 0;
    if (in >> nf) {
        for (int k = 0; k < nf; k++) {
            std::string name;
            int parent;
            in >> name >> parent;
            SE3 placement = read_placement(in);
            if (!in) throw std::runtime_error("bad frame line in model file");
            frames.push_back(model.addFrame(Frame(name, (JointIndex)parent, placement, OP_FRAME)));
        }
    }
    return model;
}

// a matrix's entries appended row by row
// a matrix of which Pinocchio fills the upper triangle (M, Minv), made symmetric
static Eigen::MatrixXd symmetric_from_upper(const Eigen::MatrixXd &m)
{
    Eigen::MatrixXd s = m;
    s.triangularView<Eigen::StrictlyLower>() = m.transpose().triangularView<Eigen::StrictlyLower>();
    return s;
}

template <typename Mat>
static void append_row_major(std::vector<double> &buf, const Mat &m);

// "OUT label" with A, B and the symmetric matrix of C's upper triangle, each row-major
template <typename MatA, typename MatB>
static void print_three(const char *label, const MatA &A, const MatB &B, const Eigen::MatrixXd &C_upper)
{
    std::vector<double> buf;
    append_row_major(buf, A);
    append_row_major(buf, B);
    append_row_major(buf, symmetric_from_upper(C_upper));
    bench_print_out(label, buf.data(), (int)buf.size());
}

template <typename Mat>
static void append_row_major(std::vector<double> &buf, const Mat &m)
{
    for (Eigen::Index r = 0; r < m.rows(); r++)
        for (Eigen::Index c = 0; c < m.cols(); c++) buf.push_back(m(r, c));
}

int main(int argc, char **argv)
{
    if (argc < 4) { std::cerr << "usage: pin_bench MODEL STATES time|calls|check ...\n"; return 2; }
    std::vector<FrameIndex> frames;
    Model model = read_model(argv[1], frames);
    Data data(model);                       // after the frames: data.oMf has one entry per frame
    bench_args a = bench_parse(argc - 1, argv + 1);
    bench_states st = bench_read_states(argv[2]);
    if (st.nq != model.nq || st.nv != model.nv) { std::cerr << "state size mismatch\n"; return 2; }
    const int nq = st.nq, nv = st.nv, NS = st.ns;
    const double *Q = st.q, *V = st.v, *U = st.u;

#define P_Q (Q + (size_t)s * nq)
#define P_V (V + (size_t)s * nv)
#define P_U (U + (size_t)s * nv)
#define CALL_ABA_L run_aba(model, data, P_Q, P_V, P_U, false)
#define CALL_ABA_W run_aba(model, data, P_Q, P_V, P_U, true)
#define CALL_RNEA run_rnea(model, data, P_Q, P_V, P_U)
#define CALL_CRBA_L run_crba(model, data, P_Q, false)
#define CALL_CRBA_W run_crba(model, data, P_Q, true)
#define CALL_NLE run_nle(model, data, P_Q, P_V)
    const bool have_frames = !frames.empty();
    std::vector<Data::Matrix6x> Jf(frames.size(), Data::Matrix6x::Zero(6, model.nv));
#define CALL_FK_FRAMES run_fk_frames(model, data, P_Q)
#define CALL_JAC_LWA run_frame_jacobians(model, data, P_Q, frames, Jf, false)
#define CALL_JAC_LOCAL run_frame_jacobians(model, data, P_Q, frames, Jf, true)
#define CALL_JCOM run_jcom(model, data, P_Q)
#define CALL_CMAP run_cmap(model, data, P_Q)
#define CALL_ABA_D run_aba_derivatives(model, data, P_Q, P_V, P_U)
#define CALL_RNEA_D run_rnea_derivatives(model, data, P_Q, P_V, P_U)
#define CALL_MINV run_minv(model, data, P_Q)

    if (a.mode == BENCH_TIME_MODE) {
        if (bench_wants(&a, "aba_local")) BENCH_TIME("aba_local", a.R, a.target_ns, NS, CALL_ABA_L);
        if (bench_wants(&a, "aba_world")) BENCH_TIME("aba_world", a.R, a.target_ns, NS, CALL_ABA_W);
        if (bench_wants(&a, "rnea")) BENCH_TIME("rnea", a.R, a.target_ns, NS, CALL_RNEA);
        if (bench_wants(&a, "crba_local")) BENCH_TIME("crba_local", a.R, a.target_ns, NS, CALL_CRBA_L);
        if (bench_wants(&a, "crba_world")) BENCH_TIME("crba_world", a.R, a.target_ns, NS, CALL_CRBA_W);
        if (bench_wants(&a, "nle")) BENCH_TIME("nle", a.R, a.target_ns, NS, CALL_NLE);
        if (bench_wants(&a, "aba_derivs")) BENCH_TIME("aba_derivs", a.R, a.target_ns, NS, CALL_ABA_D);
        if (bench_wants(&a, "rnea_derivs")) BENCH_TIME("rnea_derivs", a.R, a.target_ns, NS, CALL_RNEA_D);
        if (bench_wants(&a, "minv")) BENCH_TIME("minv", a.R, a.target_ns, NS, CALL_MINV);
        if (have_frames) {
            if (bench_wants(&a, "fk_frames")) BENCH_TIME("fk_frames", a.R, a.target_ns, NS, CALL_FK_FRAMES);
            if (bench_wants(&a, "jac_frames_lwa")) BENCH_TIME("jac_frames_lwa", a.R, a.target_ns, NS, CALL_JAC_LWA);
            if (bench_wants(&a, "jac_frames_local")) BENCH_TIME("jac_frames_local", a.R, a.target_ns, NS, CALL_JAC_LOCAL);
            if (bench_wants(&a, "jcom")) BENCH_TIME("jcom", a.R, a.target_ns, NS, CALL_JCOM);
            if (bench_wants(&a, "cmap")) BENCH_TIME("cmap", a.R, a.target_ns, NS, CALL_CMAP);
        }
    } else if (a.mode == BENCH_CALLS_MODE) {
        std::string f = a.funcs[0];
        if (f == "aba_local") BENCH_CALLS(a.K, NS, CALL_ABA_L);
        else if (f == "aba_world") BENCH_CALLS(a.K, NS, CALL_ABA_W);
        else if (f == "rnea") BENCH_CALLS(a.K, NS, CALL_RNEA);
        else if (f == "crba_local") BENCH_CALLS(a.K, NS, CALL_CRBA_L);
        else if (f == "crba_world") BENCH_CALLS(a.K, NS, CALL_CRBA_W);
        else if (f == "nle") BENCH_CALLS(a.K, NS, CALL_NLE);
        else if (f == "aba_derivs") BENCH_CALLS(a.K, NS, CALL_ABA_D);
        else if (f == "rnea_derivs") BENCH_CALLS(a.K, NS, CALL_RNEA_D);
        else if (f == "minv") BENCH_CALLS(a.K, NS, CALL_MINV);
        else if (have_frames && f == "fk_frames") BENCH_CALLS(a.K, NS, CALL_FK_FRAMES);
        else if (have_frames && f == "jac_frames_lwa") BENCH_CALLS(a.K, NS, CALL_JAC_LWA);
        else if (have_frames && f == "jac_frames_local") BENCH_CALLS(a.K, NS, CALL_JAC_LOCAL);
        else if (have_frames && f == "jcom") BENCH_CALLS(a.K, NS, CALL_JCOM);
        else if (have_frames && f == "cmap") BENCH_CALLS(a.K, NS, CALL_CMAP);
        else { std::cerr << "unknown function " << f << "\n"; return 2; }
        printf("DONE %ld\n", a.K);
    } else {
        int s = 0;
        Eigen::MatrixXd M;
        CALL_ABA_L; bench_print_out("aba_local", data.ddq.data(), nv);
        CALL_ABA_W; bench_print_out("aba_world", data.ddq.data(), nv);
        CALL_RNEA; bench_print_out("rnea", data.tau.data(), nv);
        /* Pinocchio fills M's upper triangle; symmetric, so col-major = row-major */
        CALL_CRBA_L; M = symmetric_from_upper(data.M); bench_print_out("crba_local", M.data(), nv * nv);
        CALL_CRBA_W; M = symmetric_from_upper(data.M); bench_print_out("crba_world", M.data(), nv * nv);
        CALL_NLE; bench_print_out("nle", data.nle.data(), nv);
        // the derivatives, row-major: two full matrices and one of which Pinocchio fills the upper triangle
        CALL_ABA_D; print_three("aba_derivs", data.ddq_dq, data.ddq_dv, data.Minv);
        CALL_RNEA_D; print_three("rnea_derivs", data.dtau_dq, data.dtau_dv, data.M);
        CALL_MINV; M = symmetric_from_upper(data.Minv); bench_print_out("minv", M.data(), nv * nv);
        if (have_frames) {          // row-major, Pinocchio's row order ([v; w] for the Jacobians)
            std::vector<double> buf;
            CALL_FK_FRAMES;
            for (FrameIndex id : frames) append_row_major(buf, data.oMf[id].toHomogeneousMatrix());
            bench_print_out("fk_frames", buf.data(), (int)buf.size());
            buf.clear();
            CALL_JAC_LWA;
            for (const auto &J : Jf) append_row_major(buf, J);
            bench_print_out("jac_frames_lwa", buf.data(), (int)buf.size());
            buf.clear();
            CALL_JAC_LOCAL;
            for (const auto &J : Jf) append_row_major(buf, J);
            bench_print_out("jac_frames_local", buf.data(), (int)buf.size());
            buf.clear();
            CALL_JCOM;
            append_row_major(buf, data.Jcom);
            bench_print_out("jcom", buf.data(), (int)buf.size());
            buf.clear();
            CALL_CMAP;
            append_row_major(buf, data.Ag);
            bench_print_out("cmap", buf.data(), (int)buf.size());
        }
    }
    return 0;
}

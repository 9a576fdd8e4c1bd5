"""One time step of the dynamics and its Jacobians: the discrete dynamics x' = f(x, u) an MPC or
trajectory optimiser rolls out and linearises at every node, written once like the recursions.

The step is the semi-implicit (symplectic) Euler step of Crocoddyl's IntegratedActionModelEuler,
on each joint's configuration manifold (quaternions: exp):
    qdd  = FD(q, qd, tau)
    qd'  = qd + dt qdd
    q'   = q (+) qd' dt                                    (configuration.integrate)
Its Jacobians, with the state x = (q, qd) in the tangent space (nv + nv columns, Pinocchio's and
Crocoddyl's convention) and u = tau, by the chain rule through the analytical derivatives:
    dqd'/dx  = [dt dqdd/dq, I + dt dqdd/dqd]               dqd'/dtau = dt M^-1
    dq'/dx   = [I_q + J_v dt dqdd/dq, J_v (I + dt dqdd/dqd)]   dq'/dtau = J_v dt M^-1
with I_q = d(q (+) w)/dq and J_v = d(q (+) qd' dt)/dqd' (configuration.integrate_jacobians,
block-diagonal per joint, so the products cost the joints' blocks only). Sueda §3.4 builds its
linearly implicit integrator on the same derivatives (scleron.simulate)."""
from . import configuration, derivatives, frames, recursions
from .derivatives import square


def euler_step(tree, alg, q, qd, tau, dt):
    """(q', qd') after one semi-implicit Euler step of length dt."""
    qdd = recursions.forward_dynamics(tree, alg, q, qd, tau)
    return _advance(tree, alg, q, qd, qdd, dt)


def _advance(tree, alg, q, qd, qdd, dt):
    alg.section("Euler step: qd' = qd + dt qdd, q' = q (+) qd' dt")
    qd_next = [v + dt[0] * a for v, a in zip(qd, qdd)]
    return configuration.integrate(tree, alg, q, qd_next, dt), qd_next


def euler_step_derivatives(tree, alg, q, qd, tau, dt):
    """(Fx, Fu): d(q', qd')/d(q, qd), 2nv x 2nv, and d(q', qd')/dtau, 2nv x nv, row-major;
    rows and q columns in the tangent space."""
    Fx, lift, Minv = step_jacobians(tree, alg, q, qd, tau, dt,
                                    derivatives.forward_dynamics_derivatives(tree, alg, q, qd, tau))
    return Fx, lift(Minv)


def step_jacobians(tree, alg, q, qd, tau, dt, fd_derivatives, qdd=None):
    """(Fx, lift, M^-1) from the forward dynamics' derivatives at (q, qd, tau) on this tree (its
    wrenches): lift(X) = d(q', qd')/du of a control u with dqdd/du = X (Fu = lift(M^-1)). qdd:
    the forward dynamics there, else the derivatives' own (derivative_accelerations). The
    chained form's C loop (templates/chainrule.c.j2, chain_rule_blocks) runs these same
    products row by row."""
    h = dt[0]
    da_dq, da_dqd, Minv = fd_derivatives
    if qdd is None:
        qdd = derivatives.derivative_accelerations(tree, alg, q, qd, tau)
    _, qd_next = _advance(tree, alg, q, qd, qdd, dt)
    alg.section("Euler step derivatives: the chain rule through q (+) qd' dt")
    Iq, Jv = configuration.integrate_jacobians(tree, alg, q, qd_next, dt)
    dv_dq = [[h * x for x in row] for row in da_dq]
    dv_dqd = [[(1.0 if r == c else 0.0) + h * x for c, x in enumerate(row)]
              for r, row in enumerate(da_dqd)]
    dq_dq = [[a + b for a, b in zip(ra, rb)] for ra, rb in zip(Iq, block_product(tree, Jv, dv_dq))]
    dq_dqd = block_product(tree, Jv, dv_dqd)
    Fx = [a + b for a, b in zip(dq_dq, dq_dqd)] + [a + b for a, b in zip(dv_dq, dv_dqd)]

    def lift(X):
        dv = [[h * x for x in row] for row in X]
        return block_product(tree, Jv, dv) + dv
    return Fx, lift, Minv


def euler_step_derivatives_after_calls(tree, alg, q, qd, tau, dt, da_dq, da_dqd, Minv, qdd):
    """euler_step_derivatives from the forward dynamics' derivatives and q'' computed before
    (the chained form: the generated functions called first, their loop forms included)."""
    n = tree.nv
    Fx, lift, Minv = step_jacobians(tree, alg, q, qd, tau, dt,
                                    (square(da_dq, n), square(da_dqd, n), square(Minv, n)), qdd)
    return Fx, lift(Minv)


def chain_rule_blocks(tree, alg, q, qd, tau, dt, da_dq, da_dqd, Minv, qdd):
    """The chained form's loop data, from the forward dynamics computed before: each body's own
    blocks of I_q and J_v (integrate's Jacobians at qd' = qd + dt q'', block-diagonal), row by
    row, the bodies in order. The C loop (templates/chainrule.c.j2) then runs step_jacobians'
    chain rule on the called functions' arrays, in O(nv^2) loop work and no statement per entry
    (RC100's straight-line chain rule: 60,200 statements, 97 s of compiling; an outside
    tester)."""
    _, qd_next = _advance(tree, alg, q, qd, qdd, dt)
    alg.section("Euler step derivatives: integrate's Jacobians, for the chain rule's loop")
    Iq, Jv = configuration.integrate_jacobians(tree, alg, q, qd_next, dt)
    own = [range(b.v_start, b.v_start + b.dof) for b in tree.bodies]
    return {"Iq": [Iq[r][k] for rows in own for r in rows for k in rows],
            "Jv": [Jv[r][k] for rows in own for r in rows for k in rows]}


def euler_step_derivatives_fext_after_calls(tree, alg, q, qd, tau, dt, fext, da_dq, da_dqd,
                                            Minv, qdd, world_axes=False):
    """euler_step_derivatives_fext from the forward dynamics and their derivatives with the
    wrenches in the frames' axes, computed before (the chained form; with world_axes, called on
    derivatives.world_aligned_fext_before_calls' values, and d qdd/dq gains M^-1 C)."""
    n = tree.nv
    Minv, da_dq = square(Minv, n), square(da_dq, n)
    if world_axes:
        da_dq = derivatives.with_turning_columns(tree, alg, q, fext, da_dq, Minv)
    Fx, lift, Minv = step_jacobians(tree, alg, q, qd, tau, dt, (da_dq, square(da_dqd, n), Minv),
                                    qdd)
    reference = "local_world_aligned" if world_axes else "local"
    return Fx, lift(Minv), wrench_columns(tree, alg, q, Minv, lift, reference)


def euler_step_derivatives_fext(tree, alg, q, qd, tau, dt, fext, world_axes=False):
    """(Fx, Fu, Ff) of euler_step with the external wrenches fext on the frames (in their own
    axes, or with world_axes in world axes at their origins, frames.world_aligned_wrenches):
    Ff = d(q', qd')/d fext, 2nv x nwrenches x 6, the lift of dqdd/dfext_k = M^-1 J_k^T with J_k
    the frame's Jacobian in the reference fext is given in (tau = J_k^T fext_k is its power)."""
    if world_axes:
        local = frames.world_aligned_wrenches(tree, alg, q, fext)
        view = frames.with_external_wrenches(tree, alg, local)
        fdd = derivatives.forward_dynamics_derivatives_world_aligned_fext(tree, alg, q, qd, tau,
                                                                          fext)
    else:
        view = frames.with_external_wrenches(tree, alg, fext)
        fdd = derivatives.forward_dynamics_derivatives(view, alg, q, qd, tau)
    Fx, lift, Minv = step_jacobians(view, alg, q, qd, tau, dt, fdd)
    reference = "local_world_aligned" if world_axes else "local"
    return Fx, lift(Minv), wrench_columns(tree, alg, q, Minv, lift, reference)


def wrench_columns(tree, alg, q, Minv, lift, reference):
    """Ff = d(q', qd')/dfext (2nv x nwrenches x 6): the lift of dqdd/dfext_k = M^-1 J_k^T, J_k the
    frame's Jacobian in the reference fext is given in."""
    alg.section("Euler step derivatives: d/dfext = the lift of M^-1 J^T")
    tree = frames.on_wrench_frames(tree)                  # (the frames of fext's rows)
    Jt = [[J[i][c] for J in frames.frame_jacobians(tree, alg, q, reference) for i in range(6)]
          for c in range(tree.nv)]                                      # nv x 6 nwrenches
    Ff = lift([[sum((m * x for m, x in zip(row, col)), 0.0) for col in zip(*Jt)] for row in Minv])
    nf = len(tree.frames)
    return [[row[6 * k:6 * k + 6] for k in range(nf)] for row in Ff]


def block_product(tree, D, X):
    """D X for D block-diagonal by the bodies' coordinates (an integrate Jacobian): each row
    from its body's own dof x dof block."""
    out = [None] * tree.nv
    for b in tree.bodies:
        own = range(b.v_start, b.v_start + b.dof)
        for r in own:
            out[r] = [sum((D[r][k] * X[k][c] for k in own), 0.0) for c in range(len(X[0]))]
    return out

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
from . import configuration, derivatives, recursions


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
    h = dt[0]
    da_dq, da_dqd, Minv = derivatives.forward_dynamics_derivatives(tree, alg, q, qd, tau)
    qdd = derivatives.derivative_accelerations(tree, alg, q, qd, tau)
    _, qd_next = _advance(tree, alg, q, qd, qdd, dt)
    alg.section("Euler step derivatives: the chain rule through q (+) qd' dt")
    Iq, Jv = configuration.integrate_jacobians(tree, alg, q, qd_next, dt)
    dv_dq = [[h * x for x in row] for row in da_dq]
    dv_dqd = [[(1.0 if r == c else 0.0) + h * x for c, x in enumerate(row)]
              for r, row in enumerate(da_dqd)]
    dv_dtau = [[h * x for x in row] for row in Minv]
    dq_dq = [[a + b for a, b in zip(ra, rb)] for ra, rb in zip(Iq, block_product(tree, Jv, dv_dq))]
    dq_dqd = block_product(tree, Jv, dv_dqd)
    dq_dtau = block_product(tree, Jv, dv_dtau)
    Fx = [a + b for a, b in zip(dq_dq, dq_dqd)] + [a + b for a, b in zip(dv_dq, dv_dqd)]
    return Fx, dq_dtau + dv_dtau


def block_product(tree, D, X):
    """D X for D block-diagonal by the bodies' coordinates (an integrate Jacobian): each row
    from its body's own dof x dof block."""
    out = [None] * tree.nv
    for b in tree.bodies:
        own = range(b.v_start, b.v_start + b.dof)
        for r in own:
            out[r] = [sum((D[r][k] * X[k][c] for k in own), 0.0) for c in range(len(X[0]))]
    return out

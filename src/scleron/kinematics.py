"""Numeric forward kinematics: the world pose of every body for a configuration q.

One implementation, used by `scleron draw` and the tests (the generated frame_placements are
dynamics.frames, evaluated in the program algebra). The body frame of body i in the world is

    T_i = T_parent(i) · X_tree,i · Q_i(q_i)

with X_tree,i the joint's fixed placement (model.joints[i].origin) and Q_i(q_i) the joint's own
transform from the joint library, joint_model(type, params).R and .t (the same expressions the
generated code is derived from), lambdified once per joint type and parameters and evaluated
on numpy arrays, so N configurations cost one vectorised call per entry.

    world_poses(model, q)         -> (nbodies, 4, 4)
    world_poses(model, Q)         -> (N, nbodies, 4, 4)       for Q of shape (N, nq)
    Kinematics(model).frames(Q)   -> (joint frames, body frames); joint frame = T_parent X_tree
    joint_transform(type, params) -> Q(q) for N rows: (R (N, 3, 3), t (N, 3))

Imports model/ and joints/ only.
"""
from functools import lru_cache

import numpy as np

from .joints import joint_model
from .joints.library import freeze_params


def configuration(model, q=None):
    """q as a float array of length nq: the given values, else the model's initial q, else 0."""
    if q is None:
        q = model.q0 if getattr(model, "q0", None) is not None else model.neutral()
    try:
        q = np.asarray(q, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise ValueError(f"q must be {model.nq} numbers") from None
    if q.size != model.nq:
        names = model.coordinate_names()
        shown = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
        raise ValueError(f"q must have nq = {model.nq} numbers (in order: {shown}), got {q.size}")
    if not np.all(np.isfinite(q)):
        raise ValueError("q must be finite")
    return model.unit_quaternions(q, lambda problem: ValueError(f"q: {problem}"))


def homogeneous(R, t):
    """4x4 (or (N, 4, 4) for stacked R (N, 3, 3), t (N, 3)) homogeneous matrices
    [[R, t], [0, 1]]."""
    R, t = np.asarray(R, dtype=float), np.asarray(t, dtype=float)
    T = np.zeros(R.shape[:-2] + (4, 4))
    T[..., :3, :3] = R
    T[..., :3, 3] = t
    T[..., 3, 3] = 1.0
    return T


# --------------------------------------------------------------------------------------------------
# one joint: Q(q) for N coordinate rows

def joint_transform(jtype, params=None):
    """Q(q) of a joint type with parameters for N coordinate rows:
    f(Q (N, dof)) -> (R (N, 3, 3), t (N, 3)); the same values as joint_model(...).numeric("G")."""
    return _joint_transform_cached(jtype, freeze_params(params or {}))


@lru_cache(maxsize=None)
def _joint_transform_cached(jtype, frozen):
    jm = joint_model(jtype, frozen)
    if jm.nq == 0:
        return lambda Q: (np.broadcast_to(np.eye(3), (len(Q), 3, 3)).copy(), np.zeros((len(Q), 3)))
    if jm.light:                    # DAG-shaped entries (splines, ellipsoids): the library's own
        return _by_sample(jm)       # evaluator, which does not print them as trees
    return _lambdified(jm)


def _lambdified(jm):
    """Each entry of R and t lambdified on numpy columns; entries with the scalar
    series-guarded functions (exp coordinates near q = 0) are evaluated row by row."""
    import sympy as sp

    from .joints.special import GUARDED, numeric_namespace
    exprs = list(jm.R) + list(jm.t)
    guarded = tuple(GUARDED.values())
    mods = [numeric_namespace(), "numpy"]        # the library's special functions, numerically
    fns = []
    for e in exprs:
        f = sp.lambdify(jm.q, e, modules=mods)
        if guarded and e.has(*guarded):
            f = np.vectorize(f, otypes=[float])
        fns.append(f)

    def batch(Q):
        Q = np.asarray(Q, dtype=float).reshape(len(Q), jm.nq)
        cols = [Q[:, k] for k in range(jm.nq)]
        vals = np.empty((12, len(Q)))
        for i, fn in enumerate(fns):
            vals[i] = fn(*cols)             # constants broadcast
        return vals[:9].T.reshape(-1, 3, 3), vals[9:].T.copy()
    return batch


def _by_sample(jm):
    def batch(Q):
        G = np.array([jm.numeric("G", q) for q in np.asarray(Q, dtype=float)]).reshape(-1, 4, 4)
        return G[:, :3, :3], G[:, :3, 3]
    return batch


# --------------------------------------------------------------------------------------------------
# a tree

class Kinematics:
    """Forward kinematics of one model: the joint transforms are looked up once."""

    def __init__(self, model):
        self.model = model
        self.nq = model.nq
        self.parents = [model.parent_index(i) for i in range(len(model.bodies))]
        self.placements = [homogeneous(j.origin.rotation, j.origin.translation)
                           for j in model.joints]
        self.slices, k = [], 0
        for j in model.joints:              # a mimic joint has no coordinates in q of its own
            self.slices.append(slice(k, k + j.nq) if j.mimic is None else None)
            k += j.nq if j.mimic is None else 0
        index = {j.name: i for i, j in enumerate(model.joints)}
        # mimic joint i: q_i = a q_target + b (docs/mimic.md; the target mimics no other)
        self.mimics = {i: (index[j.mimic[0]], j.mimic[1], j.mimic[2])
                       for i, j in enumerate(model.joints) if j.mimic is not None}
        self.transforms = [joint_transform(j.type, j.params) for j in model.joints]

    def frames(self, Q):
        """(joint frames, body frames) in world coordinates, each (N, nbodies, 4, 4) for Q (N, nq)
        or (nbodies, 4, 4) for one q (nq,). Joint frame i = T_parent X_tree,i (where joint i sits),
        body frame i = joint frame i · Q_i(q_i)."""
        single = np.ndim(Q) == 1
        Q = np.atleast_2d(np.asarray(Q, dtype=float))
        if Q.shape[1] != self.nq:
            raise ValueError(f"q must have nq = {self.nq} columns, got {Q.shape[1]}")
        n, nb = Q.shape[0], len(self.parents)
        joint, body = np.empty((n, nb, 4, 4)), np.empty((n, nb, 4, 4))
        for i, (p, X, sl, f) in enumerate(zip(self.parents, self.placements, self.slices,
                                              self.transforms)):
            joint[:, i] = X if p < 0 else body[:, p] @ X
            if sl is None:
                target, a, b = self.mimics[i]
                R, t = f(a * Q[:, self.slices[target]] + b)
            else:
                R, t = f(Q[:, sl])
            body[:, i] = joint[:, i] @ homogeneous(R, t)
        return (joint[0], body[0]) if single else (joint, body)

    def poses(self, Q):
        """World pose of every body frame: (nbodies, 4, 4) for q, (N, nbodies, 4, 4) for Q."""
        return self.frames(Q)[1]

    def centres_of_mass(self, Q):
        """World centre of mass of every body: (nbodies, 3) or (N, nbodies, 3)."""
        T = self.poses(Q)
        com = np.array([b.inertia.com for b in self.model.bodies], dtype=float)
        return np.einsum("...bij,bj->...bi", T[..., :3, :3], com) + T[..., :3, 3]


def world_poses(model, q):
    """The world pose (4x4) of every body of `model` at q (nq,) -> (nbodies, 4, 4), or at
    N configurations Q (N, nq) -> (N, nbodies, 4, 4)."""
    return Kinematics(model).poses(q)

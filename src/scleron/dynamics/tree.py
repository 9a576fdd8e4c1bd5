"""The kinematic tree the recursions walk: for each body its parent, its constant placement,
its joint model (q, Q(q), S, Sdot from the joint library), its spatial inertia and the slice
of q it owns. Built from a Model; constant per model (per-call data lives in the recursions).
"""
from dataclasses import dataclass

import numpy as np

from ..joints import joint_model


@dataclass
class TreeBody:
    index: int
    name: str
    joint_name: str
    parent: int                  # -1: the world
    placement: tuple             # (R, t) as nested float lists; None when identity
    joint: object                # JointModel
    inertia: list                # 6x6 floats, S&G (5)
    q_start: int
    dof: int
    children: list
    stiffness: list = None       # per coordinate (Sueda 2.6), None: no spring
    damping: list = None         # per coordinate, None: no damper
    rest: list = None            # spring rest coordinates (default 0)
    wrench: list = None          # constant external wrench [n; f] in the body frame (S&G 21)


class Tree:
    def __init__(self, model):
        self.name = model.name
        self.gravity = [float(x) for x in model.gravity]
        self.bodies = []
        k = 0
        for i, (body, j) in enumerate(zip(model.bodies, model.joints)):
            jm = joint_model(j.type, j.params)
            X = j.origin
            placement = None
            if not X.is_identity(tol=0.0):
                placement = (_clean(X.rotation), [float(x) for x in X.translation])
            tb = TreeBody(i, body.name, j.name, model.parent_index(i), placement,
                          jm, _clean(body.inertia.spatial()), k, jm.dof, [])
            tb.stiffness = _floats(getattr(j, "stiffness", None), jm.dof)
            tb.damping = _floats(getattr(j, "damping", None), jm.dof)
            tb.rest = _floats(getattr(j, "rest", None), jm.dof) or [0.0] * jm.dof
            wrench = getattr(body, "wrench", None)
            tb.wrench = [float(x) for x in wrench] if wrench is not None and any(wrench) else None
            self.bodies.append(tb)
            k += jm.dof
        for b in self.bodies:
            if b.parent >= 0:
                self.bodies[b.parent].children.append(b.index)
        self.nv = k
        self.nq = k              # every joint's q has as many entries as its velocity

    @property
    def joint_names(self):
        return [b.joint_name for b in self.bodies]

    def coordinate_names(self):
        names = []
        for b in self.bodies:
            names += [b.joint_name] if b.dof == 1 else [f"{b.joint_name}[{k}]" for k in range(b.dof)]
        return names


def _floats(values, n):
    """Per-coordinate floats, or None when absent or all zero (nothing to add to the code)."""
    if values is None:
        return None
    out = [float(x) for x in values]
    if len(out) != n:
        raise ValueError(f"expected {n} values, got {len(out)}")
    return out if any(out) else None


def _clean(M, tol=1e-15):
    """Nested float lists with exact 0, 1, -1 where the entry is within tol of them, so that
    rotation matrices like Rx(90 deg) fold to permutations in the unrolled program."""
    M = np.asarray(M, dtype=float)
    out = M.copy()
    for target in (0.0, 1.0, -1.0):
        out[np.abs(M - target) <= tol] = target
    return out.tolist()

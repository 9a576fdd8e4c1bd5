"""The joint library. Each joint is defined only by its coordinates q and its transform
Q(q) = (R(q), t(q)) (the motion part; the constant placement X_tree comes from the model),
declared once per joint type in joints.registry. S and Sdot are derived from Q by sympy
(joints.symbolic), never typed in.

Joint models are cached by (type, parameters) and written in generic symbols, so a model with
100 identical hinges derives one hinge: generation stays linear in the number of bodies.
"""
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import sympy as sp

from ..algebra import FloatAlgebra
from .registry import joint_type
from .special import numeric_namespace
from .symbolic import (EXPAND_MAX_TERMS, Part, Tape, composite_kinematics, expansion_terms,
                       in_length_unit, length_unit, light_entry, motion_subspace,
                       motion_subspace_factored, motion_subspace_rate, product_transform,
                       simplify_entry, tree_size)

# Composite joints: the entries of S and Sdot of at most this many nodes (written out as trees)
# are simplified (exact zeros and constants come out); larger ones are left as built, sharing the
# products of the later parts (expanding them costs time and, in the generated code, operations).
COMPOSITE_SIMPLIFY_MAX_NODES = 32
# ... and a composite joint with an entry of R, t, S or Sdot larger than this is marked light
# (printed and evaluated through its shared subexpressions): as trees, the entries of a chain
# of rotations grow exponentially with the number of parts.
COMPOSITE_TREE_MAX_NODES = 4000


@dataclass
class JointModel:
    type: str
    params: dict
    q: tuple                         # sympy symbols, one per coordinate
    qd: tuple
    R: sp.Matrix                     # 3x3 rotation of Q(q)
    t: sp.Matrix                     # 3x1 translation of Q(q)
    coordinates: list                # what each coordinate means
    S: sp.Matrix = None              # 6 x d, derived
    Sdot: sp.Matrix = None           # 6 x d, derived
    Sdot_qd: sp.Matrix = None        # 6 x 1: Sdot * qd
    notes: str = ""
    light: bool = False              # derived on the light path (no expansion / trig reduction)
    _lambdas: dict = field(default_factory=dict, repr=False)
    _tape: tuple = field(default=None, repr=False, compare=False)   # (R, t, S, Sdot_qd, Tape)

    @property
    def dof(self):
        """Velocity coordinates (nv of the joint): the columns of S."""
        return len(self.qd)

    @property
    def nq(self):
        """Configuration entries: dof, or more for a quaternion joint (nq = 4 per rotation)."""
        return len(self.q)

    def derive(self, S=None, Sdot=None, simplify=simplify_entry, factors=None, simplify_twist=None):
        """S (S&G 9) and Sdot (S&G 12) from R, t; through the product rule when the transform
        is given as factors (joints.symbolic.motion_subspace_factored). `simplify` is applied
        to every entry (light_entry skips expansion and trig reduction for big joints),
        `simplify_twist` (default: simplify) to the factors' own twists."""
        self.light = simplify is light_entry
        twist = simplify_twist or simplify
        if S is None:
            # derived in the joint's own length unit, so chopping keeps a tiny joint's terms
            unit = sp.Integer(1) if self.light else length_unit(self.t, self.q)
            S = (motion_subspace_factored([f.scaled(1 / unit) for f in factors], self.q,
                                          simplify, twist) if factors is not None
                 else motion_subspace(self.R, self.t / unit, self.q, simplify))
            if Sdot is None:
                Sdot = motion_subspace_rate(S, self.q, self.qd, simplify)
                Sdot = in_length_unit(Sdot, unit)
            S = in_length_unit(S, unit)
        self.S = S
        self.Sdot = (Sdot if Sdot is not None
                     else motion_subspace_rate(self.S, self.q, self.qd, simplify))
        def expand(e):                  # expanded where small (zeros and constants come out)
            if simplify is light_entry or expansion_terms(e) > EXPAND_MAX_TERMS:
                return e
            return sp.expand(e)
        self.Sdot_qd = sp.Matrix([expand(e) for e in self.Sdot * sp.Matrix(self.qd)]) \
            if self.q else sp.zeros(6, 1)
        return self

    def printable(self, what):
        """(replacements, matrix) for showing R, t, S, Sdot or G: ([], the matrix) for joints
        simplified entry by entry, and a common-subexpression form (sympy.cse: [(x0, e0), ...]
        and the matrix in x0, x1, ...) for joints derived on the light path, whose entries are
        DAGs that would print exponentially long as trees (spline joints, ellipsoid contacts)."""
        M = {"R": self.R, "t": self.t, "S": self.S, "Sdot": self.Sdot,
             "G": sp.Matrix(sp.BlockMatrix([[self.R, self.t],
                                            [sp.zeros(1, 3), sp.ones(1, 1)]]))}[what]
        if not self.light:
            return [], M
        reps, (reduced,) = sp.cse([M], symbols=sp.numbered_symbols("x"), order="none")  # (show.py)
        return reps, reduced

    def kinematics(self, alg, q_vals, qd_vals):
        """R, t, S and Sdot*qd of this joint evaluated in an algebra (nested lists): what an
        Evaluator gives, replayed from the joint's Tape (recorded on the first call)."""
        parts = (self.R, self.t, self.S, self.Sdot_qd)
        if self._tape is None or any(a is not b for a, b in zip(self._tape, parts)):
            exprs = [e for M in parts for e in M]              # row by row, as Evaluator.matrix
            self._tape = parts + (Tape(exprs, self.q + self.qd),)
        if len(q_vals) != len(self.q) or len(qd_vals) != len(self.qd):
            raise ValueError(f"{self.type} takes {len(self.q)} coordinates and {len(self.qd)} "
                             f"velocities, not {len(q_vals)} and {len(qd_vals)}")
        values = self._tape[-1].run(alg, list(q_vals) + list(qd_vals))
        d = self.dof
        R, t, S, c = values[:9], values[9:12], values[12:12 + 6 * d], values[12 + 6 * d:]
        return ([R[3 * i:3 * i + 3] for i in range(3)], t,
                [S[d * i:d * i + d] for i in range(6)], c)

    def numeric(self, what, q, qd=None):
        """numpy value of R, t, S, Sdot or G (4x4) at q (and qd): for tests and tools."""
        exprs = {"R": self.R, "t": self.t, "S": self.S, "Sdot": self.Sdot,
                 "G": sp.Matrix(sp.BlockMatrix([[self.R, self.t],
                                                [sp.zeros(1, 3), sp.ones(1, 1)]]))}
        key = what
        qd = np.zeros(self.dof) if qd is None else qd
        if self.light:                  # big DAG-shaped entries: evaluate, do not print them
            if ("tape", key) not in self._lambdas:
                self._lambdas["tape", key] = Tape(list(exprs[what]), self.q + self.qd)
            values = self._lambdas["tape", key].run(_FloatAlgebra, [float(x) for x in (*q, *qd)])
            return np.array(values, dtype=float).reshape(exprs[what].shape)
        if key not in self._lambdas:
            mods = [numeric_namespace(), "numpy"]
            self._lambdas[key] = sp.lambdify(self.q + self.qd, exprs[what], modules=mods)
        return np.array(self._lambdas[key](*q, *qd), dtype=float)


_FloatAlgebra = FloatAlgebra()          # floats, for JointModel.numeric on the light path


def _symbols(nq, nv=None):
    nv = nq if nv is None else nv
    return (sp.symbols(f"q1:{nq + 1}", real=True) if nq else (),
            sp.symbols(f"qd1:{nv + 1}", real=True) if nv else ())


class _Frozen(tuple):
    """A frozen mapping: a tuple of sorted (key, value) pairs that thaws back to a dict (a plain
    tuple of pairs, e.g. a custom joint's [[z, "a"], [x, "b"]], thaws back to a list)."""


def freeze_params(params):
    """A hashable key for joint parameters (the joint-model cache key)."""
    def fz(v):
        if isinstance(v, dict):
            return _Frozen(sorted((k, fz(x)) for k, x in v.items()))
        if isinstance(v, (list, tuple, np.ndarray)):
            return tuple(fz(x) for x in v)
        if isinstance(v, np.generic):
            return v.item()
        return v
    return fz(params)


def _thaw(frozen):
    def th(v):
        if isinstance(v, _Frozen):
            return {k: th(x) for k, x in v}
        if isinstance(v, tuple):
            return [th(x) for x in v]
        return v
    if not frozen:
        return {}
    if isinstance(frozen, tuple) and not isinstance(frozen, _Frozen) and all(
            isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], str) for x in frozen):
        return {k: th(x) for k, x in frozen}        # a key frozen elsewhere as plain pairs
    return th(frozen)


def joint_model(jtype, params=None):
    """The derived JointModel of a joint type with parameters (a dict), cached."""
    frozen = params if isinstance(params, tuple) else freeze_params(params or {})
    return _joint_model_cached(jtype, frozen)


@lru_cache(maxsize=None)
def _joint_model_cached(jtype, frozen):
    """Derive a joint from its declaration (joints.registry): coordinates, Q(q) from the
    transform or the product of the factors, S from a closed form, the factors (product rule) or
    the transform, with the declared simplifiers."""
    p = _thaw(frozen)
    if not isinstance(p, dict):
        p = {}
    jt = joint_type(jtype)
    q, qd = _symbols(jt.nq_of(p), jt.dof_of(p))
    if jtype == "composite":
        return _composite_model(jt, p, q, qd)
    factors = jt.factors(p, q) if jt.factors is not None else None
    R, t = jt.transform(p, q) if jt.transform is not None else product_transform(factors)
    jm = JointModel(jtype, p, tuple(q), tuple(qd), R, t, jt.meanings(p), notes=jt.notes)
    if jt.motion_subspace is not None:
        # a closed-form S; Sdot = sum_k dS/dq_k qd_k, expanded (S&G 12)
        S = jt.motion_subspace(q).applyfunc(sp.expand)
        Sdot = sp.zeros(6, len(qd))
        if len(q) != len(qd):           # a quaternion joint: qd is not dq/dt, and S is constant
            if S.free_symbols & set(q):       # pragma: no cover (a declaration error)
                raise ValueError(f"{jtype}: a joint with nq != nv needs a constant S")
        else:
            for qk, qdk in zip(q, qd):
                Sdot += S.diff(qk) * qdk
        return jm.derive(S, Sdot.applyfunc(sp.expand))
    simplify = jt.simplify(p)
    twist = jt.simplify_twist(p) if jt.simplify_twist is not None else simplify
    return jm.derive(simplify=simplify, factors=factors, simplify_twist=twist)


# ---- composite joints: part by part (Sueda 2.53-2.58) ------------------------------------------
def _composite_model(jt, p, q, qd):
    """A composite joint Q = Q_1 ... Q_m from its parts' own (cached) joint models: each part's
    S and Sdot carried into the child frame through the later parts (symbolic.composite_kinematics),
    never differentiating the product, so deriving it is linear in the number of parts."""
    R, t, S, Sdot = composite_kinematics(_composite_parts(p, q, qd))
    jm = JointModel("composite", p, tuple(q), tuple(qd), R, t, jt.meanings(p), notes=jt.notes)
    memo = {}

    def small(e):
        return simplify_entry(e) if tree_size(e, memo) <= COMPOSITE_SIMPLIFY_MAX_NODES else e
    unit = length_unit(t, q)

    def simplified(M):          # linear rows in the joint's own length unit, as derive does
        return in_length_unit(in_length_unit(M, 1 / unit).applyfunc(small), unit)
    jm.derive(simplified(S), simplified(Sdot), simplify=light_entry)   # Sdot qd as built
    jm.light = max(tree_size(e, memo) for M in (R, t, jm.S, jm.Sdot) for e in M) \
        > COMPOSITE_TREE_MAX_NODES
    return jm


def _composite_parts(p, q, qd):
    """Each part's R, t, S, Sdot (joint_model of the part) in the composite's coordinates."""
    parts, kq, kv = [], 0, 0
    for part in p["parts"]:
        pm = joint_model(part["type"], part.get("params") or {})
        own_q, own_qd = tuple(q[kq:kq + len(pm.q)]), tuple(qd[kv:kv + len(pm.qd)])
        names = dict(zip(pm.q + pm.qd, own_q + own_qd))
        R, t, S, Sdot = (M.xreplace(names) for M in (pm.R, pm.t, pm.S, pm.Sdot))
        parts.append(Part(R, t, S, Sdot, own_qd))
        kq, kv = kq + len(own_q), kv + len(own_qd)
    return parts

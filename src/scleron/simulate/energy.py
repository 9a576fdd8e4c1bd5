"""Energies of recorded states, from the generated functions themselves.

T = ½ Σ_k v_kᵀ J_k v_k from the body twists (S&G pass 1, eqs. 18, 20), equal to
½ q̇ᵀ M(q) q̇;
V = -Σ_k m_k gᵀ c_k (world centres of mass) + ½ Σ k (q - q_rest)² (joint springs, Sueda 2.6).
Both are generated C (functions.FUNCTIONS "kinetic_energy" and "potential_energy"), so the
energy check of a simulation uses the same model as its dynamics.
"""
import numpy as np


def energies(dyn, Q, QD):
    """(T (N,), V (N,)) of N states Q (N, nq), QD (N, nv) of the generated module `dyn`
    (whose charts are those of the states)."""
    Q = np.ascontiguousarray(Q, dtype=float)
    QD = np.ascontiguousarray(QD, dtype=float)
    T = np.asarray(dyn.kinetic_energy(Q, QD), dtype=float).reshape(len(Q))
    V = np.asarray(dyn.potential_energy(Q), dtype=float).reshape(len(Q))
    return T, V

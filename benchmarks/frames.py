"""Frame kinematics against Pinocchio (issue 10): scleron's frame placements, frame Jacobians
(local_world_aligned and local) and centre-of-mass Jacobian against Pinocchio's
forwardKinematics + updateFramePlacements, computeJointJacobians + getFrameJacobian of every
frame, and jacobianCenterOfMass, on every system (the floating solo12 included); and the
centroidal momentum matrix against computeCentroidalMap (not an issue's target).

scleron's side is a folder of its own, generated with only the frame functions
(build/SYSTEM/frames/SYSTEM; the default generation may leave the frame Jacobians out on long
chains, and the main folder's compile time stays that of the default), timed by its own harness
("scleron_frames", harness/scleron_bench.c.in without the dynamics) in the same rounds as the
others. The frames are its frame_names (every body, every URDF link merged by a fixed joint, the
fixed root link), each mapped to Pinocchio's frame of that name (model.getFrameId) and written
into the C++ harness's model file in that order. Before anything is timed, the results are
compared in scleron's layout (row-major, twists [w; v]; Pinocchio's rows are [v; w]): scleron's
Python against Pinocchio's Python at a few states, then both C/C++ harnesses at state 0 against
Pinocchio's Python and against each other. A system that fails any of these is not timed."""
import os
import time

import numpy as np

from .common import FRAME_FUNCS, FRAME_FULL_NAME, PIN_FRAME, log, rel_err
from .harnesses import parse_out, run_harness

ROWS = [3, 4, 5, 0, 1, 2]      # Pinocchio's [v; w] rows in scleron's order [w; v]
TOL = 1e-9
NCHECK = 5                     # states of the Python check
# the functions of the frames folder (naming frame_jacobians brings its _local and _world variants)
GENERATED = ["frame_placements", "frame_jacobians", "com_jacobian", "centroidal_momentum_matrix"]


def pin_reference(S, pq):
    """Pinocchio (Python) at one configuration, in scleron's layout: {function: array}."""
    import pinocchio as pin
    pm, pd = S.pin_model, S.pin_data
    pin.framesForwardKinematics(pm, pd, pq)
    out = {"placements": np.array([pd.oMf[i].homogeneous for i in S.pin_frame_ids])}
    pin.computeJointJacobians(pm, pd, pq)
    for f, rf in [("jacobians", pin.ReferenceFrame.LOCAL_WORLD_ALIGNED), ("jacobians_local", pin.ReferenceFrame.LOCAL)]:
        out[f] = np.array([pin.getFrameJacobian(pm, pd, i, rf)[ROWS] for i in S.pin_frame_ids])
    out["com_jacobian"] = np.array(pin.jacobianCenterOfMass(pm, pd, pq))
    out["centroidal_map"] = np.array(pin.computeCentroidalMap(pm, pd, pq))[ROWS]      # [l; k] -> [k; l]
    return out


def scleron_python(dyn, q):
    return {"placements": dyn.frame_placements(q), "jacobians": dyn.frame_jacobians(q),
            "jacobians_local": dyn.frame_jacobians(q, reference="local"), "com_jacobian": dyn.com_jacobian(q),
            "centroidal_map": dyn.centroidal_momentum_matrix(q)}


def shapes(nf, nv):
    return {"placements": (nf, 4, 4), "jacobians": (nf, 6, nv), "jacobians_local": (nf, 6, nv),
            "com_jacobian": (3, nv), "centroidal_map": (6, nv)}


def from_scleron_harness(out, nf, nv):
    """The scleron C harness's check output (OUT lines) as arrays."""
    return {f: out[f].reshape(shp) for f, shp in shapes(nf, nv).items()}


def from_pin_harness(out, nf, nv):
    """The Pinocchio C++ harness's check output in scleron's layout (Jacobian rows [v; w] -> [w; v])."""
    sh = shapes(nf, nv)
    res = {f: out[PIN_FRAME[f]].reshape(sh[f]) for f in FRAME_FUNCS}
    for f in ("jacobians", "jacobians_local"):
        res[f] = res[f][:, ROWS, :]
    res["centroidal_map"] = res["centroidal_map"][ROWS]
    return res


def errors(a, b):
    return {f: rel_err(a[f], b[f]) for f in FRAME_FUNCS}


def skip(S, entry, why):
    entry["frames"] = {"skipped": why}
    S.notes.append(f"frames not compared: {why}")
    S.frames_ok = False
    return 0


def generate(S, entry):
    """scleron.generate of the frame functions only into build/SYSTEM/frames/SYSTEM (cached by
    scleron): the module; S.frames_folder."""
    import scleron
    folder = os.path.join(S.dir, "frames", S.key)
    t0 = time.perf_counter()
    dyn = scleron.generate(S.model, out_dir=folder, name=S.key, functions=GENERATED)
    entry["frames_generate_wall_s"] = time.perf_counter() - t0
    S.frames_folder = folder
    log(f"{S.key}: scleron generate of the frame functions {time.perf_counter() - t0:.1f} s")
    return dyn


def setup_frames(S, entry):
    """Generates the frames folder, maps its frames into Pinocchio and checks scleron's Python
    against Pinocchio's at NCHECK states; the number of frames the harnesses get (0: frames
    skipped on this system)."""
    S.frames_ok = False
    if S.pin_model is None:
        return skip(S, entry, "no Pinocchio model")
    try:
        dyn = generate(S, entry)
    except Exception as exc:
        return skip(S, entry, f"scleron generate of the frame functions failed: {type(exc).__name__}: {exc}")
    names = list(getattr(dyn, "frame_names", None) or [])
    missing = [FRAME_FULL_NAME[f] for f in FRAME_FUNCS if not hasattr(dyn, FRAME_FULL_NAME[f])]
    if not names or missing:
        return skip(S, entry, "the generated module has no frames" if not names else
                    "the generated module lacks " + ", ".join(missing))
    try:
        S.setup_frames(names)
    except Exception as exc:
        return skip(S, entry, f"{type(exc).__name__}: {exc}")
    errs = {f: 0.0 for f in FRAME_FUNCS}
    for s in range(NCHECK):
        e = errors(scleron_python(dyn, S.q[s]), pin_reference(S, S.pq[s]))
        errs = {f: max(errs[f], e[f]) for f in FRAME_FUNCS}
    S.frames0 = scleron_python(dyn, S.q[0])
    S.frames_ref0 = pin_reference(S, S.pq[0])
    entry["frames"] = {"nframes": len(names), "frame_names": names,
                       "pinocchio_frame_ids": [int(i) for i in S.pin_frame_ids],
                       "verification": {f"scleron (python) vs pinocchio (python), {NCHECK} states": errs}}
    log(f"{S.key}: frames ({len(names)}) scleron vs Pinocchio (python) "
        + " ".join(f"{f} {e:.1e}" for f, e in errs.items()))
    if max(errs.values()) > TOL:
        S.notes.append(f"frames: scleron disagrees with Pinocchio (python, > {TOL:g}): frames not timed")
        return len(names)     # the harness still gets them, so that its check shows the same
    S.frames_ok = True
    return len(names)


def check_harnesses(S, entry, scl_cmd, pin_out):
    """Both harnesses' frame outputs at state 0 (scleron's frames harness run here, Pinocchio's
    check output) against Pinocchio's Python and each other (in scleron's layout); any
    difference above TOL: frames not timed on the system."""
    fr = entry.get("frames") or {}
    if "nframes" not in fr:
        return
    nf, nv = fr["nframes"], S.nv
    ver = fr["verification"]
    try:
        scl = from_scleron_harness(parse_out(run_harness(scl_cmd, ["check"])), nf, nv) if scl_cmd else None
        pin = from_pin_harness(pin_out, nf, nv) if pin_out else None
    except Exception as exc:
        S.notes.append(f"frames: harness check failed ({type(exc).__name__}: {exc}): frames not timed")
        S.frames_ok = False
        return
    if scl is None or pin is None:
        S.notes.append("frames: a harness was not checked: frames not timed")
        S.frames_ok = False
        return
    ver["scleron C harness vs scleron python"] = errors(scl, S.frames0)
    ver["scleron C harness vs pinocchio python"] = errors(scl, S.frames_ref0)
    ver["pinocchio C++ harness vs pinocchio python"] = errors(pin, S.frames_ref0)
    ver["scleron C harness vs pinocchio C++ harness"] = errors(scl, pin)
    worst = max(max(e.values()) for e in ver.values())
    log(f"{S.key}: frames harness checks, worst {worst:.1e}")
    if worst > TOL:
        S.notes.append(f"frames: a harness check exceeds {TOL:g} ({worst:.1e}): frames not timed")
        S.frames_ok = False


def timed(S):
    return bool(getattr(S, "frames_ok", False))

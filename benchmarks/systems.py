"""The benchmark systems (RC-n chains, panda, UR5, a floating quadruped) built identically in
scleron, Pinocchio and MuJoCo, their random states, and the checks that the tools agree."""
import math
import os
import re

import numpy as np

from .common import (FUNCS, NBATCH, NSTATES, ROOT, cmeel_prefix, comma_list, read, rel_err, sha,
                     write_text)

ALL_SYSTEMS = ["rc20", "rc50", "rc100", "panda", "ur5", "solo12"]
QUICK_SYSTEMS = ["rc20", "panda"]
QUADRUPEDS = ["solo_description/robots/solo12.urdf", "solo_description/urdf/solo12.urdf",
              "anymal_b_simple_description/robots/anymal.urdf",
              "anymal_c_simple_description/urdf/anymal.urdf"]
# the floating humanoid (python benchmarks/run.py --systems talos): TALOS without its grippers and
# head, on a free flyer (nq 39, nv 38; the full file's mimic joints Pinocchio refuses)
HUMANOIDS = {"talos": "talos_data/robots/talos_reduced.urdf"}
ROBOT_URDFS = {"panda": "panda_description/urdf/panda.urdf", "ur5": "ur_description/urdf/ur5_robot.urdf"}
# the other fixed-base arms of example-robot-data (python benchmarks/run.py --systems ARMS...)
ARMS = {"ur3": "ur_description/urdf/ur3_robot.urdf", "ur10": "ur_description/urdf/ur10_robot.urdf",
        "xarm7": "xarm_description/urdf/xarm7.urdf", "z1": "z1_description/urdf/z1.urdf",
        "kinova": "kinova_description/robots/kinova.urdf", "so100": "so_arm_description/urdf/so100.urdf",
        "so101": "so_arm_description/urdf/so101.urdf"}
ROBOT_URDFS.update(ARMS)
RC_INERTIA = (1 / 600, 101 / 1200, 101 / 1200)
RX90 = [[1.0, 0, 0], [0, 0, -1], [0, 1, 0]]


def system_kind(key):
    """"rc" (RC-n, n >= 1), "urdf" (a robot of example-robot-data: ROBOT_URDFS), "quadruped"
    (solo12, quadruped), "humanoid" (HUMANOIDS), or None: an unknown name."""
    if re.fullmatch(r"rc[1-9][0-9]*", key):
        return "rc"
    if key in ROBOT_URDFS:
        return "urdf"
    return "quadruped" if key in ("solo12", "quadruped") else "humanoid" if key in HUMANOIDS else None


def known_system(key):
    """comma_list's item check of --systems: a name system_kind knows."""
    if system_kind(key) is None:
        raise ValueError(f"unknown system {key!r} (rcN for any N >= 1, "
                         + ", ".join(list(ROBOT_URDFS) + ["solo12", "quadruped"] + list(HUMANOIDS)) + ")")
    return key


def system_names():
    """The argparse type of --systems."""
    return comma_list(known_system, "system")


def robots_dir():
    """example-robot-data's robots/ folder, or None."""
    pre = cmeel_prefix()
    if pre:
        d = os.path.join(pre, "share", "example-robot-data", "robots")
        if os.path.isdir(d):
            return d
    return None


# ----------------------------------------------------------------------------------------------
# the RC-n chain in each tool (../shared/design/BENCHMARKS.md)


def rc_yaml(n):
    lines = [f"name: rc{n}", "gravity: [0, 0, -9.81]", "bodies:"]
    for i in range(1, n + 1):
        parent = "world" if i == 1 else f"link{i - 1}"
        place = "" if i == 1 else ", xyz: [1, 0, 0], rotation: [[1, 0, 0], [0, 0, -1], [0, 1, 0]]"
        lines += [f"  - name: link{i}", f"    parent: {parent}",
                  f"    joint: {{name: joint{i}, type: revolute, axis: [0, 0, 1]{place}}}",
                  "    mass: 1.0", "    com: [0.5, 0, 0]",
                  "    inertia: [" + ", ".join(repr(x) for x in RC_INERTIA) + "]"]
    return "\n".join(lines) + "\n"


def rc_model_path(n, build_dir):
    """examples/rcN.yaml, or the same chain written under build_dir/models/."""
    ex = os.path.join(ROOT, "examples", f"rc{n}.yaml")
    if os.path.isfile(ex):
        return ex
    path = os.path.join(build_dir, "models", f"rc{n}.yaml")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    text = rc_yaml(n)
    if not os.path.isfile(path) or read(path) != text:
        write_text(path, text)
    return path


def rc_pin(n):
    import pinocchio as pin
    model = pin.Model()
    model.gravity = pin.Motion(np.array([0, 0, -9.81]), np.zeros(3))
    inertia = pin.Inertia(1.0, np.array([0.5, 0, 0]), np.diag(RC_INERTIA))
    parent = 0
    for i in range(1, n + 1):
        X = pin.SE3.Identity() if i == 1 else pin.SE3(np.array(RX90), np.array([1.0, 0, 0]))
        parent = model.addJoint(parent, pin.JointModelRZ(), X, f"joint{i}")
        model.appendBodyToJoint(parent, inertia, pin.SE3.Identity())
        model.addFrame(pin.Frame(f"link{i}", parent, pin.SE3.Identity(), pin.FrameType.BODY))  # scleron's body frame
    return model


def rc_mjcf(n):
    c = math.cos(math.pi / 4)
    out = [f'<mujoco model="rc{n}">', '  <compiler angle="radian" autolimits="true"/>',
           '  <option gravity="0 0 -9.81"/>', "  <worldbody>"]
    for i in range(1, n + 1):
        ind = "  " * (i + 1)
        pos, quat = ("0 0 0", "1 0 0 0") if i == 1 else ("1 0 0", f"{c!r} {c!r} 0 0")
        out += [f'{ind}<body name="link{i}" pos="{pos}" quat="{quat}">',
                f'{ind}  <joint name="joint{i}" type="hinge" axis="0 0 1" damping="0" armature="0"/>',
                f'{ind}  <inertial pos="0.5 0 0" mass="1" diaginertia="'
                + " ".join(repr(x) for x in RC_INERTIA) + '"/>']
    for i in range(n, 0, -1):
        out.append("  " * (i + 1) + "</body>")
    out += ["  </worldbody>", "</mujoco>"]
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------------------------------------
# conversions between the tools


def urdf_for_mujoco(path):
    """The URDF without visual/collision elements (MuJoCo cannot resolve package:// meshes)."""
    import xml.etree.ElementTree as ET
    root = ET.parse(path).getroot()
    for link in root.findall("link"):
        for tag in ("visual", "collision"):
            for e in link.findall(tag):
                link.remove(e)
    for e in root.findall("mujoco"):
        root.remove(e)
    mj = ET.SubElement(root, "mujoco")
    ET.SubElement(mj, "compiler", {"discardvisual": "true", "fusestatic": "true",
                                   "balanceinertia": "false", "inertiafromgeom": "false"})
    return ET.tostring(root, encoding="unicode")


def mj_disable_all(m):
    """Contacts, constraints, limits, passive forces, actuation and sensors off."""
    import mujoco
    bits = 0
    for name in ["mjDSBL_CONSTRAINT", "mjDSBL_EQUALITY", "mjDSBL_FRICTIONLOSS", "mjDSBL_LIMIT",
                 "mjDSBL_CONTACT", "mjDSBL_SPRING", "mjDSBL_DAMPER", "mjDSBL_ACTUATION",
                 "mjDSBL_SENSOR", "mjDSBL_CLAMPCTRL"]:
        bit = getattr(mujoco.mjtDisableBit, name, None)
        if bit is not None:
            bits |= int(bit)
    m.opt.disableflags = m.opt.disableflags | bits
    m.opt.enableflags = 0


def pin_short(jm):
    return jm.shortname().replace("JointModel", "")


def export_pin_model(model, path, frame_ids=()):
    """The Pinocchio model joint by joint (type, parent, placement, axis, inertia), then the frames
    frame_ids (name, parent joint, placement), for the C++ harness to rebuild it
    (harness/pin_bench.cpp)."""
    lines = [str(model.njoints - 1)]
    for j in range(1, model.njoints):
        jm = model.joints[j]
        t = pin_short(jm)
        axis = np.zeros(3)
        if "Unaligned" in t:
            axis = np.asarray(jm.extract().axis, dtype=float)
        X = model.jointPlacements[j]
        I = model.inertias[j]
        Ic = np.asarray(I.inertia)
        vals = list(np.asarray(X.rotation).ravel()) + list(np.asarray(X.translation)) + list(axis) \
            + [I.mass] + list(np.asarray(I.lever)) \
            + [Ic[0, 0], Ic[0, 1], Ic[1, 1], Ic[0, 2], Ic[1, 2], Ic[2, 2]]
        lines.append(f"{t} {model.parents[j]} " + " ".join(repr(float(v)) for v in vals))
    if frame_ids:
        lines.append(str(len(frame_ids)))
        for fid in frame_ids:
            f = model.frames[fid]
            if not f.name or any(ch.isspace() for ch in f.name):
                raise RuntimeError(f"frame name {f.name!r} cannot be written to the C++ model file")
            X = f.placement
            vals = list(np.asarray(X.rotation).ravel()) + list(np.asarray(X.translation))
            lines.append(f"{f.name} {f.parentJoint} " + " ".join(repr(float(v)) for v in vals))
    write_text(path, "\n".join(lines) + "\n")


def pin_q_from_ours(pmodel, q):
    """Our coordinates -> Pinocchio's: continuous joints become (cos, sin); the free-flyer's seven
    (position, quaternion x, y, z, w) are the same in both."""
    out, k = [], 0
    for j in range(1, pmodel.njoints):
        jm = pmodel.joints[j]
        t = pin_short(jm)
        if t.startswith("RUB"):
            out += [math.cos(q[k]), math.sin(q[k])]
            k += 1
        else:
            out += list(q[k:k + jm.nq])
            k += jm.nq
    return np.array(out)


def mujoco_joint_map(m, pm):
    """For each MuJoCo joint, how its qpos comes from Pinocchio's q ("free", "rub" = angle from
    (cos, sin), "copy") and where, and the MuJoCo order of Pinocchio's velocity coordinates.
    Joints are matched by name; the free joint is the free flyer."""
    import mujoco
    pin_names = list(pm.names)
    qmap, vmap = [], []
    for jj in range(m.njnt):
        jt = int(m.jnt_type[jj])
        name = m.joint(jj).name
        if jt == int(mujoco.mjtJoint.mjJNT_FREE):
            pj = next(j for j in range(1, pm.njoints) if pin_short(pm.joints[j]) == "FreeFlyer")
        else:
            if name not in pin_names:
                raise RuntimeError(f"MuJoCo joint {name!r} not in the Pinocchio model")
            pj = pin_names.index(name)
        jm = pm.joints[pj]
        iq, iv = jm.idx_q, jm.idx_v
        if jt == int(mujoco.mjtJoint.mjJNT_FREE):
            qmap.append(("free", iq))
            vmap += list(range(iv, iv + 6))
        elif pin_short(jm).startswith("RUB"):
            qmap.append(("rub", iq))
            vmap.append(iv)
        else:
            qmap.append(("copy", iq))
            vmap.append(iv)
    if len(vmap) != pm.nv or m.nv != pm.nv:
        raise RuntimeError(f"MuJoCo has nv = {m.nv}, Pinocchio {pm.nv}")
    return qmap, np.array(vmap)


def write_states(path, q, v, u):
    """The harnesses' state file: int32 (count, nq, nv), then q, v, u as float64 rows."""
    q, v, u = (np.ascontiguousarray(x, dtype=np.float64) for x in (q, v, u))
    with open(path, "wb") as fh:
        fh.write(np.array([q.shape[0], q.shape[1], v.shape[1]], dtype=np.int32).tobytes())
        fh.write(q.tobytes())
        fh.write(v.tobytes())
        fh.write(u.tobytes())


def locate_system(key, build_dir):
    """(kind "rc" or "urdf", n or None, model file, label, floating) of a system name."""
    kind = system_kind(key)
    if kind is None:
        raise RuntimeError(f"unknown system {key}")
    if kind == "rc":
        n = int(key[2:])
        return "rc", n, rc_model_path(n, build_dir), f"RC{n}", False
    robots = robots_dir()
    if robots is None:
        raise RuntimeError("example-robot-data not found (pip install example-robot-data)")
    floating = kind in ("quadruped", "humanoid")
    if kind == "urdf":
        rel = ROBOT_URDFS[key]
    elif kind == "humanoid":
        rel = HUMANOIDS[key]
    else:
        rel = next((r for r in QUADRUPEDS if os.path.isfile(os.path.join(robots, r))), None)
        if rel is None:
            raise RuntimeError("no quadruped URDF found in example-robot-data")
    label = os.path.splitext(os.path.basename(rel))[0] + (" (floating)" if floating else "")
    return "urdf", None, os.path.join(robots, rel), label, floating


def random_coordinates(rng, count, nq, floating):
    """Joint angles in [-pi, pi]; a free-flyer's position in [-1, 1]^3 and a random unit
    quaternion (x, y, z, w): scleron's free_flyer and Pinocchio's JointModelFreeFlyer share this
    layout."""
    q = rng.uniform(-math.pi, math.pi, (count, nq))
    if floating:
        q[:, :3] = rng.uniform(-1, 1, (count, 3))
        quat = rng.normal(size=(count, 4))
        q[:, 3:7] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    return q


# ----------------------------------------------------------------------------------------------
# one system in the three tools


class System:
    """One benchmark system in the three tools, with its random states: NSTATES for the
    single-state timings (q, v, u) and NBATCH for the batches (qb, vb, ub)."""

    def __init__(self, key, build_dir):
        self.key = key
        self.dir = os.path.join(build_dir, key)
        os.makedirs(self.dir, exist_ok=True)
        self.notes = []
        self.verification = {}
        self.pin_model = None
        self.mj_model = None
        self.mj_note = None
        self.kind, n, self.source, self.label, self.floating = locate_system(key, build_dir)
        if n is not None:
            self.n = n
        import scleron
        self.model = scleron.load_model(self.source, floating=self.floating) if self.floating \
            else scleron.load_model(self.source)
        self.name = key
        self.nv = self.model.nv
        self._make_states()

    def _make_states(self):
        rng = np.random.default_rng(int(sha(self.key), 16) % (2 ** 32))
        self.q = random_coordinates(rng, NSTATES, self.model.nq, self.floating)
        self.v = rng.uniform(-1, 1, (NSTATES, self.nv))
        self.u = rng.uniform(-1, 1, (NSTATES, self.nv))
        self.qb = random_coordinates(rng, NBATCH, self.model.nq, self.floating)
        self.vb = rng.uniform(-1, 1, (NBATCH, self.nv))
        self.ub = rng.uniform(-1, 1, (NBATCH, self.nv))
        self.states_path = os.path.join(self.dir, "states.bin")
        write_states(self.states_path, self.q, self.v, self.u)

    # -- Pinocchio ------------------------------------------------------------------------------
    def setup_pin(self):
        import pinocchio as pin
        if self.kind == "rc":
            self.pin_model = rc_pin(self.n)
        elif self.floating:
            self.pin_model = pin.buildModelFromUrdf(self.source, pin.JointModelFreeFlyer())
        else:
            self.pin_model = pin.buildModelFromUrdf(self.source)
        pm = self.pin_model
        self.pin_data = pm.createData()
        if pm.nv != self.nv:
            raise RuntimeError(f"Pinocchio has nv = {pm.nv}, scleron {self.nv}")
        self.pq = np.array([pin_q_from_ours(pm, q) for q in self.q])
        self.pqb = np.array([pin_q_from_ours(pm, q) for q in self.qb])
        self.pin_states_path = os.path.join(self.dir, "pin_states.bin")
        write_states(self.pin_states_path, self.pq, self.v, self.u)
        self.pin_model_path = os.path.join(self.dir, "pin_model.txt")
        export_pin_model(pm, self.pin_model_path)

    def setup_frames(self, names):
        """Pinocchio's frame of each of scleron's frames (model.getFrameId(name), in scleron's
        order), written into the C++ harness's model file; RuntimeError naming a frame not found."""
        pm = self.pin_model
        ids = []
        for name in names:
            fid = pm.getFrameId(name)
            if fid >= len(pm.frames):
                raise RuntimeError(f"frame {name!r} not in the Pinocchio model")
            ids.append(fid)
        self.frame_names, self.pin_frame_ids = list(names), ids
        export_pin_model(pm, self.pin_model_path, ids)

    def pin_eval(self, q, v, u):
        """Pinocchio's aba, rnea, crba (made symmetric) and nonLinearEffects at one state."""
        import pinocchio as pin
        pm, pd = self.pin_model, self.pin_data
        fd = pin.aba(pm, pd, q, v, u).copy()
        tau = pin.rnea(pm, pd, q, v, u).copy()
        M = pin.crba(pm, pd, q).copy()
        M = np.triu(M) + np.triu(M, 1).T
        h = pin.nonLinearEffects(pm, pd, q, v).copy()
        return {"fd": fd, "id": tau, "M": M, "h": h}

    # -- MuJoCo ---------------------------------------------------------------------------------
    def _load_mujoco(self):
        """The MuJoCo model: the RC chain's MJCF, or the stripped URDF (a free joint added)."""
        import mujoco
        if self.kind == "rc":
            xml = rc_mjcf(self.n)
            write_text(os.path.join(self.dir, "model.xml"), xml)
            return mujoco.MjModel.from_xml_string(xml)
        xml = urdf_for_mujoco(self.source)
        write_text(os.path.join(self.dir, "model_for_mujoco.urdf"), xml)
        if self.floating:
            spec = mujoco.MjSpec.from_string(xml)
            spec.worldbody.first_body().add_freejoint()
            return spec.compile()
        return mujoco.MjModel.from_xml_string(xml)

    def setup_mujoco(self):
        import mujoco
        m = self._load_mujoco()
        mj_disable_all(m)
        self.mj_model = m
        self.mj_data = mujoco.MjData(m)
        self.mj_qmap, self.mj_vmap = mujoco_joint_map(m, self.pin_model)
        self.mq = np.array([self.mj_q_from_pin(q) for q in self.pq])
        self.mv = self.v[:, self.mj_vmap]
        self.mu = self.u[:, self.mj_vmap]
        self.mj_states_path = os.path.join(self.dir, "mj_states.bin")
        write_states(self.mj_states_path, self.mq, self.mv, self.mu)
        self.mjb_path = os.path.join(self.dir, "model.mjb")
        mujoco.mj_saveModel(m, self.mjb_path, None)

    def mj_q_from_pin(self, pq):
        out = []
        for how, iq in self.mj_qmap:
            if how == "free":
                x, y, z, w = pq[iq + 3:iq + 7]
                out += list(pq[iq:iq + 3]) + [w, x, y, z]
            elif how == "rub":
                out.append(math.atan2(pq[iq + 1], pq[iq]))
            else:
                out.append(pq[iq])
        return np.array(out)

    def mj_eval(self, mq, mv, mu):
        """MuJoCo's qacc, bias, full M (mj_forward) and qfrc_inverse (mj_inverse) at one state."""
        import mujoco
        m, d = self.mj_model, self.mj_data
        d.qpos[:], d.qvel[:], d.qfrc_applied[:] = mq, mv, mu
        mujoco.mj_forward(m, d)
        fd = d.qacc.copy()
        h = d.qfrc_bias.copy()
        M = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, d, M)
        d.qacc[:] = mu
        mujoco.mj_inverse(m, d)
        return {"fd": fd, "id": d.qfrc_inverse.copy(), "M": M, "h": h}

    # -- checks ---------------------------------------------------------------------------------
    def verify_mujoco(self):
        """MuJoCo's M and bias against Pinocchio's crba and nle (and aba, rnea) at a random state.
        A free joint's velocity means something else in each tool, so at that state the base
        orientation is the identity and the base velocity zero, where they coincide."""
        pq, v, u = self.pq[0].copy(), self.v[0].copy(), self.u[0].copy()
        for j in range(1, self.pin_model.njoints):
            jm = self.pin_model.joints[j]
            if pin_short(jm) == "FreeFlyer":
                pq[jm.idx_q + 3:jm.idx_q + 7] = [0, 0, 0, 1]
                v[jm.idx_v:jm.idx_v + 6] = 0
        ref = self.pin_eval(pq, v, u)
        got = self.mj_eval(self.mj_q_from_pin(pq), v[self.mj_vmap], u[self.mj_vmap])
        P = self.mj_vmap
        errs = {"M": rel_err(got["M"], ref["M"][np.ix_(P, P)]), "h": rel_err(got["h"], ref["h"][P]),
                "fd": rel_err(got["fd"], ref["fd"][P]), "id": rel_err(got["id"], ref["id"][P])}
        self.verification["mujoco vs pinocchio (python)"] = errs
        ok = errs["M"] <= 1e-9 and errs["h"] <= 1e-9
        return ok, errs

    def verify_scleron_vs_pin(self, dyn):
        """The generated module at state 0 (returned) against Pinocchio (the floating robot too:
        scleron's free_flyer has Pinocchio's q and v)."""
        ours = {"fd": dyn.forward_dynamics(self.q[0], self.v[0], self.u[0]),
                "id": dyn.inverse_dynamics(self.q[0], self.v[0], self.u[0]),
                "M": dyn.mass_matrix(self.q[0]), "h": dyn.bias_forces(self.q[0], self.v[0])}
        ref = self.pin_eval(self.pq[0], self.v[0], self.u[0])
        self.verification["scleron vs pinocchio (python)"] = {f: rel_err(ours[f], ref[f]) for f in FUNCS}
        return ours
